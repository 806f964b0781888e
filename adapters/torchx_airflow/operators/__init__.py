"""TorchX operators."""

from torchx_airflow.operators.torchx import TorchXOperator

__all__ = ["TorchXOperator"]
