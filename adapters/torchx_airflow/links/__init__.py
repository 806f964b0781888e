"""Operator extra links of torchx-flow (``torchx_airflow.links.torchx``)."""
