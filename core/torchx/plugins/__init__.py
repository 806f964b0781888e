"""Plugin discovery for torchx (``torchx.plugins``).

Plugins are callables in modules under the namespace packages ``torchx_plugins.schedulers``,
``torchx_plugins.named_resources`` and ``torchx_plugins.tracker``, marked with the
:data:`register` decorators, or entries in the entry-point groups ``torchx.schedulers``,
``torchx.named_resources`` and ``torchx.tracker`` (deprecated in favour of namespaces).

Example::

    from torchx.plugins import PluginType, registry

    schedulers = registry().get(PluginType.SCHEDULER)  # {name: factory}
    print(registry())  # YAML: every plugin and where it comes from, plus errors
"""

from torchx.plugins._fractionals import (
    EIGHTH,
    HALF,
    QUARTER,
    SIXTEENTH,
    WHOLE,
    halve_mem_down_to,
    powers_of_two_gpus,
)
from torchx.plugins._register import register
from torchx.plugins._registration import resource_tags
from torchx.plugins._registry import PluginRegistry, registry
from torchx.plugins._types import PluginInfo, PluginType, RegistrationError

__all__ = [
    "EIGHTH",
    "HALF",
    "QUARTER",
    "SIXTEENTH",
    "WHOLE",
    "PluginInfo",
    "PluginRegistry",
    "PluginType",
    "RegistrationError",
    "halve_mem_down_to",
    "powers_of_two_gpus",
    "register",
    "registry",
    "resource_tags",
]
