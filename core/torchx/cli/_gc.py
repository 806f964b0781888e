"""The cyclic garbage collector paused while ``torchx run`` starts (private).

A ``torchx run`` start imports ~200 modules and builds the app: the collector runs many
times meanwhile and finds next to nothing (imports make few cycles), a few milliseconds of a
start. :func:`pause` stops it from the command's start; :func:`resume` restarts it once the
app is submitted, before the (possibly hours long) wait. Reference counting frees memory as
usual in between. Nothing happens unless :func:`pause` paused it (a library caller's own
setting is left alone).
"""

from __future__ import annotations

import gc

__all__ = ["pause", "resume"]

_paused = False


def pause() -> None:
    """Disables the collector if it is enabled; :func:`resume` enables it again."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Enables the collector again if :func:`pause` disabled it."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
