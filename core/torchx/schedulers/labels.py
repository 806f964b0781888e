"""App labels: caller-chosen ``key=value`` pairs an app carries on its scheduler's objects.

An orchestrator marks the apps it launches with its own identity (the Airflow operator: DAG,
task, run and map index), so that it can find them again after its process died, even before
it could record the app handle anywhere (:func:`torchx.runner.labels.find_apps`).

Labels travel in ``AppDef.metadata`` under keys :data:`LABEL_PREFIX` + ``key``
(``LaunchRequest(labels=...)`` puts them there). Schedulers that support labels set the class
attribute ``supports_app_labels = True``, copy those entries onto their objects (``local_docker``:
container labels; ``kubernetes``: Job and pod labels) and return them in
``DescribeAppResponse.metadata``. A scheduler may also offer ``list_by_labels(labels, cfg)``
(a backend-side filter, e.g. a Kubernetes label selector); otherwise
:func:`~torchx.runner.labels.find_apps` lists the apps and describes each one.
``Scheduler.set_app_labels(app_id, labels)`` adds labels to an app after launch
(:func:`~torchx.runner.labels.set_app_labels`; ``kubernetes`` patches the Jobs or the Volcano
Job, ``local_docker`` keeps them on marker volumes); ``describe`` and ``list_by_labels`` then
return them with the others (``slurm`` keeps them in the job comment). Adding labels to a new
scheduler means exactly these four steps.

Keys and values are valid Kubernetes label names and values (at most 63 characters of
``[A-Za-z0-9-_.]``, alphanumeric at both ends): :func:`label_value` turns any string into
one, deterministically, adding a short hash when it had to change it, so two different
inputs never share a value.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchx.specs.api import AppState

__all__ = [
    "LABEL_PREFIX",
    "LabelledApp",
    "app_labels",
    "check_label_key",
    "label_value",
    "labels_metadata",
    "matches",
]

LABEL_PREFIX = "labels.torchx.pytorch.org/"
"""The prefix of the ``AppDef.metadata`` keys (and scheduler label keys) of app labels."""

_MAX = 63
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")
_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def check_label_key(key: str) -> str:
    """Returns ``key`` if it is a valid label name, else raises.

    Raises:
        ValueError: one line naming the key and the rule.
    """
    if not isinstance(key, str) or not _NAME.match(key):
        raise ValueError(
            f"app label key {key!r} is invalid: use 1-63 characters of [A-Za-z0-9-_.],"
            " starting and ending with a letter or digit"
        )
    return key


def label_value(value: object) -> str:
    """Returns ``value`` as a valid label value (itself when it already is one).

    Other values get their invalid characters replaced by ``-``, are cut, and end with
    ``-`` + 8 hex digits of their SHA-1, so distinct inputs keep distinct values.

    Example: ``manual__2025-01-01T00:00:00+00:00`` becomes
    ``manual__2025-01-01T00-00-00-00-00-<hash>``.
    """
    text = str(value)
    if text == "" or _NAME.match(text):
        return text
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    clean = _BAD.sub("-", text).strip("-_.")[: _MAX - 9].strip("-_.")
    return f"{clean}-{digest}" if clean else digest


def labels_metadata(labels: Mapping[str, object]) -> dict[str, str]:
    """Returns the ``AppDef.metadata`` entries of ``labels`` (keys checked, values made safe)."""
    return {LABEL_PREFIX + check_label_key(k): label_value(v) for k, v in labels.items()}


def app_labels(metadata: Mapping[str, object]) -> dict[str, str]:
    """Returns the label entries of ``metadata`` (full keys, ``LABEL_PREFIX`` included)."""
    return {k: str(v) for k, v in metadata.items() if k.startswith(LABEL_PREFIX)}


@dataclasses.dataclass(frozen=True)
class LabelledApp:
    """One row of a scheduler's ``list_by_labels``: app id, state and its label entries.

    Args:
        app_id: the scheduler's app id.
        state: the app's state.
        labels: its label entries (full keys, :data:`LABEL_PREFIX` included).
    """

    app_id: str
    state: AppState
    labels: Mapping[str, str]


def matches(found: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether ``found`` holds every entry of ``wanted``."""
    return all(found.get(k) == v for k, v in wanted.items())
