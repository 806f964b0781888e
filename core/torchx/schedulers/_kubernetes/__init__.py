"""Pure translators and client helpers behind :mod:`torchx.schedulers.kubernetes_scheduler`.

Shared by both modes: ``names`` (labels, names, ``split_app_id``), ``_opts`` (run options),
``settings`` (job-level settings from the options), ``models``, ``pod``, ``replicas``,
``extras``, ``overlay``, ``request`` (``KubernetesJob``), ``render`` (the one serializer and YAML
dumper), ``logs`` and ``client``. Each mode implements ``modes.Mode``: volcano in ``volcano``
(the Job), ``volcano_status`` and ``volcano_ops``; plain in ``plain`` (Service and Jobs),
``plain_status`` and ``plain_ops``. Translation never talks to a cluster; the ``*_ops`` modules
do, through an ``ApiClient`` getter.
"""
