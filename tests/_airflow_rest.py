"""Airflow 3.3's REST API (/api/v2) as the stack tests and bench drive it (simple auth manager)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["Api"]


class Api:
    """Airflow 3.3's REST API (/api/v2) with a simple-auth-manager token."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.token = ""
        self.token = self.call("GET", "/auth/token")["access_token"]

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One request; returns the decoded JSON answer."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data, headers, method=method)
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read() or b"null")

    def wait_parsed(self, dag_ids: tuple[str, ...], timeout: float = 300) -> None:
        """Waits until the dag-processor has parsed every DAG of ``dag_ids``."""
        deadline = time.monotonic() + timeout
        missing = set(dag_ids)
        while missing and time.monotonic() < deadline:
            found = self.call("GET", "/api/v2/dags?limit=100")["dags"]
            missing -= {d["dag_id"] for d in found}
            time.sleep(2)
        if missing:
            errors = self.call("GET", "/api/v2/importErrors")
            raise AssertionError(f"DAGs not parsed: {sorted(missing)}; import errors: {errors}")

    def trigger(self, dag_id: str, conf: dict[str, Any]) -> str:
        """Unpauses ``dag_id`` and starts a run; returns its run id."""
        self.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
        run = self.call(
            "POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf}
        )
        return str(run["dag_run_id"])

    def run_state(self, dag_id: str, run_id: str) -> str:
        """The state of a DAG run."""
        quoted = urllib.parse.quote(run_id)
        return str(self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{quoted}")["state"])

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 600) -> str:
        """Waits for a run to end; returns its final state (or the last one seen)."""
        deadline = time.monotonic() + timeout
        state = self.run_state(dag_id, run_id)
        while state not in ("success", "failed") and time.monotonic() < deadline:
            time.sleep(1)  # the api-server's CPU: every poll of every waiting test costs some
            state = self.run_state(dag_id, run_id)
        return state

    def tasks(self, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
        """The run's task instances by task id."""
        quoted = urllib.parse.quote(run_id)
        found = self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{quoted}/taskInstances")
        return {ti["task_id"]: ti for ti in found["task_instances"]}

    def wait_task(
        self, dag_id: str, run_id: str, task_id: str, ok: Any, timeout: float = 300
    ) -> Any:
        """Polls a task instance until ``ok(ti)``; returns it."""
        deadline = time.monotonic() + timeout
        ti: dict[str, Any] = {}
        while time.monotonic() < deadline:
            ti = self.tasks(dag_id, run_id).get(task_id, {})
            if ti and ok(ti):
                return ti
            time.sleep(1)
        raise AssertionError(f"{dag_id}/{task_id} never got there; last seen: {ti}")

    def log(self, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
        """The task log of one try, as text."""
        quoted = urllib.parse.quote(run_id)
        path = (
            f"/api/v2/dags/{dag_id}/dagRuns/{quoted}/taskInstances/{task_id}"
            f"/logs/{try_number}?full_content=true"
        )
        try:
            content = self.call("GET", path)["content"]
        except urllib.error.HTTPError as e:
            return f"(no log: {e})"
        return "\n".join(str(line.get("event", "")) for line in content)

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        """One XCom value of a task instance."""
        quoted = urllib.parse.quote(run_id)
        path = f"/api/v2/dags/{dag_id}/dagRuns/{quoted}/taskInstances/{task_id}/xcomEntries/{key}"
        return self.call("GET", path)["value"]

    def clear(self, dag_id: str, run_id: str, task_id: str) -> None:
        """Clears one task instance of a run (not its downstream tasks): it runs again."""
        body = {
            "dry_run": False,
            "task_ids": [task_id],
            "dag_run_id": run_id,
            "only_failed": False,
            "include_downstream": False,
            "reset_dag_runs": True,
        }
        self.call("POST", f"/api/v2/dags/{dag_id}/clearTaskInstances", body)
