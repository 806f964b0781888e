"""The ``torchx`` command line (``torchx = torchx.cli.main:main``).

Sub-commands live in ``torchx.cli.cmd_<name>`` modules; :mod:`torchx.cli.main` imports them
lazily, so ``torchx --help`` stays fast. Plugin packages add or override sub-commands through
the ``torchx.cli.cmds`` entry-point group (``name = module:SubCommandClass``).
"""

__all__: list[str] = []
