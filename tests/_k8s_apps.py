"""AppDefs the kubernetes scheduler tests translate (importable as ``_k8s_apps``)."""

from __future__ import annotations

from torchx.components.dist import ddp
from torchx.specs.api import (
    AppDef,
    BindMount,
    DeviceMount,
    Resource,
    RetryPolicy,
    Role,
    VolumeMount,
    macros,
)
from torchx.specs.overlays import set_overlay


def ddp_2x1() -> AppDef:
    """The README's training run: dist.ddp -j 2x1."""
    return ddp(script="train.py", j="2x1", image="torchx-flow/python:3.11", name="train")


def kitchen_sink() -> AppDef:
    """Two roles exercising every part of the mapping."""
    trainer = Role(
        name="trainer",
        image="registry.local/train:1",
        entrypoint="python",
        args=[
            "-m",
            "train",
            "--id",
            macros.app_id,
            "--rank",
            macros.replica_id,
            "--master",
            f"$${macros.rank0_env}",
            "--root",
            f"{macros.img_root}/data",
        ],
        env={"POD_IP": "[FIELD_PATH]status.podIP", "MODE": "fast", "WHO": macros.replica_id},
        num_replicas=2,
        max_retries=3,
        retry_policy=RetryPolicy.APPLICATION,
        resource=Resource(
            cpu=4,
            gpu=2,
            memMB=8192,
            capabilities={"node.kubernetes.io/instance-type": "p4d.24xlarge"},
            devices={"vpc.amazonaws.com/efa": 2},
        ),
        port_map={"http": 8080, "metrics": 9090},
        mounts=[
            BindMount(src_path="/data", dst_path="/mnt/data", read_only=True),
            VolumeMount(src="ckpt-claim", dst_path="/ckpt"),
            DeviceMount(src_path="/dev/fuse", dst_path="/dev/fuse", permissions="r"),
        ],
    )
    reader = Role(
        name="Data_Reader",
        image="registry.local/reader:2",
        entrypoint="reader",
        args=["--leader", f"$${macros.rank0_env}"],
        num_replicas=3,
        min_replicas=1,
        max_retries=1,
        retry_policy=RetryPolicy.REPLICA,
        resource=Resource(cpu=0.5, gpu=0, memMB=512),
    )
    set_overlay(reader, "kubernetes", "V1Pod", {"spec": {"hostIPC": True}})
    return AppDef(name="Kitchen.Sink", roles=[trainer, reader])
