"""Kubeflow Pipelines v2 adapter for torchx-flow."""

__all__: list[str] = []
