"""The small apps the scheduler conformance suite runs (private to ``torchx.testing``).

Each app is a ``sh -c`` script, so it runs on ``local_cwd`` (the image is ignored), in a
busybox or Debian image, and in a Kubernetes pod. Each role also carries a description of the
same behaviour under ``metadata["torchx.testing"]`` (per replica: output lines, exit code,
seconds to run, failing first attempts), which :class:`torchx.testing.FakeScheduler` plays
back instead of running anything.
"""

from __future__ import annotations

from typing import Any

from torchx.specs.api import AppDef, Resource, Role, macros

__all__ = ["APP_KINDS", "BEHAVIOUR_KEY", "make_app"]

BEHAVIOUR_KEY = "torchx.testing"
APP_KINDS = ("echo", "sleep", "fail", "retry", "tail")
_RESOURCE = Resource(cpu=1, gpu=0, memMB=256)


def _replica(
    stdout: list[str] | None = None,
    stderr: list[str] | None = None,
    exit_code: int = 0,
    seconds: float = 0.0,
    fail_first: int = 0,
) -> dict[str, Any]:
    return {
        "stdout": stdout or [],
        "stderr": stderr or [],
        "exit_code": exit_code,
        "seconds": seconds,
        "fail_first": fail_first,
    }


def _role(name: str, image: str, script: str, replicas: list[dict[str, Any]], **kw: Any) -> Role:
    return Role(
        name=name,
        image=image,
        entrypoint="sh",
        args=["-c", script],
        num_replicas=len(replicas),
        resource=_RESOURCE,
        metadata={BEHAVIOUR_KEY: replicas},
        **kw,
    )


def make_app(kind: str, image: str, name: str = "") -> AppDef:
    """Returns the suite's app of the given kind, running in ``image``.

    Kinds:
        ``echo``: 2 replicas print ``hello {replica_id}`` to stdout and ``oops {replica_id}``
            to stderr, then exit 0.
        ``sleep``: 2 replicas sleep 300 s (for cancel and status tests).
        ``fail``: replica 0 exits 3 at once, replica 1 sleeps 300 s (fail-fast).
        ``retry``: 1 replica fails its first attempt and succeeds on the second
            (``max_retries=1``).
        ``tail``: 1 replica prints ``line 1``, sleeps 2 s, prints ``line 2`` and exits 0.

    Args:
        kind: one of :data:`APP_KINDS`.
        image: the image every role runs in.
        name: the app name (default ``"tx-{kind}"``).

    Raises:
        ValueError: an unknown kind.
    """
    rid = macros.replica_id
    app_name = name or f"tx-{kind}"
    if kind == "echo":
        replicas = [_replica([f"hello {i}"], [f"oops {i}"]) for i in range(2)]
        role = _role("echo", image, f"echo hello {rid}; echo oops {rid} >&2", replicas)
    elif kind == "sleep":
        role = _role("sleep", image, "sleep 300", [_replica(seconds=300)] * 2)
    elif kind == "fail":
        script = f'if [ "{rid}" = 0 ]; then echo failing; exit 3; fi; sleep 300'
        replicas = [_replica(["failing"], exit_code=3), _replica(seconds=300)]
        role = _role("fail", image, script, replicas)
    elif kind == "retry":
        marker = f"/tmp/torchx-testing-retry-{macros.app_id}-{rid}"
        script = (
            f"if [ -f {marker} ]; then rm -f {marker}; echo second; exit 0; fi;"
            f" touch {marker}; echo first; exit 1"
        )
        replicas = [_replica(["first", "second"], fail_first=1)]
        role = _role("retry", image, script, replicas, max_retries=1)
    elif kind == "tail":
        replicas = [_replica(["line 1", "line 2"], seconds=2)]
        role = _role("tail", image, "echo line 1; sleep 2; echo line 2", replicas)
    else:
        raise ValueError(f"unknown test app kind `{kind}`; use one of {', '.join(APP_KINDS)}")
    return AppDef(name=app_name, roles=[role])
