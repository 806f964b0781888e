"""The generic and AWS named-resource tables, checked entry by entry against the reference."""

from __future__ import annotations

import warnings

import pytest

from torchx.specs import Resource, named_resources_aws, named_resources_generic
from torchx.specs.named_resources_aws import (
    EFA_DEVICE,
    K8S_ITYPE,
    NEURON_DEVICE,
    instance_type_from_resource,
)

# name, cpu, gpu, memMB
GENERIC = [
    ("gpu.small", 8, 1, 32768),
    ("gpu.medium", 16, 2, 65536),
    ("gpu.large", 32, 4, 131072),
    ("gpu.xlarge", 64, 8, 262144),
    ("cpu.nano", 1, 0, 512),
    ("cpu.micro", 1, 0, 1024),
    ("cpu.small", 1, 0, 2048),
    ("cpu.medium", 2, 0, 4096),
    ("cpu.large", 2, 0, 8192),
    ("cpu.xlarge", 8, 0, 32768),
]

# name, cpu, gpu, memMB, n (GiB), devices ("efa=N,neuron=M"), in the reference's dict order
AWS = [
    ("aws_t3.medium", 2, 0, 3932, 4, ""),
    ("aws_m5.large", 2, 0, 7864, 8, ""),
    ("aws_m5.xlarge", 4, 0, 15728, 16, ""),
    ("aws_m5.2xlarge", 8, 0, 31456, 32, ""),
    ("aws_m5.4xlarge", 16, 0, 62912, 64, ""),
    ("aws_m5.8xlarge", 32, 0, 125824, 128, ""),
    ("aws_m5.12xlarge", 48, 0, 188736, 192, ""),
    ("aws_m5.16xlarge", 64, 0, 251648, 256, ""),
    ("aws_m5.24xlarge", 96, 0, 377472, 384, ""),
    ("aws_m5.metal", 96, 0, 377472, 384, ""),
    ("aws_m5d.large", 2, 0, 7864, 8, ""),
    ("aws_m5d.xlarge", 4, 0, 15728, 16, ""),
    ("aws_m5d.2xlarge", 8, 0, 31456, 32, ""),
    ("aws_m5d.4xlarge", 16, 0, 62912, 64, ""),
    ("aws_m5d.8xlarge", 32, 0, 125824, 128, ""),
    ("aws_m5d.12xlarge", 48, 0, 188736, 192, ""),
    ("aws_m5d.16xlarge", 64, 0, 251648, 256, ""),
    ("aws_m5d.24xlarge", 96, 0, 377472, 384, ""),
    ("aws_m5d.metal", 96, 0, 377472, 384, ""),
    ("aws_c5.18xlarge", 72, 0, 139586, 142, ""),
    ("aws_p3.2xlarge", 8, 1, 59963, 61, ""),
    ("aws_p3.8xlarge", 32, 4, 239852, 244, ""),
    ("aws_p3.16xlarge", 64, 8, 479704, 488, ""),
    ("aws_p3dn.24xlarge", 96, 8, 754944, 768, "efa=1"),
    ("aws_p4d.24xlarge", 96, 8, 1132416, 1152, "efa=4"),
    ("aws_p4de.24xlarge", 96, 8, 1132416, 1152, "efa=4"),
    ("aws_p5.48xlarge", 192, 8, 2013184, 2048, "efa=32"),
    ("aws_p5e.48xlarge", 192, 8, 2013184, 2048, "efa=32"),
    ("aws_p5en.48xlarge", 192, 8, 2013184, 2048, "efa=16"),
    ("aws_p6-b200.48xlarge", 192, 8, 2013184, 2048, "efa=8"),
    ("aws_p6-b300.48xlarge", 192, 8, 4026368, 4096, "efa=16"),
    ("aws_p6e-gb200.36xlarge", 144, 4, 943680, 960, "efa=16"),
    ("aws_g4dn.xlarge", 4, 1, 15728, 16, ""),
    ("aws_g4dn.2xlarge", 8, 1, 31456, 32, ""),
    ("aws_g4dn.4xlarge", 16, 1, 62912, 64, ""),
    ("aws_g4dn.8xlarge", 32, 1, 125824, 128, "efa=1"),
    ("aws_g4dn.16xlarge", 64, 1, 251648, 256, "efa=1"),
    ("aws_g4dn.12xlarge", 48, 4, 188736, 192, "efa=1"),
    ("aws_g4dn.metal", 96, 8, 377472, 384, "efa=1"),
    ("aws_g5.xlarge", 4, 1, 15728, 16, ""),
    ("aws_g5.2xlarge", 8, 1, 31456, 32, ""),
    ("aws_g5.4xlarge", 16, 1, 62912, 64, ""),
    ("aws_g5.8xlarge", 32, 1, 125824, 128, "efa=1"),
    ("aws_g5.16xlarge", 64, 1, 251648, 256, "efa=1"),
    ("aws_g5.12xlarge", 48, 4, 188736, 192, "efa=1"),
    ("aws_g5.24xlarge", 96, 4, 377472, 384, "efa=1"),
    ("aws_g5.48xlarge", 192, 8, 754944, 768, "efa=1"),
    ("aws_g6e.xlarge", 4, 1, 31456, 32, ""),
    ("aws_g6e.2xlarge", 8, 1, 62912, 64, ""),
    ("aws_g6e.4xlarge", 16, 1, 125824, 128, ""),
    ("aws_g6e.8xlarge", 32, 1, 251648, 256, ""),
    ("aws_g6e.16xlarge", 64, 1, 503296, 512, ""),
    ("aws_g6e.12xlarge", 48, 4, 377472, 384, ""),
    ("aws_g6e.24xlarge", 96, 4, 754944, 768, "efa=2"),
    ("aws_g6e.48xlarge", 192, 8, 1509888, 1536, "efa=4"),
    ("aws_trn1.2xlarge", 8, 0, 31456, 32, "neuron=1"),
    ("aws_trn1.32xlarge", 128, 0, 503296, 512, "efa=8,neuron=16"),
    ("aws_inf2.xlarge", 4, 0, 15728, 16, "neuron=1"),
    ("aws_inf2.8xlarge", 32, 0, 125824, 128, "neuron=1"),
    ("aws_inf2.24xlarge", 96, 0, 377472, 384, "neuron=6"),
    ("aws_inf2.48xlarge", 192, 0, 754944, 768, "neuron=12"),
]


def test_module_constants() -> None:
    assert named_resources_generic.GiB == 1024
    assert named_resources_aws.GiB == 1024
    assert named_resources_aws.MEM_TAX == 0.96
    assert EFA_DEVICE == "vpc.amazonaws.com/efa"
    assert NEURON_DEVICE == "aws.amazon.com/neurondevice"
    assert K8S_ITYPE == "node.kubernetes.io/instance-type"


def test_generic_names() -> None:
    assert sorted(named_resources_generic.NAMED_RESOURCES) == sorted(n for n, *_ in GENERIC)


@pytest.mark.parametrize(("name", "cpu", "gpu", "mem"), GENERIC)
def test_generic_entry(name: str, cpu: int, gpu: int, mem: int) -> None:
    res = named_resources_generic.NAMED_RESOURCES[name]()
    assert res == Resource(cpu=cpu, gpu=gpu, memMB=mem)
    assert (res.capabilities, res.devices, res.tags) == ({}, {}, {})


def test_aws_has_61_entries_in_reference_order() -> None:
    assert len(AWS) == 61
    assert list(named_resources_aws.NAMED_RESOURCES) == [row[0] for row in AWS]


def _devices(spec: str) -> dict[str, int]:
    keys = {"efa": EFA_DEVICE, "neuron": NEURON_DEVICE}
    out = {}
    for item in filter(None, spec.split(",")):
        kind, count = item.split("=")
        out[keys[kind]] = int(count)
    return out


@pytest.mark.parametrize(("name", "cpu", "gpu", "mem", "n", "devices"), AWS)
def test_aws_entry(name: str, cpu: int, gpu: int, mem: int, n: int, devices: str) -> None:
    factory = named_resources_aws.NAMED_RESOURCES[name]
    res = factory()
    assert mem == n * 983
    assert res == Resource(
        cpu=cpu,
        gpu=gpu,
        memMB=mem,
        capabilities={K8S_ITYPE: name.removeprefix("aws_")},
        devices=_devices(devices),
    )
    assert res.tags == {}
    fn_name = name.replace(".", "_").replace("-", "_")
    assert getattr(named_resources_aws, fn_name) is factory
    assert factory.__name__ == fn_name


def test_aws_factories_return_fresh_objects() -> None:
    a = named_resources_aws.aws_p4d_24xlarge()
    a.devices[EFA_DEVICE] = 0
    a.capabilities.clear()
    b = named_resources_aws.aws_p4d_24xlarge()
    assert b.devices == {EFA_DEVICE: 4}
    assert b.capabilities == {K8S_ITYPE: "p4d.24xlarge"}


def test_instance_type_from_resource() -> None:
    assert instance_type_from_resource(named_resources_aws.aws_trn1_32xlarge()) == "trn1.32xlarge"
    with pytest.warns(UserWarning, match="Cannot determine resource instance type") as rec:
        assert instance_type_from_resource(Resource(cpu=1, gpu=0, memMB=1)) is None
    assert str(rec[0].message).endswith(
        "Consider providing torchx.specs.named_resources_aws:K8S_ITYPE resource capability."
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        instance_type_from_resource(named_resources_aws.aws_g5_xlarge())
