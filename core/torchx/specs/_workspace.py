"""``Workspace``: local projects mapped into a job's image (re-exported from ``specs.api``)."""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Workspace"]


@dataclass
class Workspace:
    """Maps local paths (files or directories) to sub-directories of the job's workspace.

    Args:
        projects: ``{local path: target sub-directory}``; ``""`` means the root.
    """

    projects: dict[str, str]

    def __bool__(self) -> bool:
        return bool(self.projects)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Workspace):
            return NotImplemented
        return self.projects == other.projects

    def __hash__(self) -> int:
        return hash(frozenset(self.projects.items()))

    def is_unmapped_single_project(self) -> bool:
        """Returns True if there is exactly one project and it maps to the root."""
        return len(self.projects) == 1 and not next(iter(self.projects.values()))

    def merge_into(self, outdir: str | Path) -> None:
        """Copies every project (file or directory tree) to ``outdir/target``.

        Args:
            outdir: the directory to merge into (created if missing).
        """
        import shutil  # lazy: ~2 ms of every ``torchx run`` start, for workspaces only
        from pathlib import Path  # lazy: ~3 ms of every ``torchx run`` start (urllib, ipaddress)

        out = Path(outdir)
        for src, dst in self.projects.items():
            source = Path(src).expanduser()
            target = out / dst if dst else out
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
                continue
            if not dst or dst.endswith("/") or target.is_dir():
                target = target / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)

    @staticmethod
    def from_str(workspace: str | None) -> Workspace:
        """Parses a workspace string.

        Args:
            workspace: empty or None for an empty workspace; a path for a single
                unmapped project; or a YAML mapping ``{src: dst}`` for several
                projects (a None target means the root).

        Returns:
            The workspace.
        """
        if not workspace:
            return Workspace({})
        if _plain_path(workspace):  # what YAML would give back as is (no yaml import)
            return Workspace({workspace: ""})
        import yaml  # lazy: yaml ~17 ms; import torchx.specs must not load it

        parsed = yaml.safe_load(workspace)
        if isinstance(parsed, dict):
            return Workspace({str(k): "" if v is None else str(v) for k, v in parsed.items()})
        if isinstance(parsed, str):
            return Workspace({parsed: ""})
        return Workspace({workspace: ""})

    def __str__(self) -> str:
        if self.is_unmapped_single_project():
            return next(iter(self.projects))
        return ";".join(src if not dst else f"{src}:{dst}" for src, dst in self.projects.items())


_YAML_SPECIAL = frozenset(":#{}[],&*!|>'\"%@`\n\r\t")


def _plain_path(text: str) -> bool:
    """True when ``text`` has nothing YAML would parse as structure, quoting or a comment."""
    return text == text.strip() and not _YAML_SPECIAL.intersection(text) and text[0] not in "-?"
