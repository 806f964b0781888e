"""Private implementation of the ``local_cwd`` scheduler (launcher helpers and the supervisor).

This package imports nothing on purpose: ``python -m torchx.schedulers._local.supervisor`` must
start fast, so the supervisor and ``_protocol`` use only the standard library.
"""

__all__: list[str] = []
