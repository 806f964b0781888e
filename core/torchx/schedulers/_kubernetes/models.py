"""Lazy access to the kubernetes client's model classes, and cheap model construction.

Every generated model's ``__init__`` builds (or deep-copies) a ``Configuration`` unless one is
passed; that dominated TorchX's dry-run time. :func:`new` passes one shared configuration, used
only for client-side validation flags, so each model costs an attribute dict.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["api_client", "models", "new"]

_INSTALL_HINT = "pip install 'torchx-flow[kubernetes]'"


@functools.cache
def models() -> Any:
    """The ``kubernetes.client.models`` module.

    Raises:
        ModuleNotFoundError: the kubernetes client is not installed (names the extra).
    """
    try:
        from kubernetes.client import (  # lazy: ~300 ms; runopts kubernetes skips it
            models as k8s_models,
        )
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            f"the kubernetes scheduler needs the `kubernetes` package: {_INSTALL_HINT}",
            name=e.name,
        ) from e
    return k8s_models


@functools.cache
def _shared_configuration() -> Any:
    from kubernetes.client import Configuration  # lazy: ~300 ms; runopts kubernetes skips it

    config = Configuration()
    config.client_side_validation = False  # the API server validates (validate_spec)
    return config


def new(kind: str, **fields: Any) -> Any:
    """Build a kubernetes model object, e.g. ``new("V1EnvVar", name="A", value="b")``.

    Args:
        kind: the model class name in ``kubernetes.client.models``.
        **fields: the model's (snake_case) attributes.

    Returns:
        The model instance (a real ``kubernetes.client.models`` class).
    """
    cls = getattr(models(), kind)
    return cls(local_vars_configuration=_shared_configuration(), **fields)


@functools.cache
def api_client() -> Any:
    """An unconfigured ``ApiClient``, used only for (de)serialization, never for requests."""
    models()
    from kubernetes.client import ApiClient  # lazy: ~300 ms; runopts kubernetes skips it

    return ApiClient(configuration=_shared_configuration())
