"""Run options of the kubernetes scheduler (``Opts``, alias ``KubernetesOpts``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from torchx.schedulers._api_opts import StructuredOpts
from torchx.schedulers._kubernetes.names import RESERVED_MEMMB, RESERVED_MILLICPU
from torchx.specs.api import InvalidRunConfigException

__all__ = [
    "IMAGE_PULL_POLICIES",
    "MODES",
    "MODE_JOBSET",
    "MODE_PLAIN",
    "MODE_VOLCANO",
    "RANK0_ADDRESSES",
    "STARTUP_TIMEOUT",
    "Opts",
]

MODE_VOLCANO = "volcano"
MODE_PLAIN = "plain"
MODE_JOBSET = "jobset"
MODES = (MODE_VOLCANO, MODE_PLAIN, MODE_JOBSET)
RANK0_ADDRESSES = ("dns", "pod_ip")
IMAGE_PULL_POLICIES = ("", "Always", "IfNotPresent", "Never")
STARTUP_TIMEOUT = 600.0
"""Default ``startup_timeout``: seconds a replica may wait for a reason before the app fails."""


@dataclass
class Opts(StructuredOpts):
    """Run options of ``kubernetes``: TorchX's, in TorchX's order, then this project's."""

    queue: Optional[str] = None
    """Volcano queue (required in volcano mode); plain/jobset: a Kueue LocalQueue (the app is
    created suspended and Kueue admits it)"""

    namespace: str = "default"
    """Kubernetes namespace to schedule job in"""

    service_account: Optional[str] = None
    """The service account name to set on the pod specs"""

    priority_class: Optional[str] = None
    """The name of the PriorityClass to set on the job specs (plain/jobset with `queue`: a Kueue
    WorkloadPriorityClass)"""

    validate_spec: bool = True
    """Validate job spec using Kubernetes API dry-run before submission (False: offline)"""

    reserved_millicpu: int = RESERVED_MILLICPU
    """Amount of CPU in millicores to reserve for Kubernetes system overhead (default: 100)"""

    reserved_memmb: int = RESERVED_MEMMB
    """Amount of memory in MB to reserve for Kubernetes system overhead (default: 1024)"""

    image_repo: Optional[str] = None
    """The image repository to use when pushing patched images, must have push access"""

    efa_device_count: Optional[int] = None
    """EFA device count override: None/unset=use resource spec, 0=remove EFA, N>0=set to N"""

    quiet: bool = False
    """whether to suppress verbose output for image building"""

    mode: str = MODE_VOLCANO
    """`volcano` (a Volcano Job, needs Volcano), `plain` (batch/v1 Jobs + headless Service) or
    `jobset` (one JobSet, needs the JobSet controller)"""

    image_pull_secrets: list[str] = field(default_factory=list)
    """names of Secrets (docker-registry type) the pods pull their images with"""

    tolerations: list[str] = field(default_factory=list)
    """pod tolerations `key[:value]:Effect`, e.g. `nvidia.com/gpu:NoSchedule;pool:train:`"""

    rank0_address: str = "dns"
    """plain mode: how replicas reach rank 0; `dns` (the headless Service's name for rank 0's pod,
    needs cluster DNS) or `pod_ip` (rank 0's Job starts first and its pod IP is passed on; for
    clusters without DNS)"""

    image_pull_policy: str = ""
    """the containers' imagePullPolicy: Always, IfNotPresent or Never; unset: Kubernetes'
    default (Always for `:latest` or untagged images, else IfNotPresent)"""

    startup_timeout: float = STARTUP_TIMEOUT
    """plain/jobset: seconds a replica may wait with a reason (image pull error, unschedulable,
    config error) before the app reads FAILED with that reason; 0: no limit"""

    def check(self) -> None:
        """Validate values that the option types alone do not constrain.

        Raises:
            InvalidRunConfigException: a value is out of range, naming the option and the fix.
        """
        if self.mode not in MODES:
            raise _invalid("mode", f"must be one of {', '.join(MODES)}", self.mode)
        if self.mode == MODE_VOLCANO and not self.queue:
            raise _invalid(
                "queue",
                "is required in volcano mode (e.g. -cfg queue=default), or use -cfg mode=plain",
                self.queue,
            )
        if self.image_pull_policy not in IMAGE_PULL_POLICIES:
            raise _invalid(
                "image_pull_policy",
                "must be one of Always, IfNotPresent, Never",
                self.image_pull_policy,
            )
        if self.startup_timeout < 0:
            raise _invalid("startup_timeout", "must be >= 0 seconds", self.startup_timeout)
        if self.rank0_address not in RANK0_ADDRESSES:
            raise _invalid(
                "rank0_address", f"must be one of {', '.join(RANK0_ADDRESSES)}", self.rank0_address
            )
        for key in ("reserved_millicpu", "reserved_memmb"):
            if getattr(self, key) < 0:
                raise _invalid(key, "must be >= 0", getattr(self, key))
        if self.efa_device_count is not None and self.efa_device_count < 0:
            raise _invalid("efa_device_count", "must be >= 0", self.efa_device_count)


def _invalid(key: str, what: str, value: object) -> InvalidRunConfigException:
    return InvalidRunConfigException(f"run option `{key}` {what}", key, {key: value})
