"""Process-tree and host helpers of the local supervisor (stdlib only)."""

from __future__ import annotations

import os

__all__ = ["BOOT_ID_FILE", "children", "host_placement"]

BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
"""The kernel's id of the current boot (Linux): it changes when the host reboots."""


def host_placement() -> str:
    """Returns ``host:<hostname>/<boot id>``: where this process's ``local_cwd`` apps live.

    No PID-namespace part: a container restarted on the same host (same hostname, same boot)
    keeps it, and its apps' supervisors are still there to find. Without a boot id (not
    Linux) the part after ``/`` is empty.
    """
    import socket

    try:
        with open(BOOT_ID_FILE) as f:
            boot_id = f.read().strip()
    except OSError:
        boot_id = ""
    return f"host:{socket.gethostname()}/{boot_id}"


def children(pid: int) -> list[int]:
    """Return the pids of ``pid``'s direct children (from /proc)."""
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids.extend(int(p) for p in f.read().split())
    except OSError:
        return _children_by_scan(pid)
    return kids


def _children_by_scan(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return kids
