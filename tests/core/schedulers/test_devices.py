from __future__ import annotations

import logging

import pytest

from torchx.schedulers.devices import get_device_mounts
from torchx.specs.api import DeviceMount


def test_efa_and_neuron() -> None:
    mounts = get_device_mounts({"vpc.amazonaws.com/efa": 2, "aws.amazon.com/neurondevice": 1})
    assert mounts == [
        DeviceMount("/dev/infiniband/uverbs0", "/dev/infiniband/uverbs0"),
        DeviceMount("/dev/infiniband/uverbs1", "/dev/infiniband/uverbs1"),
        DeviceMount("/dev/neuron0", "/dev/neuron0"),
    ]
    assert all(m.permissions == "rwm" for m in mounts)


def test_unknown_device_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert get_device_mounts({"foo": 1}) == []
    assert "Could not find named device: foo" in caplog.text
