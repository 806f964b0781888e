"""Input values inside ``sh -c`` scripts reach the shell as variables, never as code.

Components such as ``dist.ddp`` run ``bash -c "<script>"`` with their arguments quoted into
the script. Where an input's probe token sits in such a script, it is replaced by a quoted
expansion of an environment variable that the wrapper exports, chosen for the token's
quoting context: ``"${V}"`` outside quotes, ``${V}`` inside double quotes and
``'"${V}"'`` inside single quotes. The value is then expanded once and never re-parsed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchx.specs.api import Role
    from torchx_kfp._compile.params import ComponentInput

__all__ = [
    "SHELLS",
    "artifact_var",
    "input_var",
    "rewrite_artifact_paths",
    "rewrite_shell_script",
    "shell_script_indices",
]

SHELLS = ("sh", "bash", "dash", "zsh", "ksh")
# an artifact placeholder as it appears in a script, plain or shlex-quoted ('"'"' for ')
_QUOTE = "(?:'|'\"'\"')"
_ARTIFACT = re.compile(
    r"\{\{\$\.(inputs|outputs)\.artifacts\[" + _QUOTE + r"(\w+)" + _QUOTE + r"\]\.(path|uri)\}\}"
)


def artifact_var(kind: str, name: str, attr: str) -> str:
    """The env var that carries an artifact's path or uri into shell scripts."""
    return f"TORCHX_KFP_{kind.upper()}_{name.upper()}_{attr.upper()}"


def input_var(name: str) -> str:
    """The env var that carries input ``name`` into shell scripts."""
    return f"TORCHX_KFP_INPUT_{name.upper()}"


def shell_script_indices(role: Role) -> list[int]:
    """Indices of ``role.args`` that are ``-c`` scripts of a shell entrypoint."""
    if role.entrypoint.rsplit("/", 1)[-1] not in SHELLS:
        return []
    return [k + 1 for k, arg in enumerate(role.args[:-1]) if arg == "-c"]


def _states(script: str) -> list[str]:
    """The quoting state (``""``, ``"'"`` or ``'"'``) before each character of ``script``."""
    states, state, escaped = [], "", False
    for ch in script:
        states.append(state)
        if escaped:
            escaped = False
        elif ch == "\\" and state != "'":
            escaped = True
        elif ch in "'\"" and state in ("", ch):
            state = "" if state == ch else ch
    return states


def rewrite_shell_script(
    script: str, inputs: Sequence[ComponentInput]
) -> tuple[str, list[ComponentInput]]:
    """Replaces input tokens in a shell script by quoted variable expansions.

    Returns:
        The rewritten script and the inputs it now reads from the environment.
    """
    used: list[ComponentInput] = []
    for inp in inputs:
        if inp.token not in script:
            continue
        used.append(inp)
        states = _states(script)
        out, k = [], 0
        while k < len(script):
            if script.startswith(inp.token, k):
                ref = "${" + input_var(inp.name) + "}"
                out.append({"": f'"{ref}"', '"': ref, "'": f"'\"{ref}\"'"}[states[k]])
                k += len(inp.token)
            else:
                out.append(script[k])
                k += 1
        script = "".join(out)
    return script, used


def rewrite_artifact_paths(script: str) -> tuple[str, dict[str, str]]:
    """Replaces artifact placeholders in a shell script by quoted variable expansions.

    An artifact path (``{{$.outputs.artifacts['model'].path}}``) in a script that a component
    quoted with ``shlex.quote`` no longer reads as a placeholder (its quotes became
    ``'"'"'``). It is replaced by a variable that the wrapper exports, set from the plain
    placeholder, which the KFP launcher resolves in argv.

    Returns:
        The rewritten script and ``{variable: placeholder}``.
    """
    found: dict[str, str] = {}
    while True:
        match = _ARTIFACT.search(script)
        if match is None:
            return script, found
        kind, name, attr = match.groups()
        var = artifact_var(kind, name, attr)
        found[var] = "{{$." + kind + ".artifacts['" + name + "']." + attr + "}}"
        ref = "${" + var + "}"
        state = _states(script)[match.start()]
        expansion = {"": f'"{ref}"', '"': ref, "'": f"'\"{ref}\"'"}[state]
        script = script[: match.start()] + expansion + script[match.end() :]
