"""Rewrites a KFP Python component so that Python, not a shell, is the container's PID 1.

Used by every Python component the adapter generates (the launcher, the lifted and workflow
step components); public as :func:`torchx_kfp.launcher.exec_into_python`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kfp.dsl.python_component import PythonComponent

__all__ = ["exec_into_python"]

_EXECUTOR = "python3 -m kfp.dsl.executor_main"


def exec_into_python(component: PythonComponent) -> PythonComponent:
    """Makes the component's shell ``exec`` the interpreter (and the pip step ``exec`` on).

    KFP runs a Python component as ``sh -ec '...; python3 -m kfp.dsl.executor_main ...'``
    (behind ``sh -c 'pip install ... && "$0" "$@"'`` when it installs packages). A shell as
    the container's PID 1 neither forwards SIGTERM nor dies of it, so the launcher would never
    see the kubelet's SIGTERM; with ``exec`` every shell is replaced and Python is PID 1.

    Raises:
        RuntimeError: KFP's command no longer has the shape this rewrite expects.
    """
    container = component.component_spec.implementation.container
    command = list(container.command or [])
    found = [k for k, part in enumerate(command) if isinstance(part, str) and _EXECUTOR in part]
    if len(found) != 1:
        raise RuntimeError(f"unexpected KFP Python component command {command!r}")
    for k, part in enumerate(command):
        if not isinstance(part, str):
            continue
        part = part.replace(
            f"_KFP_RUNTIME=true {_EXECUTOR}", f"export _KFP_RUNTIME=true; exec {_EXECUTOR}"
        )
        command[k] = part.replace('&& "$0" "$@"', '&& exec "$0" "$@"')
    if "exec python3" not in command[found[0]]:
        raise RuntimeError(f"unexpected KFP Python component command {command!r}")
    container.command = command
    return component
