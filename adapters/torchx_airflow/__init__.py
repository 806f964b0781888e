"""Airflow adapter for torchx-flow (see issue: Airflow adapter)."""

__all__: list[str] = []
