"""``prestarted_supervisor`` without the ``local_cwd`` scheduler's imports.

The block of :func:`torchx.schedulers.local_scheduler.prestarted_supervisor`, from a module that
imports only what starting the supervisor takes (about 1 ms, against 8-15 ms for the
scheduler module here; ``bench/bench_launch.py``). ``torchx run -s local_cwd`` opens it before
it imports the scheduler, so the supervisor's interpreter start overlaps those imports too.

Example::

    from torchx.schedulers.local_prestart import prestarted_supervisor

    with prestarted_supervisor():
        ...  # load the component, dry-run, then schedule on local_cwd
"""

from __future__ import annotations

from torchx.schedulers._local._spare import prestarted_supervisor

__all__ = ["prestarted_supervisor"]
