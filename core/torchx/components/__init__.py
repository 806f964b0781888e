"""Builtin components: functions that return an ``AppDef``.

``torchx builtins`` lists them; ``torchx run <name> --help`` shows a component's arguments.

* ``utils``: ``echo``, ``touch``, ``sh``, ``python``, ``binary``, ``copy``, ``booth``, ``hydra``
* ``dist``: ``ddp`` (torchrun), ``spmd`` (ddp sized by a named resource)

Every function in a public module of this package is treated as a component by the finder
(``torchx.specs.finder``), so helpers live in private ``_``-prefixed modules.

Plugin packages add components with the ``torchx.components`` entry-point group
(``alias = package.module``); declaring any hides these builtins unless one entry is
``_ = torchx.components``.
"""

__all__: list[str] = []
