"""Generic, cloud-neutral named resources (``torchx.specs.named_resources_generic``).

Use them by name, e.g. ``resource(h="gpu.small")`` or ``torchx run ... -h gpu.small``.
``gpu.small``/``medium``/``large``/``xlarge`` have 8/16/32/64 cpu, 1/2/4/8 gpu and 32/64/128/256
GiB; ``cpu.nano``/``micro``/``small``/``medium``/``large``/``xlarge`` have 1/1/1/2/2/8 cpu, no gpu
and 0.5/1/2/4/8/32 GiB. No capabilities, devices or tags.
"""

from __future__ import annotations

from collections.abc import Callable

from torchx.specs.api import Resource

__all__ = [
    "GiB",
    "NAMED_RESOURCES",
    "cpu_large",
    "cpu_medium",
    "cpu_micro",
    "cpu_nano",
    "cpu_small",
    "cpu_xlarge",
    "gpu_large",
    "gpu_medium",
    "gpu_small",
    "gpu_xlarge",
]

GiB: int = 1024


def _factory(name: str, cpu: int, gpu: int, memMB: int) -> Callable[[], Resource]:
    def factory() -> Resource:
        return Resource(cpu=cpu, gpu=gpu, memMB=memMB)

    factory.__name__ = factory.__qualname__ = name.replace(".", "_")
    factory.__doc__ = f"Generic `{name}`: {cpu} cpu, {gpu} gpu, {memMB} memMB."
    return factory


gpu_small = _factory("gpu.small", 8, 1, 32 * GiB)
gpu_medium = _factory("gpu.medium", 16, 2, 64 * GiB)
gpu_large = _factory("gpu.large", 32, 4, 128 * GiB)
gpu_xlarge = _factory("gpu.xlarge", 64, 8, 256 * GiB)
cpu_nano = _factory("cpu.nano", 1, 0, 512)
cpu_micro = _factory("cpu.micro", 1, 0, 1 * GiB)
cpu_small = _factory("cpu.small", 1, 0, 2 * GiB)
cpu_medium = _factory("cpu.medium", 2, 0, 4 * GiB)
cpu_large = _factory("cpu.large", 2, 0, 8 * GiB)
cpu_xlarge = _factory("cpu.xlarge", 8, 0, 32 * GiB)

NAMED_RESOURCES: dict[str, Callable[[], Resource]] = {
    "gpu.small": gpu_small,
    "gpu.medium": gpu_medium,
    "gpu.large": gpu_large,
    "gpu.xlarge": gpu_xlarge,
    "cpu.nano": cpu_nano,
    "cpu.micro": cpu_micro,
    "cpu.small": cpu_small,
    "cpu.medium": cpu_medium,
    "cpu.large": cpu_large,
    "cpu.xlarge": cpu_xlarge,
}
