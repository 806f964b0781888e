"""``apply_macros``: ``macros.Values.apply`` without the deep copy (local_cwd and kubernetes)."""

from __future__ import annotations

from torchx.schedulers._replica_roles import apply_macros
from torchx.specs.api import Role, macros


def test_shallow_macros_equal_values_apply() -> None:
    role = Role(
        "r",
        "img",
        entrypoint="e",
        args=["${app_id}", "$${x}", "plain", "${replica_id}-${rank0_env}-${img_root}-$unknown"],
        env={"A": "${replica_id}", "B": "b"},
        metadata={"k": ["${app_id}", {"n": "${replica_id}", "i": 3}]},
    )
    values = macros.Values(
        img_root="/root", app_id="app-1", replica_id="2", rank0_env="VC_R_0_HOSTS"
    )
    fast, slow = apply_macros(values, role), values.apply(role)
    assert (fast.args, fast.env, fast.metadata) == (slow.args, slow.env, slow.metadata)
    fast.env["NEW"] = "x"
    assert "NEW" not in role.env and role.args[0] == "${app_id}"


def test_replica_roles_substitute_macros_as_values_apply_does() -> None:
    role = Role(
        "trainer",
        "img",
        entrypoint="run_${replica_id}",  # apply leaves the entrypoint alone
        args=["--id=${replica_id}", "--app=${app_id}", "$${img_root}", "--unknown=$nope", "plain"],
        env={"RANK0": "$${rank0_env}", "ROOT": "${img_root}/x", "N": "1"},
        metadata={"k": "${app_id}"},
        overrides={"max_retries": 3},
    )
    values = macros.Values(img_root="/img", app_id="app-1", replica_id="4", rank0_env="H")
    fast, full = apply_macros(values, role), values.apply(role)
    fields = ("name", "image", "entrypoint", "args", "env", "metadata", "max_retries", "resource")
    for field in fields:
        assert getattr(fast, field) == getattr(full, field), field
    assert fast.args == ["--id=4", "--app=app-1", "${img_root}", "--unknown=$nope", "plain"]
    assert role.args[0] == "--id=${replica_id}" and role.env["ROOT"] == "${img_root}/x"
