import json
from datetime import datetime

import pytest
import yaml

from torchx.specs import api
from torchx.specs.api import (
    NONE,
    AppState,
    AppStatus,
    AppStatusError,
    ReplicaState,
    ReplicaStatus,
    RoleStatus,
    is_started,
    is_terminal,
)


def test_app_state_str_repr_and_alias() -> None:
    assert [s.value for s in AppState] == list(range(8))
    assert str(AppState.RUNNING) == "RUNNING"
    assert repr(AppState.FAILED) == "FAILED (5)"
    assert ReplicaState is AppState


def test_terminal_and_started() -> None:
    assert api._TERMINAL_STATES == [AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED]
    assert [s for s in AppState if is_terminal(s)] == api._TERMINAL_STATES
    assert [s.name for s in AppState if is_started(s)] == [
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "CANCELLED",
    ]
    assert AppStatus(AppState.CANCELLED).is_terminal()
    assert not AppStatus(AppState.PENDING).is_terminal()


def test_replica_status_hostaddr_defaults_to_hostname() -> None:
    assert ReplicaStatus(0, AppState.RUNNING, "r", "host").hostaddr == "host"
    assert ReplicaStatus(0, AppState.RUNNING, "r", "host", hostaddr="1.2.3.4").hostaddr == "1.2.3.4"
    assert ReplicaStatus(0, AppState.RUNNING, "r", "h").structured_error_msg == NONE


def _status(**kwargs: object) -> AppStatus:
    replicas = [
        ReplicaStatus(1, AppState.FAILED, "trainer", "h1"),
        ReplicaStatus(0, AppState.RUNNING, "trainer", "h0"),
    ]
    roles = [
        RoleStatus("trainer", replicas),
        RoleStatus("ps", [ReplicaStatus(0, AppState.CANCELLED, "ps", "p")]),
    ]
    return AppStatus(AppState.RUNNING, roles=roles, **kwargs)  # type: ignore[arg-type]


def test_format_without_structured_errors() -> None:
    status = _status(msg="hello", ui_url="file:///x")
    assert status.format() == (
        "AppStatus:\n"
        "    State: RUNNING\n"
        "    Num Restarts: 0\n"
        "    Roles: \n"
        " *trainer[0]:RUNNING\n"
        "  trainer[1]:FAILED (no reply file)\n"
        " *ps[0]:CANCELLED (no reply file)\n"
        "    Msg: hello\n"
        "    Structured Error Msg: <NONE>\n"
        "    UI URL: file:///x\n"
        "    "
    )
    assert "ps[0]" not in status.format(filter_roles=["trainer"])


def test_format_empty_roles() -> None:
    assert (
        AppStatus(AppState.SUCCEEDED)
        .format()
        .startswith(
            "AppStatus:\n    State: SUCCEEDED\n    Num Restarts: 0\n    Roles: \n    Msg: \n"
        )
    )


def _failed_replica(error: dict[str, object] | str) -> str:
    msg = error if isinstance(error, str) else json.dumps(error)
    replica = ReplicaStatus(0, AppState.FAILED, "r", "host0", structured_error_msg=msg)
    text = AppStatus(AppState.FAILED, roles=[RoleStatus("r", [replica])]).format()
    return text.split("    Roles: \n *r[0]:")[1].split("\n    Msg:")[0]


def test_format_torchelastic_nested_error() -> None:
    ts = 1700000000
    data = _failed_replica(
        {
            "message": {
                "message": "boom\nException: x",
                "errorCode": 1,
                "extraInfo": {"timestamp": str(ts)},
            }
        }
    )
    assert data == (
        "FAILED (exitcode: 1)\n"
        f"        timestamp: {datetime.fromtimestamp(ts)}\n"
        "        hostname: host0\n"
        "        error_msg: boom"
    )


def test_format_flat_error_with_missing_values() -> None:
    data = _failed_replica({"message": "flat error"})
    assert data == (
        "FAILED (exitcode: <N/A>)\n"
        "        timestamp: <N/A>\n"
        "        hostname: host0\n"
        "        error_msg: flat error"
    )


def test_format_rpc_error_is_trimmed() -> None:
    msg = "RuntimeError('On WorkerInfo(id=1, name=w):\nValueError: bad')\ntrailing"
    data = _failed_replica({"message": msg, "errorCode": 2, "timestamp": 0})
    assert data.endswith(
        "error_msg: On WorkerInfo(id=1, name=w):\n                   ValueError: bad"
    )


def test_format_unknown_schema_and_non_json_verbatim() -> None:
    assert _failed_replica("not json") == "not json"
    assert _failed_replica({"other": 1}) == '{"other": 1}'


def test_format_error_message_wraps() -> None:
    msg = " ".join(["word"] * 30)
    out = AppStatus._format_error_message(msg, header="    error_msg: ", width=40)
    lines = out.split("\n")
    assert lines[0].startswith("    error_msg: word")
    assert all(len(line) <= 40 for line in lines)
    assert all(line.startswith(" " * 15) for line in lines[1:])
    assert " ".join(out.replace("    error_msg: ", "").split()) == msg


def test_to_json() -> None:
    status = _status(num_restarts=2, structured_error_msg="{}")
    data = status.to_json()
    assert data["state"] == "RUNNING" and data["num_restarts"] == 2 and data["url"] is None
    assert data["roles"][0] == {
        "role": "trainer",
        "replicas": [
            {
                "id": 1,
                "state": AppState.FAILED,
                "role": "trainer",
                "hostname": "h1",
                "structured_error_msg": NONE,
                "hostaddr": "h1",
            },
            {
                "id": 0,
                "state": AppState.RUNNING,
                "role": "trainer",
                "hostname": "h0",
                "structured_error_msg": NONE,
                "hostaddr": "h0",
            },
        ],
    }
    dumped = json.loads(json.dumps(status.to_json(filter_roles=["ps"])))
    assert dumped["state"] == "RUNNING"
    assert [r["role"] for r in dumped["roles"]] == ["ps"]
    assert dumped["roles"][0]["replicas"][0]["state"] == 6


def test_raise_for_status() -> None:
    AppStatus(AppState.SUCCEEDED).raise_for_status()
    status = AppStatus(AppState.FAILED, msg="oops")
    with pytest.raises(AppStatusError, match="^job did not succeed: ") as exc:
        status.raise_for_status()
    assert exc.value.status is status


def test_repr_is_yaml() -> None:
    status = _status(structured_error_msg=json.dumps({"message": "m"}))
    loaded = yaml.safe_load(repr(status))["AppStatus"]
    assert loaded["state"] == "RUNNING (3)"
    assert loaded["structured_error_msg"] == {"message": "m"}
    assert loaded["roles"][0]["replicas"][0]["state"] == "FAILED (5)"
    assert (
        yaml.safe_load(repr(AppStatus(AppState.PENDING)))["AppStatus"]["structured_error_msg"]
        == NONE
    )
