"""``WorkflowError``: everything wrong with a pipeline definition, each issue located."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Issue", "WorkflowError", "did_you_mean"]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """Returns ``" (did you mean `x`?)"`` for the closest of ``known``, or ``""``.

    Args:
        name: the unknown name.
        known: the valid names.
    """
    import difflib  # lazy: difflib ~14 ms here, error messages only

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


@dataclass(frozen=True)
class Issue:
    """One problem in a pipeline definition.

    Attributes:
        message: what is wrong and what to do.
        step: the step it is in ("" for pipeline-level issues).
        line: the line in the pipeline file (0 when unknown).
    """

    message: str
    step: str = ""
    line: int = 0

    def format(self, source: str) -> str:
        """Returns ``file:line: step `s`: message`` (parts left out when unknown).

        Args:
            source: the pipeline file ("" for a pipeline built in Python).
        """
        where = source or "pipeline"
        if self.line:
            where += f":{self.line}"
        step = f"step `{self.step}`: " if self.step else ""
        return f"{where}: {step}{self.message}"


class WorkflowError(ValueError):
    """A pipeline definition is invalid; ``str()`` is the first issue (and how many more).

    Args:
        issues: the problems found.
        source: the pipeline file ("" for Python).
    """

    def __init__(self, issues: Sequence[Issue], source: str = "") -> None:
        self.issues = list(issues)
        self.source = source
        first = self.issues[0].format(source) if self.issues else f"{source}: invalid pipeline"
        more = len(self.issues) - 1
        super().__init__(first + (f" (and {more} more issue(s))" if more > 0 else ""))

    def lines(self) -> list[str]:
        """Returns every issue formatted on its own line."""
        return [i.format(self.source) for i in self.issues]
