r"""``.torchxconfig`` as one object: read from the discovered files or from text.

:class:`TorchXConfig` is the single INI reader of the project. The runner's
:mod:`torchx.runner.config` functions, the tracker settings, the named-resource library and
the adapters all read through it. It imports only the standard library and ``torchx.specs``
types, so ``torchx.specs`` never imports the runner to find its config files.

Discovery (:func:`find_configs`): ``$TORCHXCONFIG`` names the one file to read (any readable
path that is not a directory, so ``TORCHXCONFIG=/dev/null`` switches config files off just as
``TORCHXCONFIG=""`` does); otherwise ``.torchxconfig`` in each of ``DEFAULT_CONFIG_DIRS``
(``$HOME`` then the cwd). Across sources the **first** value of a key wins.

Interpolation follows TorchX (``configparser``'s basic interpolation): a literal ``%`` is
written ``%%`` and ``%(key)s`` refers to another key of the section or of ``[DEFAULT]``. The one
exception is ``[named_resources]``: its values are JSON or ``k=v`` lists and are read raw (no
``%`` processing, no ``[DEFAULT]`` keys), as they were designed for that section.

Example::

    cfg = TorchXConfig.from_text("[local_cwd]\nlog_dir = /tmp/logs\n")
    cfg.section("local_cwd")  # {"log_dir": "/tmp/logs"}
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Optional

from torchx.settings import ENV_TORCHXCONFIG
from torchx.util.paths import home_dir

if TYPE_CHECKING:
    import configparser

    from torchx.specs.api import CfgVal, runopts

__all__ = [
    "CONFIG_FILE",
    "CONFIG_PREFIX_DELIM",
    "DEFAULT_CONFIG_DIRS",
    "NAMED_RESOURCES_SECTION",
    "TorchXConfig",
    "find_configs",
    "merge_defaults",
]

logger: logging.Logger = logging.getLogger("torchx.runner.config")

CONFIG_FILE = ".torchxconfig"
CONFIG_PREFIX_DELIM = ":"
NAMED_RESOURCES_SECTION = "named_resources"
DEFAULT_CONFIG_DIRS: list[str] = [home_dir(), os.getcwd()]
"""Directories searched for ``.torchxconfig``, in precedence order; fixed at import time."""

_NONE = "None"


def _readable_config(path: str) -> bool:
    return os.path.exists(path) and not os.path.isdir(path) and os.access(path, os.R_OK)


def find_configs(dirs: Optional[Iterable[str]] = None) -> list[str]:
    """Returns the config files to read, highest precedence first.

    Args:
        dirs: directories to look in (default ``DEFAULT_CONFIG_DIRS``); ignored when
            ``$TORCHXCONFIG`` is set.

    Returns:
        ``[$TORCHXCONFIG]`` when set to a path, ``[]`` when set to ``""``, otherwise each
        readable ``{d}/.torchxconfig`` in ``dirs`` order.

    Raises:
        FileNotFoundError: ``$TORCHXCONFIG`` names something missing, unreadable or a
            directory.
    """
    config_file = os.environ.get(ENV_TORCHXCONFIG)
    if config_file is not None:
        if config_file == "":
            return []
        if not _readable_config(config_file):
            raise FileNotFoundError(
                f"`{ENV_TORCHXCONFIG}={config_file}` does not exist or is not a file."
            )
        return [config_file]
    found: list[str] = []
    for d in dirs or DEFAULT_CONFIG_DIRS:
        path = os.path.normpath(os.path.join(d, CONFIG_FILE))  # no pathlib: ~3 ms of a start
        if path not in found and os.path.isfile(path) and os.access(path, os.R_OK):
            found.append(path)
    return found


def _new_parser() -> configparser.ConfigParser:
    import configparser  # lazy: ~25 ms here, only once a config is read

    parser = configparser.ConfigParser()
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    return parser


class TorchXConfig:
    """Parsed ``.torchxconfig`` sources; for every key the first source that has it wins.

    Build one with :meth:`discover` (the files TorchX reads), :meth:`from_files`,
    :meth:`from_text`, or chain several with :meth:`then`. The object is immutable.

    Args:
        sources: ``(name, parser)`` pairs, highest precedence first.
    """

    def __init__(self, sources: Sequence[tuple[str, configparser.ConfigParser]] = ()) -> None:
        self._sources = tuple(sources)

    # ------------------------------------------------------------------ construction

    @classmethod
    def discover(cls, dirs: Optional[Iterable[str]] = None) -> TorchXConfig:
        """Reads the files :func:`find_configs` returns (``$TORCHXCONFIG`` or the dirs)."""
        return cls.from_files(find_configs(dirs))

    @classmethod
    def from_files(cls, paths: Iterable[str]) -> TorchXConfig:
        """Reads ``paths`` in order (the first one wins).

        Raises:
            configparser.Error: a file is not valid INI.
        """
        sources = []
        for path in paths:
            parser = _new_parser()
            with open(path) as f:
                parser.read_file(f, source=path)
            sources.append((path, parser))
        return cls(sources)

    @classmethod
    def from_text(cls, text: str, source: str = "<text>") -> TorchXConfig:
        """Parses the text of a ``.torchxconfig`` file.

        Args:
            text: the INI text ("" gives an empty config).
            source: the name errors use for it.
        """
        parser = _new_parser()
        parser.read_string(text, source=source)
        return cls([(source, parser)])

    def then(self, *others: TorchXConfig) -> TorchXConfig:
        """Returns a config where this one's values win over ``others`` (in order)."""
        sources = list(self._sources)
        for other in others:
            sources.extend(other._sources)
        return TorchXConfig(sources)

    @property
    def sources(self) -> list[str]:
        """The names (paths, or ``<text>``) of the sources, highest precedence first."""
        return [name for name, _ in self._sources]

    def __bool__(self) -> bool:
        return any(p.sections() for _, p in self._sources)

    def __repr__(self) -> str:
        return f"TorchXConfig(sources={self.sources})"

    # ------------------------------------------------------------------ readers

    def get(self, section: str, key: str) -> Optional[str]:
        """Returns the first value of ``key`` in ``[section]``, or None."""
        for name, parser in self._sources:
            if parser.has_option(section, key):
                return _value(name, parser, section, key)
        return None

    def section(self, section: str) -> dict[str, str]:
        """Returns ``{key: value}`` of ``[section]`` merged over the sources (first wins)."""
        values: dict[str, str] = {}
        for name, parser in self._sources:
            if parser.has_section(section):
                for key in parser.options(section):
                    if key not in values:
                        values[key] = _value(name, parser, section, key)
        return values

    def sections(self, prefix: str) -> dict[str, dict[str, str]]:
        """Returns ``{name: {key: value}}`` for every ``[{prefix}:{name}]`` section."""
        names: list[str] = []
        for _, parser in self._sources:
            for section in parser.sections():
                head, delim, name = section.partition(CONFIG_PREFIX_DELIM)
                if delim and head == prefix and name and name not in names:
                    names.append(name)
        return {n: self.section(f"{prefix}{CONFIG_PREFIX_DELIM}{n}") for n in names}

    def component_defaults(self) -> dict[str, dict[str, str]]:
        """Returns ``{component: {param: value}}`` from the ``[component:<name>]`` sections."""
        return self.sections("component")

    def scheduler(self, explicit: Optional[str] = None, default: str = "local_cwd") -> str:
        """Returns ``explicit``, else ``[cli:run] scheduler``, else ``default``."""
        return explicit or self.get("cli:run", "scheduler") or default

    def trackers(self) -> dict[str, Optional[str]]:
        """Returns ``{tracker name: [tracker:<name>] config or None}`` from ``[torchx:tracker]``."""
        names = list(self.section(f"torchx{CONFIG_PREFIX_DELIM}tracker"))
        return {n: self.get(f"tracker{CONFIG_PREFIX_DELIM}{n}", "config") for n in names}

    def named_resources(self) -> list[tuple[str, str, str]]:
        """Returns ``(source, name, raw value)`` of ``[named_resources]``, first source wins.

        Values are read raw (no ``%`` interpolation) and ``[DEFAULT]`` keys are not included.
        """
        found: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        for source, parser in self._sources:
            if not parser.has_section(NAMED_RESOURCES_SECTION):
                continue
            defaults = parser.defaults()
            for key in parser.options(NAMED_RESOURCES_SECTION):
                if key in seen or key in defaults:
                    continue
                seen.add(key)
                found.append((source, key, parser.get(NAMED_RESOURCES_SECTION, key, raw=True)))
        return found

    def apply_run_opts(self, scheduler: str, cfg: dict[str, CfgVal], opts: runopts) -> None:
        """Fills the keys missing from ``cfg`` with the ``[scheduler]`` values, cast by ``opts``.

        ``None`` maps to None; keys that are not run options are skipped with a warning.

        Args:
            scheduler: the scheduler name (also the section name).
            cfg: the run config to complete, in place; its existing keys are kept.
            opts: the scheduler's run options.
        """
        for key, value in self.section(scheduler).items():
            if key in cfg:
                continue
            opt = opts.get(key)
            if opt is None:
                logger.warning(
                    "`%s = %s` was declared in the [%s] section of the config file but is not a"
                    " runopt of `%s` scheduler, remove the entry from the config file to no"
                    " longer see this warning",
                    key,
                    value,
                    scheduler,
                    scheduler,
                )
                continue
            cfg[key] = None if value == _NONE else opt.cast_to_type(value)


def _value(source: str, parser: configparser.ConfigParser, section: str, key: str) -> str:
    import configparser  # lazy: ~25 ms here, only once a config is read

    try:
        return parser.get(section, key)
    except configparser.InterpolationError as e:
        raise ValueError(
            f"{source}: [{section}] {key}: {e.message.splitlines()[0]} (write a literal `%` as"
            " `%%` in .torchxconfig)"
        ) from None


def merge_defaults(
    *layers: Optional[Mapping[str, Mapping[str, str]]],
) -> dict[str, dict[str, str]]:
    """Merges ``{component: {param: value}}`` layers; an earlier layer wins per param."""
    merged: dict[str, dict[str, str]] = {}
    for layer in layers:
        for component, values in (layer or {}).items():
            target = merged.setdefault(component, {})
            for key, value in values.items():
                target.setdefault(key, value)
    return merged
