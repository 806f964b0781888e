"""Map ``Resource.devices`` (named devices with counts) to device mounts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from torchx.specs.api import DeviceMount

__all__ = ["DEVICES", "get_device_mounts"]

logger: logging.Logger = logging.getLogger(__name__)


def _efa(count: int) -> list[DeviceMount]:
    return [
        DeviceMount(f"/dev/infiniband/uverbs{i}", f"/dev/infiniband/uverbs{i}")
        for i in range(count)
    ]


def _neuron(count: int) -> list[DeviceMount]:
    return [DeviceMount(f"/dev/neuron{i}", f"/dev/neuron{i}") for i in range(count)]


DEVICES: Mapping[str, Callable[[int], list[DeviceMount]]] = {
    "vpc.amazonaws.com/efa": _efa,
    "aws.amazon.com/neurondevice": _neuron,
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
