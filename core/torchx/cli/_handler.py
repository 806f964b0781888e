"""The single top-level error handler of the ``torchx`` command (private).

Every exception that reaches it is a user mistake or an environment problem, printed as one
``torchx: error: <message>`` line on stderr with exit code 1 (a :class:`CliError` may carry
another code). The traceback is printed only with ``--log_level DEBUG`` (or
``LOGLEVEL=DEBUG``). ``SystemExit`` passes through (argparse usage errors exit 2), and a
signal exits with ``128 + signal number``.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from torchx.cli._errors import CliError, exception_message
from torchx.cli._signals import acknowledge, exit_code_for, signal_exception_types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["handle_errors", "is_debug"]

# Exceptions whose message is meant for users; anything else also names its type.
_USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    LookupError,
    OSError,
    ImportError,
    RuntimeError,
    TypeError,
)


def is_debug(argv: Sequence[str]) -> bool:
    """Tells whether ``--log_level`` (before the sub-command) or ``$LOGLEVEL`` asks for DEBUG.

    Args:
        argv: the command-line arguments.
    """
    level = os.environ.get("LOGLEVEL", "")
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--log_level" and i + 1 < len(argv):
            level = argv[i + 1]
            i += 1
        elif arg.startswith("--log_level="):
            level = arg.partition("=")[2]
        elif not arg.startswith("-"):
            break
        i += 1
    return level.upper() in ("DEBUG", "NOTSET") or (level.isdigit() and int(level) <= 10)


def _is_user_error(e: BaseException) -> bool:
    if isinstance(e, _USER_ERRORS):
        return True
    from torchx.specs.api import TorchXError  # lazy: the specs, ~6 ms: errors only
    from torchx.specs.finder import (  # lazy: errors only
        ComponentNotFoundException,
        ComponentValidationException,
    )

    return isinstance(e, (TorchXError, ComponentNotFoundException, ComponentValidationException))


def _config_file_error(e: BaseException) -> str | None:
    """One line for a ``.torchxconfig`` that ``configparser`` cannot read, else None."""
    configparser = sys.modules.get("configparser")  # loaded if a config file was read
    if configparser is None or not isinstance(e, configparser.Error):
        return None
    source = getattr(e, "source", None) or "a .torchxconfig file"
    lineno = getattr(e, "lineno", None)
    where = f"{source}, line {lineno}" if lineno else source
    first = (getattr(e, "message", "") or str(e)).splitlines()[0].rstrip(".")
    hint = "every option must be under a [section] header, e.g. [local_cwd]"
    if not isinstance(e, configparser.MissingSectionHeaderError):
        hint = "fix or remove it, or set TORCHXCONFIG= (empty) to ignore config files"
    return f"cannot read {where}: {first}; {hint}"


def _one_line(e: BaseException) -> str:
    config_error = _config_file_error(e)
    if config_error is not None:
        return config_error
    if isinstance(e, SyntaxError):
        return f"syntax error in {e.filename or 'a Python file'}, line {e.lineno}: {e.msg}"
    msg = " ".join(exception_message(e).split("\n"))
    if isinstance(e, CliError) or _is_user_error(e):
        return msg or type(e).__name__
    return f"{type(e).__name__}: {msg} (rerun with `torchx --log_level DEBUG ...` for details)"


def _silence_stdout() -> None:
    """Points stdout at /dev/null so that the interpreter's final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


@contextmanager
def handle_errors(argv: Sequence[str]) -> Iterator[None]:
    """Turns exceptions raised in the block into one error line and an exit code.

    Args:
        argv: the command-line arguments (to find ``--log_level``).

    Raises:
        SystemExit: always, when the block raised.
    """
    try:
        yield
    except CliError as e:  # a SystemExit that carries its message
        _print_error(argv, e)
        sys.exit(e.exit_code)
    except SystemExit:
        raise
    except signal_exception_types() as e:
        acknowledge()
        sys.exit(exit_code_for(e))
    except BrokenPipeError:  # e.g. `torchx builtins | head -1`: stop quietly
        _silence_stdout()
        sys.exit(1)
    except Exception as e:
        _print_error(argv, e)
        sys.exit(1)


def _print_error(argv: Sequence[str], e: BaseException) -> None:
    if is_debug(argv):
        import traceback  # lazy: --log_level DEBUG errors only

        traceback.print_exc()
    try:
        sys.stdout.flush()
    except OSError:
        _silence_stdout()
    print(f"torchx: error: {_one_line(e)}", file=sys.stderr)
