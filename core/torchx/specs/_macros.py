"""``macros``: placeholders substituted into role args, env values and metadata."""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from string import Template
from typing import Any

from torchx.specs._role import Role

__all__ = ["macros"]


class macros:
    """Placeholders that schedulers substitute when they materialize a role.

    ``rank0_env`` is replaced by the **name** of an environment variable holding
    the rank-0 host, which the application must expand itself (e.g. inside
    ``bash -c``: ``$${${rank0_env}}`` becomes ``${TORCHX_RANK0_HOST}``).
    """

    img_root = "${img_root}"
    app_id = "${app_id}"
    replica_id = "${replica_id}"
    rank0_env = "${rank0_env}"

    @dataclass
    class Values:
        """The values that replace the macros.

        Args:
            img_root: root directory of the image.
            app_id: the scheduler-assigned app id.
            replica_id: the replica's index within its role.
            rank0_env: name of the env var that holds the rank-0 host.
        """

        img_root: str
        app_id: str
        replica_id: str
        rank0_env: str

        def to_dict(self) -> dict[str, Any]:
            """Returns the values as a dict (``dataclasses.asdict``)."""
            return asdict(self)

        def substitute(self, arg: str) -> str:
            """Substitutes the macros in ``arg``.

            Uses ``string.Template.safe_substitute``: unknown ``$names`` are left
            alone and ``$$`` becomes ``$``.

            Args:
                arg: the string to substitute into.

            Returns:
                The substituted string.
            """
            return Template(arg).safe_substitute(**self.to_dict())

        def _substitute_any(self, value: Any) -> Any:
            if isinstance(value, str):
                return self.substitute(value)
            if isinstance(value, dict):
                return {k: self._substitute_any(v) for k, v in value.items()}
            if isinstance(value, list):
                return [self._substitute_any(v) for v in value]
            return value

        def apply(self, role: Role) -> Role:
            """Returns a deep copy of ``role`` with the macros substituted.

            Substitutes ``args``, ``env`` values (not keys) and every string in
            ``metadata`` (recursively). ``entrypoint``, ``image``, ``port_map`` and
            ``mounts`` are not substituted. A non-empty ``overrides`` dict is
            shared with the copy.

            Args:
                role: the role to materialize.

            Returns:
                The substituted copy.
            """
            new_role = copy.deepcopy(role)
            state = new_role.__dict__
            state["args"] = [self._substitute_any(a) for a in state["args"]]
            state["env"] = {k: self._substitute_any(v) for k, v in state["env"].items()}
            state["metadata"] = self._substitute_any(state["metadata"])
            return new_role
