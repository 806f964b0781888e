"""The one start-up cache of the ``torchx`` command (private).

Three answers are slow to compute and rarely change: the component names ``torchx builtins``
lists (every component module imported and linted), the ``torchx --help`` text (argparse) and
the output of ``torchx runopts [SCHEDULER]`` (the scheduler modules). They live in **one
file** per interpreter and ``sys.path``, ``$XDG_CACHE_HOME/torchx-flow/startup-<crc>.txt``
(default ``~/.cache/torchx-flow``; ``$TORCHX_HOME/cache`` when ``TORCHX_HOME`` is set), as
*sections* next to each other. A command that stores its section keeps the others, so
commands run in any order (``run`` included, which stores nothing) keep the file warm for
each other; a later start that finds its section valid serves it without importing
argparse, the specs or a scheduler (:func:`serve`).

Validity is a *stat list*: the ``(mtime, size)`` of every file and directory an answer could
depend on. The file has one shared list, checked for every section: each ``sys.path`` entry
and the ``entry_points.txt`` of every distribution on it, present or not (a distribution
installed, removed or edited). Each section adds its own: the files of the modules it
imported (component modules, a scheduler's options) and their package directories. The key
holds the interpreter, its version, ``sys.path`` and the torchx version; the help section's
name holds the width and a CRC of the locale variables. None of the answers reads
``.torchxconfig`` or another environment variable, and nothing depends on the working
directory unless it is on ``sys.path`` (then it is part of the key). A change of a shared
entry drops every section (all depend on it); a changed component module drops the
component section only.

Nothing is stored when it could not be trusted: a ``torchx.cli.cmds`` plugin exists (it may
replace a command, or fail to load: that error must show), a path is a zip or egg, a custom
distribution finder is installed, or a recorded file changed in the last ``RACY_SECONDS``.
The file holds paths, signatures and the printed text, never an environment variable's
value. Any error reading or writing it means the answer is computed.
"""

from __future__ import annotations

import os
import sys

from torchx.util import stat_cache
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, TextIO

__all__ = [
    "COMPONENTS",
    "MAX_FILES",
    "MAX_SECTIONS",
    "RACY_SECONDS",
    "cache_dir",
    "cache_path",
    "enable_store",
    "load",
    "module_dependencies",
    "output_section",
    "recording",
    "serve",
    "store",
]

_FORMAT = "torchx-startup 1"
COMPONENTS = "components"
"""The section of the component names (``torchx builtins``)."""

RACY_SECONDS = stat_cache.RACY_SECONDS
"""Files changed this recently (at store time) make a section untrusted: nothing is stored."""

MAX_SECTIONS = 32
"""Sections kept in the file (help texts of several widths, runopts of each scheduler)."""

MAX_FILES = 16
"""Cache files kept (one per interpreter and ``sys.path``); the least recently written go."""

_store_enabled = False


def enable_store(enabled: bool) -> None:
    """Allows :func:`store` (``torchx.cli.main`` calls it once it knows no CLI plugin exists)."""
    global _store_enabled
    _store_enabled = enabled


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/torchx-flow`` (default ``~/.cache/torchx-flow``): outside any checkout.

    ``$TORCHX_HOME/cache`` when ``TORCHX_HOME`` is set (a separate torchx home, e.g. a test's).
    """
    home = os.environ.get("TORCHX_HOME")
    if home:
        return os.path.join(os.path.expanduser(home), "cache")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torchx-flow")


def _key() -> str:
    paths = [os.path.abspath(p) for p in sys.path]  # "" names the working directory
    return "\x1f".join([sys.executable, sys.version, __version__, *paths])


def cache_path() -> str:
    """Returns the cache file of this interpreter and ``sys.path`` (not created)."""
    import binascii  # lazy: 0.15 ms; torchx run never reads or writes the cache

    crc = binascii.crc32(_key().encode("utf-8", "surrogateescape"))
    return os.path.join(cache_dir(), f"startup-{crc:08x}.txt")


Section = tuple[list[tuple[str, str]], str]  # (stat list, text)


def _parse(data: str) -> tuple[list[tuple[str, str]], dict[str, Section]] | None:
    """``(shared stat list, {name: section})`` of a file's text, or None when foreign."""
    lines_end = data.find("\nsection ")
    head = data if lines_end < 0 else data[:lines_end]
    lines = head.split("\n")
    if len(lines) < 2 or lines[0] != _FORMAT or lines[1] != "key " + _key():
        return None
    shared = _stats(lines[2:])
    if shared is None:
        return None
    sections: dict[str, Section] = {}
    pos = len(head) + 1
    while pos < len(data):
        end = data.find("\n", pos)
        name = data[pos:end].partition(" ")[2]
        if end < 0 or not data.startswith("section ", pos):
            return None
        body_end = data.find("\ntext ", end)
        if body_end < 0:
            return None
        size_end = data.find("\n", body_end + 1)
        stats = _stats(data[end + 1 : body_end].split("\n") if body_end > end else [])
        size = data[body_end + 6 : size_end]
        if stats is None or not size.isdigit():
            return None
        text = data[size_end + 1 : size_end + 1 + int(size)]
        if len(text) != int(size):
            return None  # truncated
        sections[name] = (stats, text)
        pos = size_end + 1 + int(size) + 1
    return shared, sections


def _stats(lines: Iterable[str]) -> list[tuple[str, str]] | None:
    stats = []
    for line in lines:
        kind, _, rest = line.partition(" ")
        sig, _, path = rest.partition(" ")
        if kind != "stat" or not path:
            return None
        stats.append((path, sig))
    return stats


def _read() -> tuple[list[tuple[str, str]], dict[str, Section]] | None:
    try:
        with open(cache_path(), encoding="utf-8", errors="surrogateescape") as f:
            return _parse(f.read())
    except (OSError, ValueError):
        return None


def load(name: str) -> str | None:
    """Returns the text of section ``name`` when it and the shared stat list are valid."""
    found = _read()
    if found is None:
        return None
    shared, sections = found
    section = sections.get(name)
    if section is None or not stat_cache.unchanged(shared) or not stat_cache.unchanged(section[0]):
        return None
    return section[1]


def store(name: str, text: str, depends_on: Iterable[str] = ()) -> bool:
    """Stores section ``name``, keeping the file's other sections. Errors are ignored.

    Args:
        name: the section (:data:`COMPONENTS`, ``help ...``, ``runopts ...``).
        text: the answer.
        depends_on: the files and directories the answer depends on besides the shared
            list (e.g. :func:`module_dependencies`).

    Returns:
        Whether it was written (False when not allowed or not trustworthy).
    """
    shared_paths = stat_cache.path_entries()
    if not _store_enabled or shared_paths is None:
        return False
    shared = stat_cache.stat_list(shared_paths, RACY_SECONDS)
    own = stat_cache.stat_list(depends_on, RACY_SECONDS)
    if shared is None or own is None:
        return False
    found = _read()
    sections = found[1] if found is not None and found[0] == shared else {}
    sections.pop(name, None)
    sections[name] = (own, text)
    kept = list(sections.items())[-MAX_SECTIONS:]
    if any("\n" in s for s in [_key(), *(p for p, _ in shared + own), *(n for n, _ in kept)]):
        return False
    out = [_FORMAT, "key " + _key(), *(f"stat {sig} {path}" for path, sig in shared)]
    for section, (stats, body) in kept:
        out.append(f"section {section}")
        out += [f"stat {sig} {path}" for path, sig in stats]
        out += [f"text {len(body)}", body]
    path = cache_path()
    data = "\n".join(out) + "\n"
    if not stat_cache.write_atomic(path, data.encode("utf-8", "surrogateescape")):
        return False
    stat_cache.evict(os.path.dirname(path), "startup-", ".txt", MAX_FILES)
    return True


def module_dependencies() -> list[str]:
    """The file and package directories of every imported module outside the stdlib.

    Unlike the component index (which searches packages recursively, so a sub-directory
    that becomes a package counts), a command's output depends on the modules it imported
    and on which modules exist beside them (a scheduler module found by name): the package
    directories themselves, not their sub-directories, which other work may touch often.
    """
    modules = [m for m in list(sys.modules.values()) if m is not None]
    files = stat_cache.module_files(modules, skip_stdlib=True)
    packages = {os.path.join(p, "") for m in modules for p in _package_path(m)}
    return [f for f in files if os.path.join(f, "") in packages or not os.path.isdir(f)]


def _package_path(module: object) -> list[str]:
    try:
        return [p for p in getattr(module, "__path__", None) or () if isinstance(p, str)]
    except TypeError:  # a __path__ that is no path list
        return []


def output_section(argv: Sequence[str]) -> str | None:
    """The section caching the output of ``argv``, or None when it is not cached.

    ``torchx runopts`` and ``torchx runopts NAME`` are: their output depends only on the
    installed schedulers.
    """
    argv = list(argv)
    if argv == ["runopts"]:
        return "runopts *"
    if len(argv) == 2 and argv[0] == "runopts" and argv[1] and not argv[1].startswith("-"):
        return f"runopts {argv[1]}"
    return None


class _Tee:
    """A text stream writing to ``out`` and remembering what it wrote."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self._out.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


class recording:
    """Stores what the block prints to stdout as section ``name`` when it ends normally.

    Nothing is stored when the block wrote to stderr (a warning must show on every run).

    Args:
        name: the section (see :func:`output_section`).
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._tees: tuple[_Tee, _Tee] | None = None

    def __enter__(self) -> None:
        self._tees = (_Tee(sys.stdout), _Tee(sys.stderr))
        sys.stdout, sys.stderr = self._tees

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        tees, self._tees = self._tees, None
        assert tees is not None
        out, err = tees
        sys.stdout, sys.stderr = out._out, err._out
        if kind is None and not err.parts:
            store(self._name, "".join(out.parts), module_dependencies())


def _builtins_text(names: list[str]) -> str:
    lines = [f"Found {len(names)} builtin components:"]
    lines += [f" {i + 1:2d}. {name}" for i, name in enumerate(names)]
    return "\n".join(lines) + "\n"


def serve(argv: Sequence[str]) -> None:
    """Prints the cached answer to ``builtins`` or ``runopts [NAME]`` and exits 0.

    Returns on a miss, and for any other command line (``--help`` is served by
    :func:`torchx.cli._help_cache.print_cached_help`, from this cache too).

    Args:
        argv: the command line after ``torchx``.
    """
    argv = list(argv)
    if argv == ["builtins"]:
        names = load(COMPONENTS)
        text = None if names is None else _builtins_text(names.split("\n") if names else [])
    elif (section := output_section(argv)) is not None:
        text = load(section)
    else:
        return
    if text is None:
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (AttributeError, OSError):
        pass
    sys.exit(0)
