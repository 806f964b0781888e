"""Applications behind ``utils.copy`` (``copy_main``) and ``utils.booth`` (``booth_main``)."""

__all__: list[str] = []
