"""CLI errors and the one-line rendering of exceptions (private)."""

from __future__ import annotations

__all__ = ["CliError", "exception_message"]


class CliError(SystemExit):
    """A user mistake the CLI reports as ``torchx: error: <message>`` with ``exit_code``.

    It is a ``SystemExit`` (with ``code == exit_code``), as TorchX's commands ``sys.exit(1)``
    on these errors: code that calls a command's ``run`` directly sees the same exception type.
    ``torchx.cli.main`` prints the message before exiting.

    Args:
        message: one line saying what is wrong and what to do.
        exit_code: the process exit code (1 by default).
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.code = exit_code
        self.exit_code = exit_code

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def exception_message(e: BaseException) -> str:
    """Returns the text of ``e`` without the quotes that ``str(KeyError)`` adds.

    Args:
        e: the exception.

    Returns:
        ``e.args[0]`` for a single string argument, the string arguments joined by a space when
        there are several (TorchX raises ``ValueError(msg, hint)``), else ``str(e)``.
    """
    args = e.args
    if args and all(isinstance(a, str) for a in args):
        return " ".join(str(a) for a in args).strip()
    return str(e).strip()
