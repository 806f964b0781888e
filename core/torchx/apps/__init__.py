"""Small applications that builtin components run (``python -m torchx.apps...``)."""

__all__: list[str] = []
