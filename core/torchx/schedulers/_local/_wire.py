"""What the supervisor reads and writes: file names, the request hand-over, JSON out, env.

Every local app start pays for the supervisor's imports, so this module (like the rest of the
supervisor) uses only modules that are built into the interpreter or cost next to nothing:
no ``json`` (it imports ``re``), ``pathlib``, ``subprocess`` or ``socket``. The launcher hands
the request over as ``marshal`` data (:data:`REQUEST_MARSHAL`, written beside ``request.json``
by the same interpreter), and :func:`dumps` writes the JSON that ``json.load`` reads back.
"""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = [
    "REQUEST_FILE",
    "REQUEST_MARSHAL",
    "STATE_FILE",
    "SUPERVISOR_LOG",
    "allowed_env",
    "dumps",
    "parse_supervisor_args",
    "read_request",
    "spawn_env",
    "write_json_atomic",
    "write_request",
]

REQUEST_FILE = "request.json"
REQUEST_MARSHAL = ".request.marshal"
STATE_FILE = "state.json"
SUPERVISOR_LOG = "supervisor.log"


def write_request(app_dir: str, data: dict[str, Any]) -> None:
    """Write the supervisor's copy of the request (``marshal``: it loads without imports)."""
    fd = os.open(os.path.join(app_dir, REQUEST_MARSHAL), os.O_WRONLY | os.O_CREAT, 0o600)
    with open(fd, "wb") as f:
        marshal.dump(data, f)


def read_request(app_dir: str) -> dict[str, Any] | None:
    """Read what :func:`write_request` wrote; None if it is missing or unreadable."""
    try:
        with open(os.path.join(app_dir, REQUEST_MARSHAL), "rb") as f:
            data = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _json_str(text: str) -> str:
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    out = []
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            code -= 0x10000
            out.append(f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}")
    return '"' + "".join(out) + '"'


def _json_float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def dumps(value: Any) -> str:
    """Encode ``value`` as JSON, as ``json.dumps`` does (ASCII only, ``NaN``/``Infinity`` kept).

    Supports what the supervisor writes: dicts with string keys, lists and tuples, strings,
    ints, floats, bools and None.

    Raises:
        TypeError: for any other type.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json_str(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps(item) for item in value) + "]"
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
            items.append(f"{_json_str(key)}: {dumps(item)}")
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def write_json_atomic(
    path: str | os.PathLike[str],
    data: dict[str, Any],
    encode: Callable[[Any], str] | None = None,
) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same dir, then ``os.replace``).

    Args:
        path: the file.
        data: the JSON object.
        encode: the encoder (default :func:`dumps`; the launcher passes ``json.dumps``, whose
            C encoder is ~3x faster: a 128-replica ``request.json`` is ~100 kB).
    """
    head, name = os.path.split(os.fspath(path))
    tmp = os.path.join(head, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as f:
        f.write((encode or dumps)(data))
    os.replace(tmp, path)


def glob_match(name: str, pattern: str) -> bool:
    """``fnmatch.fnmatchcase`` for ``*`` and ``?`` patterns, without importing ``re``.

    Args:
        name: the string to test.
        pattern: ``*`` matches any run of characters, ``?`` one character, the rest itself.
    """
    n = p = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and pattern[p] in ("?", name[n]) and pattern[p] != "*":
            n, p = n + 1, p + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, n, p + 1
        elif star >= 0:
            mark += 1
            n, p = mark, star + 1
        else:
            return False
    return all(c == "*" for c in pattern[p:])


def glob_matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """A test of "matches one of ``patterns``" (:func:`glob_match`), made once for many names.

    Names without a wildcard are looked up in a set and ``PREFIX*`` patterns are one
    ``startswith``; only the other patterns are matched one by one (an Airflow worker's
    environment against the default ``env_allow`` list: ~1000 calls per launch before).
    """
    exact, prefix, others = set(), [], []
    for p in patterns:
        if "*" not in p and "?" not in p:
            exact.add(p)
        elif p.endswith("*") and "*" not in p[:-1] and "?" not in p:
            prefix.append(p[:-1])
        else:
            others.append(p)
    prefixes = tuple(prefix)

    def match(name: str) -> bool:
        return (
            name in exact or name.startswith(prefixes) or any(glob_match(name, p) for p in others)
        )

    return match


def spawn_env(
    recorded: dict[str, str], inherited: dict[str, str], drop: list[str] | None = None
) -> dict[str, str]:
    """The environment a replica starts with: the inherited one, then what the request records.

    ``request.json`` records only what the AppDef and torchx set (never the inherited
    environment, which may hold secrets); its ``PATH`` is a prefix put before the inherited
    ``PATH``. Inherited variables whose names match a ``drop`` pattern (the ``env_drop`` run
    option) are left out; recorded ones are always kept.

    Args:
        recorded: the replica's ``env`` from ``request.json``.
        inherited: the environment the supervisor inherited from the launcher.
        drop: glob patterns (``*`` and ``?``, :func:`glob_match`) of inherited names to leave out.
    """
    if drop:
        dropped = glob_matcher(drop)
        inherited = {k: v for k, v in inherited.items() if not dropped(k)}
    env = {**inherited, **recorded}
    paths = [p.strip(":") for p in (recorded.get("PATH"), inherited.get("PATH")) if p]
    joined = ":".join(p for p in paths if p)
    if joined:
        env["PATH"] = joined
    return env


def allowed_env(
    inherited: dict[str, str], allow: list[str] | None, drop: list[str] | None = None
) -> dict[str, str] | None:
    """The environment the supervisor starts with under the ``env_allow`` run option.

    Args:
        inherited: the launcher's environment.
        allow: glob patterns (:func:`glob_match`) of the inherited names to keep; None keeps
            everything (TorchX's behaviour: the function then returns None).
        drop: ``env_drop`` patterns, which win over ``allow``.

    Returns:
        Only the inherited variables matching an ``allow`` pattern and no ``drop`` one, plus
        ``PATH`` (always: replicas find programs as the launcher does; it holds no secret);
        None when ``allow`` is None.
    """
    if allow is None:
        return None
    allowed, dropped = glob_matcher(allow), glob_matcher(drop or ())
    return {k: v for k, v in inherited.items() if (k == "PATH" or allowed(k)) and not dropped(k)}


def parse_supervisor_args(argv: list[str]) -> tuple[str, int, int | None]:
    """Parses ``APP_DIR --control-fd N [--launcher-fd N]`` (what the launcher passes).

    No argparse: every app start pays for the supervisor's imports.
    """
    usage = "usage: torchx-local-supervisor APP_DIR --control-fd N [--launcher-fd N]"
    app_dir: str | None = None
    fds: dict[str, int] = {}
    it = iter(argv)
    for arg in it:
        if arg in ("--control-fd", "--launcher-fd"):
            value = next(it, "")
            if not value.isdigit():
                raise SystemExit(f"{usage}\n{arg} needs a file descriptor number, got {value!r}")
            fds[arg] = int(value)
        elif app_dir is None and not arg.startswith("-"):
            app_dir = arg
        else:
            raise SystemExit(f"{usage}\nunexpected argument {arg!r}")
    if app_dir is None or "--control-fd" not in fds:
        raise SystemExit(usage)
    return app_dir, fds["--control-fd"], fds.get("--launcher-fd")
