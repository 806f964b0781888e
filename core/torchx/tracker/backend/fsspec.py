"""A tracker that stores runs as small JSON files on any fsspec filesystem.

Layout under the root (``b32(x)`` is the base32 of the UTF-8 run id, so ids containing ``://`` or
``/`` stay one path segment)::

    b32(run)/metadata/<time_ns>-<unique>     {"metadata": {...}}
    b32(run)/artifacts/<time_ns>-<unique>    {"name": ..., "path": ..., "metadata": ...}
    b32(run)/sources/b32(source)             one artifact name per line ("" = the whole run)
    b32(source)/descendants/b32(run)         index of children, for lineage

Every file is written to a temporary name and moved into place, so concurrent writers (replicas,
pipeline steps) never leave a torn file; on a local filesystem, updates of a ``sources`` file are
serialised with a file lock.

Configure it with a directory or URL (``TORCHX_TRACKER_FSSPEC_CONFIG=/tmp/tracker_data`` or
``memory://runs``) or, as in TorchX, with the path of a ``key=value`` file holding ``protocol``,
``root_path`` and extra filesystem options.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from torchx.tracker.api import (
    Lineage,
    TrackerArtifact,
    TrackerBase,
    TrackerSource,
    build_lineage,
)

__all__ = ["FsspecTracker", "create", "generate_filename"]

_TMP_PREFIX = ".tmp-"


def generate_filename() -> str:
    """Returns a new entry file name that sorts by creation time and is unique across writers.

    ``{time_ns:020d}-{pid}-{8 hex digits}``.
    """
    return f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _encode_torchx_run_id(run_id: str) -> str:
    return base64.b32encode(run_id.encode("utf-8")).decode("ascii")


def _decode_torchx_run_id(encoded: str) -> str:
    return base64.b32decode(encoded.encode("ascii")).decode("utf-8")


def _check_artifact_name(name: str | None, what: str = "artifact name") -> None:
    if name is None:
        return
    parts = name.replace("\\", "/").split("/")
    if not name or name.startswith("/") or ".." in parts or any(c in name for c in "\0\r\n"):
        raise ValueError(
            f"invalid {what} {name!r}: use a non-empty relative name without '..' segments, a"
            " leading '/', or line breaks"
        )


def _read_config(config_file: str) -> dict[str, Any]:
    """Reads ``key=value`` lines (``#`` comments; dotted keys nest) into a dict.

    Args:
        config_file: a path or fsspec URL (``file:///...``, ``s3://...``).

    Raises:
        ValueError: a line is not ``key=value``, or a dotted key has an empty part.
    """
    import fsspec  # lazy: ~170 ms, only when the tracker reads or writes

    config: dict[str, Any] = {}
    with fsspec.open(config_file, "rt") as f:
        text = f.read()
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"line {raw!r} of tracker config {config_file} is not `key=value`")
        node = config
        *parents, leaf = [k.strip() for k in key.split(".")]
        if not all([*parents, leaf]):
            raise ValueError(
                f"key {key.strip()!r} of tracker config {config_file} has an empty part"
            )
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value.strip()
    return config


class FsspecTracker(TrackerBase):
    """A tracker backed by an fsspec filesystem.

    Args:
        fs: the fsspec filesystem.
        root_dir: an existing directory on ``fs`` that holds the runs.
    """

    def __init__(self, fs: Any, root_dir: str) -> None:
        if not fs.isdir(root_dir):
            raise ValueError(f"tracker root `{root_dir}` does not exist or is not a directory")
        self._fs = fs
        self._root = str(root_dir).rstrip("/") or "/"
        self._local = "file" in _protocols(fs)

    # -- paths and atomic writes -------------------------------------------------------------

    def _run_dir(self, run_id: str) -> str:
        return f"{self._root}/{_encode_torchx_run_id(run_id)}"

    def _write_atomic(self, path: str, data: str) -> None:
        parent = path.rsplit("/", 1)[0]
        self._fs.makedirs(parent, exist_ok=True)
        tmp = f"{parent}/{_TMP_PREFIX}{uuid.uuid4().hex}"
        with self._fs.open(tmp, "w") as f:
            f.write(data)
        self._fs.mv(tmp, path)

    def _new_entry(self, run_id: str, kind: str, payload: Mapping[str, object]) -> None:
        name = generate_filename()
        self._write_atomic(f"{self._run_dir(run_id)}/{kind}/{name}", json.dumps(payload))

    def _entries(self, run_id: str, kind: str) -> Iterator[dict[str, Any]]:
        folder = f"{self._run_dir(run_id)}/{kind}"
        if not self._fs.isdir(folder):
            return
        for path in sorted(self._fs.ls(folder, detail=False)):
            if path.rsplit("/", 1)[-1].startswith(_TMP_PREFIX):
                continue
            with self._fs.open(path, "r") as f:
                yield json.loads(f.read())

    @contextlib.contextmanager
    def _locked(self, path: str) -> Iterator[None]:
        if not self._local:
            yield
            return
        from filelock import FileLock  # lazy: ~30 ms, only when writing

        self._fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        with FileLock(f"{path}.lock"):
            yield

    def _ls_names(self, folder: str) -> list[str]:
        if not self._fs.isdir(folder):
            return []
        names = (p.rstrip("/").rsplit("/", 1)[-1] for p in self._fs.ls(folder, detail=False))
        return sorted(n for n in names if not n.startswith(".") and not n.endswith(".lock"))

    # -- TrackerBase ---------------------------------------------------------------------------

    def add_artifact(
        self, run_id: str, name: str, path: str, metadata: Mapping[str, object] | None = None
    ) -> None:
        """Records an artifact; the last one recorded under a name wins."""
        _check_artifact_name(name)
        payload = {"name": name, "path": path, "metadata": dict(metadata or {})}
        self._new_entry(run_id, "artifacts", payload)

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        """Returns the run's artifacts by name."""
        out: dict[str, TrackerArtifact] = {}
        for entry in self._entries(run_id, "artifacts"):
            out[entry["name"]] = TrackerArtifact(entry["name"], entry["path"], entry["metadata"])
        return out

    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        """Adds metadata (merged over earlier entries when read)."""
        self._new_entry(run_id, "metadata", {"metadata": kwargs})

    def metadata(self, run_id: str) -> Mapping[str, object]:
        """Returns the run's merged metadata."""
        merged: dict[str, object] = {}
        for entry in self._entries(run_id, "metadata"):
            merged.update(entry["metadata"])
        return merged

    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records ``source_id`` (or one of its artifacts) as a source of ``run_id``."""
        _check_artifact_name(artifact_name)
        path = f"{self._run_dir(run_id)}/sources/{_encode_torchx_run_id(source_id)}"
        with self._locked(path):
            names = self._source_names(path)
            line = artifact_name or ""
            if line not in names:
                self._write_atomic(path, "".join(f"{n}\n" for n in [*names, line]))
        child = f"{self._run_dir(source_id)}/descendants/{_encode_torchx_run_id(run_id)}"
        if not self._fs.exists(child):
            self._write_atomic(child, "")

    def _source_names(self, path: str) -> list[str]:
        if not self._fs.exists(path):
            return []
        with self._fs.open(path, "r") as f:
            return f.read().splitlines()

    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        """Returns the run's sources, optionally only those naming ``artifact_name``."""
        folder = f"{self._run_dir(run_id)}/sources"
        out: list[TrackerSource] = []
        for encoded in self._ls_names(folder):
            source = _decode_or_none(encoded)
            if source is None:
                continue
            for name in self._source_names(f"{folder}/{encoded}"):
                art = name or None
                if artifact_name is None or art == artifact_name:
                    out.append(TrackerSource(source, art))
        return out

    def _children(self, run_id: str) -> list[tuple[str, str | None]]:
        out: list[tuple[str, str | None]] = []
        for encoded in self._ls_names(f"{self._run_dir(run_id)}/descendants"):
            child = _decode_or_none(encoded)
            if child is None:
                continue
            names = [s.artifact_name for s in self.sources(child) if s.source_run_id == run_id]
            out.extend((child, n) for n in names or [None])
        return out

    def lineage(self, run_id: str) -> Lineage:
        """Returns the parents and descendants of ``run_id``, transitively, with artifacts."""
        return build_lineage(self, run_id, children_of=self._children)

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """Returns every run id, or only the children of ``parent_run_id=`` when given."""
        parent = kwargs.get("parent_run_id")
        runs = [r for r in map(_decode_or_none, self._ls_names(self._root)) if r is not None]
        if parent is None:
            return runs
        encoded = _encode_torchx_run_id(parent)
        return [r for r in runs if self._fs.exists(f"{self._run_dir(r)}/sources/{encoded}")]


def _decode_or_none(encoded: str) -> str | None:
    try:
        return _decode_torchx_run_id(encoded)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _protocols(fs: Any) -> tuple[str, ...]:
    proto = getattr(fs, "protocol", ())
    return (proto,) if isinstance(proto, str) else tuple(proto)


def _is_file(config: str) -> bool:
    """Whether ``config`` (a path or fsspec URL) names an existing file (a config file)."""
    if "://" not in config:
        return os.path.isfile(config)
    import fsspec  # lazy: ~170 ms, only when the tracker reads or writes

    try:
        fs, path = fsspec.core.url_to_fs(config)
        return bool(fs.isfile(path))
    except (ImportError, ValueError, OSError):
        return False


def create(config: str | None) -> FsspecTracker:
    """Creates an :py:class:`FsspecTracker` (the ``fsspec`` entry point of ``torchx.tracker``).

    Args:
        config: a directory or fsspec URL for the root (created if missing), or the path or
            URL of an existing ``key=value`` file with ``protocol``, ``root_path`` and filesystem
            options.

    Returns:
        The tracker.

    Raises:
        ValueError: no config, or a config file missing ``protocol``/``root_path``.
    """
    import fsspec  # lazy: ~170 ms, only when the tracker reads or writes

    if not config:
        raise ValueError(
            "the fsspec tracker needs a config: a directory or fsspec URL"
            " (TORCHX_TRACKER_FSSPEC_CONFIG=/tmp/tracker_data) or a key=value file with"
            " protocol= and root_path="
        )
    if _is_file(config):
        options = _read_config(config)
        missing = [k for k in ("protocol", "root_path") if k not in options]
        if missing:
            raise ValueError(f"Missing required key(s) {missing} in tracker config: {config}")
        protocol, root = options.pop("protocol"), options.pop("root_path")
        fs = fsspec.filesystem(protocol, **options)
    else:
        fs, root = fsspec.core.url_to_fs(config)
    fs.makedirs(root, exist_ok=True)
    return FsspecTracker(fs, root)
