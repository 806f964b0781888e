"""Slurm job comments as label carriers, and the ``--export`` of ``env_allow`` (no Slurm runs)."""

from __future__ import annotations

from typing import Optional

import pytest

from torchx.schedulers._slurm._labels import (
    comment_labels,
    comment_with_labels,
    merge_labelled,
    sacct_labelled,
    user_comment,
)
from torchx.schedulers.labels import LABEL_PREFIX, LabelledApp, labels_metadata
from torchx.schedulers.slurm_scheduler import SlurmClient, SlurmScheduler, export_names
from torchx.specs.api import AppDef, AppState, Resource, Role

P = LABEL_PREFIX


class NoSinfo(SlurmClient):
    def partition_memmb(self, partition: Optional[str]) -> Optional[int]:
        return 4096


@pytest.mark.parametrize("user", [None, "", "my note", "a | b torchx-labels: not labels"])
def test_labels_round_trip_and_keep_the_users_comment(user: Optional[str]) -> None:
    labels = labels_metadata({"task": "train", "run": "manual__2025-01-01T00:00:00+00:00"})
    comment = comment_with_labels(user, labels)
    assert comment is not None
    assert comment_labels(comment) == labels
    assert user_comment(comment) == (user or "")
    assert comment_with_labels(user, {}) == user  # no labels: the comment is untouched


def test_added_labels_replace_same_keys_and_keep_the_others() -> None:
    first = comment_with_labels("note", {P + "a": "1", P + "b": "2"})
    second = comment_with_labels(first, {P + "b": "3", P + "c": "4", "not-a-label": "x"})
    assert comment_labels(second) == {P + "a": "1", P + "b": "3", P + "c": "4"}
    assert user_comment(second) == "note"


def test_a_comment_without_the_labels_word_has_no_labels() -> None:
    assert comment_labels("torchx-labels:") == {}
    assert comment_labels("xtorchx-labels:a=b") == {}
    assert comment_labels("torchx-labels:a=b c") == {}  # not the last word
    assert comment_labels(None) == {}


def test_accounting_labels_win_for_an_ended_job_squeue_still_shows() -> None:
    done = sacct_labelled(["7|CANCELLED by 0|n torchx-labels:a=1,p=true", "8+1|RUNNING|", "x"])
    assert set(done) == {"7"} and done["7"].labels == {P + "a": "1", P + "p": "true"}
    live = {
        "7": LabelledApp("7", AppState.CANCELLED, {P + "a": "1"}),
        "9": LabelledApp("9", AppState.RUNNING, {P + "a": "2"}),
    }
    merged = merge_labelled(done, live)
    assert [a.app_id for a in merged] == ["7", "9"]
    assert merged[0].labels == {P + "a": "1", P + "p": "true"}


def test_export_names_are_path_and_the_allowed_identifiers() -> None:
    env = {"PATH": "/bin", "HOME": "/h", "WANDB_KEY": "k", "AIRFLOW_CONN_X": "s", "A,B": "x"}
    assert export_names(env, None) is None
    assert export_names(env, []) == ["PATH"]
    assert export_names(env, ["WANDB_*", "HOME", "A,*"]) == ["HOME", "PATH", "WANDB_KEY"]
    assert export_names({}, []) == []


def _app() -> AppDef:
    role = Role("w", image="/c", entrypoint="echo", args=["hi"], resource=Resource(1, 0, 64))
    return AppDef("a", roles=[role], metadata=labels_metadata({"task": "t"}))


def test_dryrun_passes_labels_in_the_comment_and_only_allowed_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_API_TOKEN", "s3cr3t-value")
    monkeypatch.setenv("FAKE_KEEP", "kept-value")
    sched = SlurmScheduler("s", client=NoSinfo())
    req = sched.submit_dryrun(_app(), {"env_allow": ["FAKE_KEEP"], "comment": "hi"}).request
    assert "--comment=hi torchx-labels:task=t" in req.cmd
    assert "--export=FAKE_KEEP,PATH" in req.cmd
    script = req.materialize()
    assert "export SLURM_EXPORT_ENV=FAKE_KEEP,PATH,PYTHONUNBUFFERED,TORCHX_MAX_RETRIES\n" in script
    text = repr(req)
    assert "s3cr3t-value" not in text and "kept-value" not in text and "FAKE_API" not in text
    # nothing allowed and no PATH: --export=NONE
    monkeypatch.delenv("PATH")
    req = sched.submit_dryrun(_app(), {"env_allow": []}).request
    assert "--export=NONE" in req.cmd


def test_default_dryrun_exports_everything_as_torchx() -> None:
    req = SlurmScheduler("s", client=NoSinfo()).submit_dryrun(_app(), {}).request
    assert not any(a.startswith("--export") for a in req.cmd)
    assert "SLURM_EXPORT_ENV" not in req.materialize()
