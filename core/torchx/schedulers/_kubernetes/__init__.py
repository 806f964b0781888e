"""Pure translators and client helpers behind :mod:`torchx.schedulers.kubernetes_scheduler`.

Translation (AppDef -> manifests) lives in ``names``, ``opts``, ``models``, ``pod``,
``replicas``, ``overlay``, ``volcano`` and ``request``; it never talks to a cluster. Reading a
cluster's state (``volcano_status``) and calling the API server (``volcano_ops``) are separate.
"""
