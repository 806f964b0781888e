"""Helpers for ``utils.hydra``: resolvers that emit macros, and config composition.

``hydra`` and ``omegaconf`` are imported inside the functions (they are optional).
"""

from __future__ import annotations

import os
from typing import Any

from torchx import specs

__all__ = ["RESOLVERS", "compose_appdef", "register_resolvers"]

# OmegaConf resolves interpolations again when it instantiates, so each macro is escaped
# (``\${app_id}``) to survive as the literal ``${app_id}`` that the scheduler substitutes.
RESOLVERS: dict[str, str] = {
    "torchx.app_id": "\\" + specs.macros.app_id,
    "torchx.replica_id": "\\" + specs.macros.replica_id,
    "torchx.rank0_env": "\\" + specs.macros.rank0_env,
    "torchx.img_root": "\\" + specs.macros.img_root,
}


def _import_hydra() -> tuple[Any, Any]:
    try:
        import hydra  # lazy: hydra ~135 ms, optional; 'torchx builtins' loads us
        from omegaconf import OmegaConf  # lazy: ~85 ms, optional; 'torchx builtins' loads us
    except ImportError as e:
        raise ImportError(
            "utils.hydra needs hydra-core and omegaconf: `pip install hydra-core`"
        ) from e
    return hydra, OmegaConf


def register_resolvers(omegaconf: Any) -> None:
    """Registers the ``torchx.*`` resolvers on ``OmegaConf`` (replacing earlier ones)."""
    for name, value in RESOLVERS.items():
        omegaconf.register_new_resolver(name, lambda v=value: v, replace=True)


def compose_appdef(config_name: str, config_dir: str, overrides: list[str]) -> specs.AppDef:
    """Composes ``config_dir/config_name`` with ``overrides`` and instantiates ``cfg.app``.

    Args:
        config_name: the config file name (without ``.yaml``).
        config_dir: the config directory (relative to the current directory or absolute).
        overrides: Hydra overrides.

    Returns:
        The instantiated AppDef.

    Raises:
        ImportError: hydra or omegaconf is not installed.
        TypeError: ``cfg.app`` is not an AppDef.
    """
    hydra, omegaconf = _import_hydra()
    from hydra.utils import instantiate  # lazy: hydra ~135 ms, optional; 'torchx builtins' loads us

    register_resolvers(omegaconf)
    with hydra.initialize_config_dir(config_dir=os.path.abspath(config_dir), version_base=None):
        cfg = hydra.compose(config_name=config_name, overrides=overrides)
    if os.environ.get("TORCHX_DEBUG"):
        print(omegaconf.to_yaml(cfg))
    app = instantiate(cfg.app, _convert_="all")
    if not isinstance(app, specs.AppDef):
        raise TypeError(
            f"`app` in hydra config `{config_name}` must instantiate a torchx.specs.AppDef,"
            f" got `{type(app).__name__}`"
        )
    return app
