"""Process-tree and host helpers of the local supervisor (stdlib only)."""

from __future__ import annotations

import os

from torchx.util.host import BOOT_ID_FILE, host_placement

__all__ = ["BOOT_ID_FILE", "children", "host_placement"]


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
