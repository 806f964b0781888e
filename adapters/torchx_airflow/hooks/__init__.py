"""TorchX hooks."""

from torchx_airflow.hooks.torchx import TorchXHook

__all__ = ["TorchXHook"]
