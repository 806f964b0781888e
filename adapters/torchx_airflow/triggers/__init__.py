"""TorchX triggers."""

from torchx_airflow.triggers.torchx import TorchXJobTrigger

__all__ = ["TorchXJobTrigger"]
