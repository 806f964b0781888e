"""This host and its processes, named so that another process can recognise them later.

Standard library only, and only ``os`` at import (the local supervisor imports this). The
names are Linux-specific (``/proc``); elsewhere they carry what can be read and
:func:`process_gone` answers ``None`` (cannot tell).
"""

from __future__ import annotations

import os

__all__ = ["BOOT_ID_FILE", "host_placement", "process_gone", "process_ident", "process_start"]

BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
"""The kernel's id of the current boot (Linux): it changes when the host reboots."""


def host_placement() -> str:
    """Returns ``host:<hostname>/<boot id>``: this host, in this boot.

    No PID-namespace part: a container restarted on the same host (same hostname, same boot)
    keeps it. Without a boot id (not Linux) the part after ``/`` is empty.
    """
    import socket  # lazy: the local supervisor imports this module and starts without it

    try:
        with open(BOOT_ID_FILE) as f:
            boot_id = f.read().strip()
    except OSError:
        boot_id = ""
    return f"host:{socket.gethostname()}/{boot_id}"


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot); None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):  # exited, not reaped yet
        return None
    return int(fields[19])


def process_ident(pid: int | None = None) -> str:
    """``<host placement>|<pid>|<start>`` of process ``pid`` (default: this one)."""
    pid = os.getpid() if pid is None else pid
    start = process_start(pid)
    return f"{host_placement()}|{pid}|{'' if start is None else start}"


def process_gone(ident: str) -> bool | None:
    """Whether the process :func:`process_ident` named has ended.

    Returns:
        True if it ran on this host in this boot and no longer runs (its pid is free, or
        taken by a later process), False if it still runs, None if this process cannot tell
        (another host, another boot, no ``/proc``, or a malformed ident).
    """
    host, _, rest = ident.partition("|")
    pid, _, start = rest.partition("|")
    if not (host and pid.isdigit() and start.isdigit()) or host.endswith("/"):
        return None
    if host != host_placement() or not os.path.isdir("/proc/self"):
        return None
    return process_start(int(pid)) != int(start)
