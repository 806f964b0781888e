"""AWS EC2 instance types as named resources (``torchx.specs.named_resources_aws``).

Each entry is named ``aws_<instance type>`` (e.g. ``aws_p4d.24xlarge``) and its factory is the
module function ``aws_<family>_<size>`` (``.`` and ``-`` become ``_``, e.g.
``aws_p4d_24xlarge``). Memory is ``n * int(1024 * MEM_TAX)`` MB (``n`` GiB minus a 4% tax for
the host), every resource carries the capability ``{K8S_ITYPE: "<instance type>"}``, and
EFA/Neuron devices are declared under ``EFA_DEVICE``/``NEURON_DEVICE``.

Example::

    from torchx.specs import resource

    res = resource(h="aws_p4d.24xlarge")  # 96 cpu, 8 gpu, 1132416 memMB, 4 EFA devices
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from torchx.specs.api import Resource

__all__ = [
    "EFA_DEVICE",
    "GiB",
    "K8S_ITYPE",
    "MEM_TAX",
    "NAMED_RESOURCES",
    "NEURON_DEVICE",
    "instance_type_from_resource",
    "aws_t3_medium",
    "aws_m5_large",
    "aws_m5_xlarge",
    "aws_m5_2xlarge",
    "aws_m5_4xlarge",
    "aws_m5_8xlarge",
    "aws_m5_12xlarge",
    "aws_m5_16xlarge",
    "aws_m5_24xlarge",
    "aws_m5_metal",
    "aws_m5d_large",
    "aws_m5d_xlarge",
    "aws_m5d_2xlarge",
    "aws_m5d_4xlarge",
    "aws_m5d_8xlarge",
    "aws_m5d_12xlarge",
    "aws_m5d_16xlarge",
    "aws_m5d_24xlarge",
    "aws_m5d_metal",
    "aws_c5_18xlarge",
    "aws_p3_2xlarge",
    "aws_p3_8xlarge",
    "aws_p3_16xlarge",
    "aws_p3dn_24xlarge",
    "aws_p4d_24xlarge",
    "aws_p4de_24xlarge",
    "aws_p5_48xlarge",
    "aws_p5e_48xlarge",
    "aws_p5en_48xlarge",
    "aws_p6_b200_48xlarge",
    "aws_p6_b300_48xlarge",
    "aws_p6e_gb200_36xlarge",
    "aws_g4dn_xlarge",
    "aws_g4dn_2xlarge",
    "aws_g4dn_4xlarge",
    "aws_g4dn_8xlarge",
    "aws_g4dn_16xlarge",
    "aws_g4dn_12xlarge",
    "aws_g4dn_metal",
    "aws_g5_xlarge",
    "aws_g5_2xlarge",
    "aws_g5_4xlarge",
    "aws_g5_8xlarge",
    "aws_g5_16xlarge",
    "aws_g5_12xlarge",
    "aws_g5_24xlarge",
    "aws_g5_48xlarge",
    "aws_g6e_xlarge",
    "aws_g6e_2xlarge",
    "aws_g6e_4xlarge",
    "aws_g6e_8xlarge",
    "aws_g6e_16xlarge",
    "aws_g6e_12xlarge",
    "aws_g6e_24xlarge",
    "aws_g6e_48xlarge",
    "aws_trn1_2xlarge",
    "aws_trn1_32xlarge",
    "aws_inf2_xlarge",
    "aws_inf2_8xlarge",
    "aws_inf2_24xlarge",
    "aws_inf2_48xlarge",
]

EFA_DEVICE = "vpc.amazonaws.com/efa"
NEURON_DEVICE = "aws.amazon.com/neurondevice"
K8S_ITYPE = "node.kubernetes.io/instance-type"
MEM_TAX = 0.96
GiB: int = 1024

_MEM_PER_GIB = int(GiB * MEM_TAX)  # 983


def instance_type_from_resource(resource: Resource) -> str | None:
    """Returns the EC2 instance type recorded in ``resource.capabilities[K8S_ITYPE]``.

    Args:
        resource: the resource to inspect.

    Returns:
        The instance type (e.g. ``"p4d.24xlarge"``), or ``None`` with a warning when the
        capability is missing.
    """
    instance_type = resource.capabilities.get(K8S_ITYPE)
    if instance_type is None:
        warnings.warn(
            "Cannot determine resource instance type which can cause issues for"
            " non-homogeneous CEs and multinode jobs. Consider providing"
            " torchx.specs.named_resources_aws:K8S_ITYPE resource capability.",
            stacklevel=2,
        )
    return instance_type


def _factory(
    instance_type: str, cpu: int, gpu: int, n_gib: int, efa: int = 0, neuron: int = 0
) -> Callable[[], Resource]:
    """Builds the factory of one instance type; each call returns a fresh ``Resource``."""
    devices: dict[str, int] = {}
    if efa:
        devices[EFA_DEVICE] = efa
    if neuron:
        devices[NEURON_DEVICE] = neuron

    def factory() -> Resource:
        return Resource(
            cpu=cpu,
            gpu=gpu,
            memMB=n_gib * _MEM_PER_GIB,
            capabilities={K8S_ITYPE: instance_type},
            devices=dict(devices),
        )

    name = "aws_" + instance_type.replace(".", "_").replace("-", "_")
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"AWS `{instance_type}`: {cpu} cpu, {gpu} gpu, {n_gib} GiB, {devices}."
    return factory


aws_t3_medium = _factory("t3.medium", 2, 0, 4)
aws_m5_large = _factory("m5.large", 2, 0, 8)
aws_m5_xlarge = _factory("m5.xlarge", 4, 0, 16)
aws_m5_2xlarge = _factory("m5.2xlarge", 8, 0, 32)
aws_m5_4xlarge = _factory("m5.4xlarge", 16, 0, 64)
aws_m5_8xlarge = _factory("m5.8xlarge", 32, 0, 128)
aws_m5_12xlarge = _factory("m5.12xlarge", 48, 0, 192)
aws_m5_16xlarge = _factory("m5.16xlarge", 64, 0, 256)
aws_m5_24xlarge = _factory("m5.24xlarge", 96, 0, 384)
aws_m5_metal = _factory("m5.metal", 96, 0, 384)
aws_m5d_large = _factory("m5d.large", 2, 0, 8)
aws_m5d_xlarge = _factory("m5d.xlarge", 4, 0, 16)
aws_m5d_2xlarge = _factory("m5d.2xlarge", 8, 0, 32)
aws_m5d_4xlarge = _factory("m5d.4xlarge", 16, 0, 64)
aws_m5d_8xlarge = _factory("m5d.8xlarge", 32, 0, 128)
aws_m5d_12xlarge = _factory("m5d.12xlarge", 48, 0, 192)
aws_m5d_16xlarge = _factory("m5d.16xlarge", 64, 0, 256)
aws_m5d_24xlarge = _factory("m5d.24xlarge", 96, 0, 384)
aws_m5d_metal = _factory("m5d.metal", 96, 0, 384)
aws_c5_18xlarge = _factory("c5.18xlarge", 72, 0, 142)
aws_p3_2xlarge = _factory("p3.2xlarge", 8, 1, 61)
aws_p3_8xlarge = _factory("p3.8xlarge", 32, 4, 244)
aws_p3_16xlarge = _factory("p3.16xlarge", 64, 8, 488)
aws_p3dn_24xlarge = _factory("p3dn.24xlarge", 96, 8, 768, efa=1)
aws_p4d_24xlarge = _factory("p4d.24xlarge", 96, 8, 1152, efa=4)
aws_p4de_24xlarge = _factory("p4de.24xlarge", 96, 8, 1152, efa=4)
aws_p5_48xlarge = _factory("p5.48xlarge", 192, 8, 2048, efa=32)
aws_p5e_48xlarge = _factory("p5e.48xlarge", 192, 8, 2048, efa=32)
aws_p5en_48xlarge = _factory("p5en.48xlarge", 192, 8, 2048, efa=16)
aws_p6_b200_48xlarge = _factory("p6-b200.48xlarge", 192, 8, 2048, efa=8)
aws_p6_b300_48xlarge = _factory("p6-b300.48xlarge", 192, 8, 4096, efa=16)
aws_p6e_gb200_36xlarge = _factory("p6e-gb200.36xlarge", 144, 4, 960, efa=16)
aws_g4dn_xlarge = _factory("g4dn.xlarge", 4, 1, 16)
aws_g4dn_2xlarge = _factory("g4dn.2xlarge", 8, 1, 32)
aws_g4dn_4xlarge = _factory("g4dn.4xlarge", 16, 1, 64)
aws_g4dn_8xlarge = _factory("g4dn.8xlarge", 32, 1, 128, efa=1)
aws_g4dn_16xlarge = _factory("g4dn.16xlarge", 64, 1, 256, efa=1)
aws_g4dn_12xlarge = _factory("g4dn.12xlarge", 48, 4, 192, efa=1)
aws_g4dn_metal = _factory("g4dn.metal", 96, 8, 384, efa=1)
aws_g5_xlarge = _factory("g5.xlarge", 4, 1, 16)
aws_g5_2xlarge = _factory("g5.2xlarge", 8, 1, 32)
aws_g5_4xlarge = _factory("g5.4xlarge", 16, 1, 64)
aws_g5_8xlarge = _factory("g5.8xlarge", 32, 1, 128, efa=1)
aws_g5_16xlarge = _factory("g5.16xlarge", 64, 1, 256, efa=1)
aws_g5_12xlarge = _factory("g5.12xlarge", 48, 4, 192, efa=1)
aws_g5_24xlarge = _factory("g5.24xlarge", 96, 4, 384, efa=1)
aws_g5_48xlarge = _factory("g5.48xlarge", 192, 8, 768, efa=1)
aws_g6e_xlarge = _factory("g6e.xlarge", 4, 1, 32)
aws_g6e_2xlarge = _factory("g6e.2xlarge", 8, 1, 64)
aws_g6e_4xlarge = _factory("g6e.4xlarge", 16, 1, 128)
aws_g6e_8xlarge = _factory("g6e.8xlarge", 32, 1, 256)
aws_g6e_16xlarge = _factory("g6e.16xlarge", 64, 1, 512)
aws_g6e_12xlarge = _factory("g6e.12xlarge", 48, 4, 384)
aws_g6e_24xlarge = _factory("g6e.24xlarge", 96, 4, 768, efa=2)
aws_g6e_48xlarge = _factory("g6e.48xlarge", 192, 8, 1536, efa=4)
aws_trn1_2xlarge = _factory("trn1.2xlarge", 8, 0, 32, neuron=1)
aws_trn1_32xlarge = _factory("trn1.32xlarge", 128, 0, 512, efa=8, neuron=16)
aws_inf2_xlarge = _factory("inf2.xlarge", 4, 0, 16, neuron=1)
aws_inf2_8xlarge = _factory("inf2.8xlarge", 32, 0, 128, neuron=1)
aws_inf2_24xlarge = _factory("inf2.24xlarge", 96, 0, 384, neuron=6)
aws_inf2_48xlarge = _factory("inf2.48xlarge", 192, 0, 768, neuron=12)

NAMED_RESOURCES: dict[str, Callable[[], Resource]] = {
    "aws_t3.medium": aws_t3_medium,
    "aws_m5.large": aws_m5_large,
    "aws_m5.xlarge": aws_m5_xlarge,
    "aws_m5.2xlarge": aws_m5_2xlarge,
    "aws_m5.4xlarge": aws_m5_4xlarge,
    "aws_m5.8xlarge": aws_m5_8xlarge,
    "aws_m5.12xlarge": aws_m5_12xlarge,
    "aws_m5.16xlarge": aws_m5_16xlarge,
    "aws_m5.24xlarge": aws_m5_24xlarge,
    "aws_m5.metal": aws_m5_metal,
    "aws_m5d.large": aws_m5d_large,
    "aws_m5d.xlarge": aws_m5d_xlarge,
    "aws_m5d.2xlarge": aws_m5d_2xlarge,
    "aws_m5d.4xlarge": aws_m5d_4xlarge,
    "aws_m5d.8xlarge": aws_m5d_8xlarge,
    "aws_m5d.12xlarge": aws_m5d_12xlarge,
    "aws_m5d.16xlarge": aws_m5d_16xlarge,
    "aws_m5d.24xlarge": aws_m5d_24xlarge,
    "aws_m5d.metal": aws_m5d_metal,
    "aws_c5.18xlarge": aws_c5_18xlarge,
    "aws_p3.2xlarge": aws_p3_2xlarge,
    "aws_p3.8xlarge": aws_p3_8xlarge,
    "aws_p3.16xlarge": aws_p3_16xlarge,
    "aws_p3dn.24xlarge": aws_p3dn_24xlarge,
    "aws_p4d.24xlarge": aws_p4d_24xlarge,
    "aws_p4de.24xlarge": aws_p4de_24xlarge,
    "aws_p5.48xlarge": aws_p5_48xlarge,
    "aws_p5e.48xlarge": aws_p5e_48xlarge,
    "aws_p5en.48xlarge": aws_p5en_48xlarge,
    "aws_p6-b200.48xlarge": aws_p6_b200_48xlarge,
    "aws_p6-b300.48xlarge": aws_p6_b300_48xlarge,
    "aws_p6e-gb200.36xlarge": aws_p6e_gb200_36xlarge,
    "aws_g4dn.xlarge": aws_g4dn_xlarge,
    "aws_g4dn.2xlarge": aws_g4dn_2xlarge,
    "aws_g4dn.4xlarge": aws_g4dn_4xlarge,
    "aws_g4dn.8xlarge": aws_g4dn_8xlarge,
    "aws_g4dn.16xlarge": aws_g4dn_16xlarge,
    "aws_g4dn.12xlarge": aws_g4dn_12xlarge,
    "aws_g4dn.metal": aws_g4dn_metal,
    "aws_g5.xlarge": aws_g5_xlarge,
    "aws_g5.2xlarge": aws_g5_2xlarge,
    "aws_g5.4xlarge": aws_g5_4xlarge,
    "aws_g5.8xlarge": aws_g5_8xlarge,
    "aws_g5.16xlarge": aws_g5_16xlarge,
    "aws_g5.12xlarge": aws_g5_12xlarge,
    "aws_g5.24xlarge": aws_g5_24xlarge,
    "aws_g5.48xlarge": aws_g5_48xlarge,
    "aws_g6e.xlarge": aws_g6e_xlarge,
    "aws_g6e.2xlarge": aws_g6e_2xlarge,
    "aws_g6e.4xlarge": aws_g6e_4xlarge,
    "aws_g6e.8xlarge": aws_g6e_8xlarge,
    "aws_g6e.16xlarge": aws_g6e_16xlarge,
    "aws_g6e.12xlarge": aws_g6e_12xlarge,
    "aws_g6e.24xlarge": aws_g6e_24xlarge,
    "aws_g6e.48xlarge": aws_g6e_48xlarge,
    "aws_trn1.2xlarge": aws_trn1_2xlarge,
    "aws_trn1.32xlarge": aws_trn1_32xlarge,
    "aws_inf2.xlarge": aws_inf2_xlarge,
    "aws_inf2.8xlarge": aws_inf2_8xlarge,
    "aws_inf2.24xlarge": aws_inf2_24xlarge,
    "aws_inf2.48xlarge": aws_inf2_48xlarge,
}
