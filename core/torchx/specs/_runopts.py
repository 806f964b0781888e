"""``runopt``, ``runopts`` and ``CfgVal``: typed scheduler run options."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union  # noqa: UP035

from torchx.specs._constants import cases, get_type_name
from torchx.specs._errors import InvalidRunConfigException

__all__ = ["CfgVal", "runopt", "runopts"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging


def _logger() -> logging.Logger:
    """This module's logger; ``logging`` is imported on first use (not by ``torchx runopts``)."""
    import logging  # lazy: ~26 ms here; 'torchx runopts' skips it

    return logging.getLogger(__name__)


CfgVal = Optional[Union[str, int, float, bool, List[str], Dict[str, str]]]  # noqa: UP006
"""The type of a run option value."""

_LIST_OF_STR: tuple[Any, ...] = (List[str], list[str])  # noqa: UP006
_DICT_OF_STR: tuple[Any, ...] = (Dict[str, str], dict[str, str])  # noqa: UP006
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_SPLIT = re.compile(r"[,;]")
_YELLOW = "\033[33m"
_RESET = "\033[0m"


def _stderr_is_tty() -> bool:
    """Colour log text only for a terminal (logs go to stderr)."""
    return bool(sys.stderr is not None and sys.stderr.isatty())


def _to_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(
        f"`{value}` is not a valid bool literal, expected one of (case-insensitive):"
        " true/1/yes/on or false/0/no/off"
    )


def _to_dict(value: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in _SPLIT.split(value):
        if not item:
            continue
        key, sep, val = item.partition(":")
        if not sep:
            raise ValueError(
                f"`{item}` in `{value}` is not a `key:value` pair (e.g. `k1:v1,k2:v2`)"
            )
        result[key] = val
    return result


@dataclass
class runopt:
    """A scheduler run option.

    Args:
        default: the default value.
        opt_type: the value type (``str``, ``int``, ``float``, ``bool``,
            ``list[str]`` or ``dict[str, str]``).
        is_required: whether the option must be given.
        help: the help text.
    """

    default: CfgVal
    opt_type: Any
    is_required: bool
    help: str

    @property
    def is_type_list_of_str(self) -> bool:
        """True if the type is ``list[str]`` (``typing`` or builtin spelling)."""
        return self.opt_type in _LIST_OF_STR

    @property
    def is_type_dict_of_str(self) -> bool:
        """True if the type is ``dict[str, str]`` (``typing`` or builtin spelling)."""
        return self.opt_type in _DICT_OF_STR

    def cast_to_type(self, value: str) -> CfgVal:
        """Casts a string (from ``-cfg`` or ``.torchxconfig``) to the option type.

        Bools use the INI vocabulary; ``list[str]`` is split on ``,`` or ``;``
        (empty items dropped); ``dict[str, str]`` items are ``k:v``, split at the
        first ``:``.

        Args:
            value: the string value.

        Returns:
            The typed value.

        Raises:
            ValueError: for a None ``opt_type`` or an invalid literal.
        """
        if self.opt_type is None:
            raise ValueError("runopt's opt_type cannot be `None`")
        if self.opt_type is bool:
            return _to_bool(value)
        if self.is_type_list_of_str:
            return [item for item in _SPLIT.split(value) if item]
        if self.is_type_dict_of_str:
            return _to_dict(value)
        return self.opt_type(value)


class runopts:
    """The set of run options a scheduler accepts, in insertion order."""

    def __init__(self) -> None:
        self._opts: dict[str, runopt] = {}

    def __iter__(self) -> Iterator[tuple[str, runopt]]:
        return iter(self._opts.items())

    def __len__(self) -> int:
        return len(self._opts)

    def __or__(self, other: runopts) -> runopts:
        merged = runopts()
        merged.update(self)
        merged.update(other)
        return merged

    def update(self, other: runopts) -> None:
        """Merges ``other``'s options into this object (``other`` wins)."""
        self._opts.update(other._opts)

    @staticmethod
    def is_type(obj: CfgVal, tp: Any) -> bool:
        """``isinstance`` extended to ``list[str]`` and ``dict[str, str]``.

        Args:
            obj: the value.
            tp: the type.

        Returns:
            Whether ``obj`` is of type ``tp``.
        """
        if tp in _LIST_OF_STR:
            return isinstance(obj, list) and all(isinstance(x, str) for x in obj)
        if tp in _DICT_OF_STR:
            return isinstance(obj, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in obj.items()
            )
        try:
            return isinstance(obj, tp)
        except TypeError:
            return False

    def add(
        self,
        cfg_key: str,
        type_: Any,
        help: str,
        default: CfgVal = None,
        required: bool = False,
    ) -> None:
        """Adds a run option.

        Args:
            cfg_key: the option name (snake_case; the camelCase spelling also works).
            type_: the option type.
            help: the help text.
            default: the default value (must be None for a required option).
            required: whether the option must be given.

        Raises:
            ValueError: if a required option has a default.
            TypeError: if the default is not of ``type_``.
        """
        if required and default is not None:
            raise ValueError(
                f"Required option: {cfg_key} must not specify default value. Given: {default}"
            )
        if default is not None and not runopts.is_type(default, type_):
            raise TypeError(
                f"Option: {cfg_key}, must be of type: {get_type_name(type_)}."
                f" Given: {default} ({type(default).__name__})"
            )
        self._opts[cfg_key] = runopt(default, type_, required, help)

    def _canonical_key(self, name: str) -> str | None:
        if name in self._opts:
            return name
        for key in self._opts:
            if cases.snake_to_camel(key) == name:
                return key
        return None

    def get(self, name: str) -> runopt | None:
        """Returns the option named ``name`` (snake_case or camelCase), or None."""
        key = self._canonical_key(name)
        return None if key is None else self._opts[key]

    def resolve(self, cfg: Mapping[str, CfgVal]) -> dict[str, CfgVal]:
        """Checks ``cfg`` against the options and fills defaults.

        camelCase keys are renamed to the registered snake_case keys; unknown keys
        are kept.

        Args:
            cfg: the run config.

        Returns:
            A new, resolved config.

        Raises:
            InvalidRunConfigException: for a missing required option or a wrong type.
        """
        resolved: dict[str, CfgVal] = {}
        for key, value in cfg.items():
            canonical = self._canonical_key(key) or key
            if canonical != key and canonical in cfg:
                continue
            resolved[canonical] = value
        for key, opt in self._opts.items():
            value = resolved.get(key)
            if value is None:
                if opt.is_required:
                    raise InvalidRunConfigException(
                        f"Required run option: {key}, must be provided and not `None`", key, cfg
                    )
                resolved[key] = opt.default
            elif not runopts.is_type(value, opt.opt_type):
                raise InvalidRunConfigException(
                    f"Run option: {key}, must be of type: {get_type_name(opt.opt_type)},"
                    f" but was: {value} ({type(value).__name__})",
                    key,
                    cfg,
                )
        return resolved

    def cfg_from_str(self, cfg_str: str) -> dict[str, CfgVal]:
        """Parses ``"k1=v1,k2=v2"`` into a typed config.

        Each value is cast with ``runopt.cast_to_type``. Unknown keys are logged
        and dropped; required options and defaults are not checked.

        Args:
            cfg_str: the ``-cfg`` string; ``""`` gives ``{}``.

        Returns:
            The typed config.
        """
        from torchx.util.types import to_dict  # lazy: 0.4 ms; 'torchx runopts' skips it

        cfg: dict[str, CfgVal] = {}
        for key, value in to_dict(cfg_str).items():
            canonical = self._canonical_key(key)
            if canonical is None:
                yellow, reset = (_YELLOW, _RESET) if _stderr_is_tty() else ("", "")
                _logger().warning(
                    f"{yellow}unknown run option passed to scheduler: {key}={value}{reset}"
                )
                continue
            cfg[canonical] = self._opts[canonical].cast_to_type(value)
        return cfg

    def cfg_from_json_repr(self, json_repr: str) -> dict[str, CfgVal]:
        """Parses a JSON object into a config, keeping known keys only.

        Args:
            json_repr: the JSON text.

        Returns:
            The config: None stays None, list and dict items are stringified,
            other values are kept. Unknown keys are dropped silently.
        """
        import json  # lazy: json ~10 ms here; 'torchx runopts' skips it

        cfg: dict[str, CfgVal] = {}
        for name, value in json.loads(json_repr).items():
            key = self._canonical_key(name)
            if key is None:
                continue
            if isinstance(value, list):
                cfg[key] = [str(v) for v in value]
            elif isinstance(value, dict):
                cfg[key] = {str(k): str(v) for k, v in value.items()}
            else:
                cfg[key] = value
        return cfg

    def _entry(self, key: str, opt: runopt) -> str:
        type_name = get_type_name(opt.opt_type)
        kind = type_name if opt.is_required else f"{type_name}, {opt.default}"
        return f"\n        {key}={key.upper()} ({kind})\n            {opt.help}"

    def __repr__(self) -> str:
        required = [(k, o) for k, o in self._opts.items() if o.is_required]
        optional = [(k, o) for k, o in self._opts.items() if not o.is_required]
        usage = [f"{k}={k.upper()}" for k, _ in required]
        usage += [f"[{k}={k.upper()}]" for k, _ in optional]
        out = "    usage:\n        " + ",".join(usage)
        if required:
            out += "\n\n    required arguments:" + "".join(self._entry(k, o) for k, o in required)
        if optional:
            out += "\n\n    optional arguments:" + "".join(self._entry(k, o) for k, o in optional)
        return out
