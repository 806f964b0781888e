"""The job-level settings both kubernetes modes build their pods with (from the run options)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from torchx.schedulers._kubernetes._opts import Opts
from torchx.schedulers._kubernetes.extras import parse_toleration
from torchx.schedulers._kubernetes.names import RESERVED_MEMMB, RESERVED_MILLICPU

__all__ = ["Settings"]


@dataclass(frozen=True)
class Settings:
    """What a mode needs besides the AppDef: queue, pod settings, namespace, rank-0 address.

    Attributes:
        queue: the Volcano queue (volcano mode) or the Kueue LocalQueue (plain/jobset modes).
        service_account: the pods' service account, or None.
        priority_class: the Volcano Job's PriorityClass (volcano mode) or the Kueue
            WorkloadPriorityClass (plain/jobset modes with a queue), or None.
        reserved_millicpu: subtracted from each CPU request.
        reserved_memmb: subtracted from each memory request.
        efa_device_count: None keeps ``resource.devices``; 0 removes EFA; N sets it.
        image_pull_secrets: Secret names for pulling images.
        tolerations: parsed ``V1Toleration`` objects.
        namespace: where the objects go; in volcano mode, when set, pods get the handle as
            ``TORCHX_JOB_ID`` (``.../{namespace}:{name}``); None keeps TorchX's ``.../{name}``.
        rank0_address: ``dns`` or ``pod_ip`` (plain mode).
        image_pull_policy: the containers' ``imagePullPolicy`` ("": Kubernetes' default).
        startup_timeout: seconds a replica may wait with a reason before the app fails (plain
            and jobset modes; 0: no limit).
    """

    queue: str = ""
    service_account: Optional[str] = None
    priority_class: Optional[str] = None
    reserved_millicpu: int = RESERVED_MILLICPU
    reserved_memmb: int = RESERVED_MEMMB
    efa_device_count: Optional[int] = None
    image_pull_secrets: Sequence[str] = ()
    tolerations: Sequence[Any] = field(default_factory=tuple)
    namespace: Optional[str] = None
    rank0_address: str = "dns"
    image_pull_policy: str = ""
    startup_timeout: float = 0.0

    @classmethod
    def from_opts(cls, opts: Opts) -> Settings:
        """The settings of checked run options.

        Raises:
            ValueError: a malformed toleration.
        """
        return cls(
            queue=str(opts.queue or ""),
            service_account=opts.service_account,
            priority_class=opts.priority_class,
            reserved_millicpu=opts.reserved_millicpu,
            reserved_memmb=opts.reserved_memmb,
            efa_device_count=opts.efa_device_count,
            image_pull_secrets=tuple(opts.image_pull_secrets),
            tolerations=tuple(parse_toleration(t) for t in opts.tolerations),
            namespace=opts.namespace,
            rank0_address=opts.rank0_address,
            image_pull_policy=opts.image_pull_policy,
            startup_timeout=float(opts.startup_timeout),
        )
