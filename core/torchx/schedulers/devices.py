"""Map ``Resource.devices`` (named devices with counts) to device mounts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from torchx.specs.api import DeviceMount

__all__ = [
    "DEVICES",
    "efa_to_devicemounts",
    "get_device_mounts",
    "neuron_to_devicemounts",
    "to_devicemounts",
]

logger: logging.Logger = logging.getLogger(__name__)


def to_devicemounts(num_devices: int, device_type: str) -> list[DeviceMount]:
    """Returns ``num_devices`` mounts ``{device_type}{i}`` -> ``{device_type}{i}``.

    Args:
        num_devices: how many devices (0 gives none).
        device_type: the device path prefix, e.g. ``/dev/neuron``.
    """
    return [DeviceMount(f"{device_type}{i}", f"{device_type}{i}") for i in range(num_devices)]


def efa_to_devicemounts(num_devices: int) -> list[DeviceMount]:
    """Returns the mounts of ``num_devices`` EFA devices (``/dev/infiniband/uverbs{i}``)."""
    return to_devicemounts(num_devices, "/dev/infiniband/uverbs")


def neuron_to_devicemounts(num_devices: int) -> list[DeviceMount]:
    """Returns the mounts of ``num_devices`` Neuron devices (``/dev/neuron{i}``)."""
    return to_devicemounts(num_devices, "/dev/neuron")


DEVICES: Mapping[str, Callable[[int], list[DeviceMount]]] = {
    "vpc.amazonaws.com/efa": efa_to_devicemounts,
    "aws.amazon.com/neurondevice": neuron_to_devicemounts,
}
"""Known named devices (``named_resources_aws.EFA_DEVICE`` and ``NEURON_DEVICE``)."""


def get_device_mounts(devices: Mapping[str, int]) -> list[DeviceMount]:
    """Return the device mounts for a ``{device name: count}`` mapping.

    Unknown names are skipped with a warning.

    Args:
        devices: e.g. ``Resource.devices``.

    Returns:
        One ``DeviceMount`` per device instance, in input order.
    """
    mounts: list[DeviceMount] = []
    for name, count in devices.items():
        factory = DEVICES.get(name)
        if factory is None:
            logger.warning("Could not find named device: %s", name)
            continue
        mounts.extend(factory(count))
    return mounts
