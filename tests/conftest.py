"""Test-wide isolation: every test gets its own TORCHX_HOME and no .torchxconfig files.

Tests marked ``docker``/``k8s``/``registry``/``slurm`` get the address of that infrastructure in
the environment for their run only (a ``MonkeyPatch`` undone after the test's teardown), a skip
with the reason when it is missing, or in CI a failure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import _group_times
import _machine
import pytest
from _infra import (
    docker_host,
    in_ci,
    k8s_cluster,
    missing,
    registry,
    slurm_conf,
)

_INFRA_ENV = pytest.StashKey[pytest.MonkeyPatch]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--regen-goldens``: rewrite golden files from the current output (``make goldens``)."""
    parser.addoption(
        "--regen-goldens",
        action="store_true",
        help="rewrite golden files from the current output (make goldens); refused under CI",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Arms ``_golden.REGENERATE`` for ``--regen-goldens``; CI never rewrites a golden file.

    Under ``--dist loadgroup`` xdist hands the groups out in collection order (set by
    :func:`pytest_collection_modifyitems`), not sorted by size.
    """
    if _loadgroup(config) and hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if _loadgroup(config) and not hasattr(config, "workerinput"):  # the controller of a run
        _machine.start()
    if config.getoption("--regen-goldens"):
        if in_ci():
            raise pytest.UsageError("--regen-goldens is refused under CI=true")
        import _golden

        _golden.REGENERATE = True


@pytest.fixture(autouse=True)
def _isolate_torchx_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path / "torchx_home"
    monkeypatch.setenv("TORCHX_HOME", str(home))
    monkeypatch.setenv("TORCHXCONFIG", "")
    # replicas run `python`, `torchrun`, `torchx` from PATH: make them this venv's, however pytest
    # was started
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
    for var in ("TORCHX_TRACKERS", "TORCHX_PARENT_RUN_ID", "TORCHX_JOB_ID"):
        monkeypatch.delenv(var, raising=False)
    yield


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked ``docker``/``k8s`` get the engine/cluster, a skip with the reason, or in CI a failure."""
    for marker, probe, var in (
        ("docker", docker_host, "DOCKER_HOST"),
        ("k8s", k8s_cluster, "KUBECONFIG"),
        ("registry", registry, "TORCHX_FLOW_REGISTRY"),
        ("slurm", slurm_conf, "SLURM_CONF"),
    ):
        if item.get_closest_marker(marker) is None:
            continue
        found, why = probe()
        if found is None:
            missing(f"the {marker} infrastructure", why)
        item.stash.setdefault(_INFRA_ENV, pytest.MonkeyPatch()).setenv(var, found)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    """Restores what ``pytest_runtest_setup`` set, after every fixture's teardown ran."""
    try:
        return (yield)
    finally:
        env = item.stash.get(_INFRA_ENV, None)
        if env is not None:
            env.undo()


def _ci_failure(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Turns a skip into a failure under CI: CI runs every tier, so a skip there is a defect.

    Covers every kind of skip: ``pytest.skip``, ``skipif`` marks, ``pytest.importorskip`` at a
    module's top (a collection report) and skips from fixtures. ``xfail`` is left alone.
    """
    if not (in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true (every skip fails in CI): {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Under ``CI=true`` a skipped test (in any phase) is reported as failed, with its reason."""
    report = yield
    _ci_failure(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Under ``CI=true`` a module skipped at collection (``importorskip``) fails, with its reason."""
    report = yield
    _ci_failure(report)
    return report


_STACK_GROUPS = (
    ("test_dags_celery_faults", "stack2"),
    ("test_dags_compose", "stack2"),
    ("test_dags_celery", "stack"),
)
"""Modules (name prefixes) that run a whole Airflow stack, and their group: two groups, so at
most two stacks run at a time (CPU), each on free loopback ports and its own namespace, about
as long as each other (the Celery tests + lineage; the fault tests + docker-compose.yml)."""

_FIRST = (
    "stack",
    "stack2",
    "k8s",
    "k8s_jobset",
    "k8s_adapters",
    "slurm",
    "kfp_local",
)
"""The longest groups, handed to the workers first (longest first), the stacks at once."""

_CORE_TESTS = Path(__file__).resolve().parent / "core"

_KFP_DIRS = ("pipelines", "kfp")
"""Test folders whose ``docker`` tests run kfp.local containers (tests/pipelines, adapters/kfp)."""


def _xdist_group(item: pytest.Item) -> str:
    """The ``pytest-xdist`` group of a test: tests of one group run one after another.

    The modules of whole Airflow stacks share one of two groups (:data:`_STACK_GROUPS`); the
    tests of each shared engine or cluster share theirs (the single-node cluster: three groups;
    the local Slurm: one); every other module is a group of its own (its module-scoped fixtures
    start once).
    """
    module = item.path.stem
    for prefix, group in _STACK_GROUPS:
        if module.startswith(prefix):
            return group
    # kfp.local's DockerRunner containers: test_kfp_local checks that none is left behind
    if item.get_closest_marker("docker") is not None and item.path.parent.name in _KFP_DIRS:
        return "kfp_local"
    for marker in ("k8s", "slurm"):
        if item.get_closest_marker(marker) is not None:
            # the one-node cluster's tests in three groups, each app in a namespace of its own:
            # the adapters', DAGs' and deploy's; the scheduler's and CLI's (tests/core), with
            # the JobSet and Kueue modules apart from the rest
            if marker == "k8s" and not item.path.is_relative_to(_CORE_TESTS):
                return "k8s_adapters"
            if marker == "k8s" and module.startswith(("test_live_jobset", "test_live_kueue")):
                return "k8s_jobset"
            return marker
    return str(item.path)


def _loadgroup(config: pytest.Config) -> bool:
    """Whether the run is ``--dist loadgroup``: in the controller, or in a worker (xdist sets
    ``dist`` to ``no`` there and keeps a ``loadgroup`` flag; the groups are made in the workers,
    which collect)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return False
    return config.getoption("dist", "no") == "loadgroup" or bool(
        getattr(config.option, "loadgroup", False)
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``pytest -n N --dist loadgroup`` puts each test in its group (:func:`_xdist_group`)
    and orders the groups as the workers get them: the longest first (:data:`_FIRST`), then
    the groups with the most ``slow`` tests, then the most tests. Tests of a group keep
    their order. xdist's own reordering (by size only) is off (:func:`pytest_configure`):
    it handed the stacks out after a dozen unit-test modules and the cluster tiers, so they
    started minutes late and bounded the run. First of the hooks: xdist's own (in each worker)
    turns the marks into the groups it schedules by.
    """
    if not _loadgroup(config):
        return
    groups = {item: _xdist_group(item) for item in items}
    size: dict[str, int] = {}
    slow: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        group = groups[item]
        size[group] = size.get(group, 0) + 1
        slow[group] = slow.get(group, 0) + (item.get_closest_marker("slow") is not None)
        first_seen.setdefault(group, index)

    def dispatch(group: str) -> tuple[int, int, int, int]:
        rank = _FIRST.index(group) if group in _FIRST else len(_FIRST)
        return rank, -slow[group], -size[group], first_seen[group]

    items.sort(key=lambda item: dispatch(groups[item]))
    for item in items:
        _put_in_group(item, groups[item])


def _put_in_group(item: pytest.Item, group: str) -> None:
    """Marks ``item`` with its group and, where xdist cannot, appends ``@group`` to its id.

    xdist (3.8) tells the scheduler a test's group by setting ``item._nodeid`` to
    ``nodeid@group``; pytest 9 keeps the id in ``item._id`` and ignores that, so every test
    ran as a group of its own (a stack module started its stack on each worker). The id is
    set here the same way, once.
    """
    item.add_marker(pytest.mark.xdist_group(group))
    if "@" in item.nodeid.rpartition("]")[2] or not hasattr(item, "_id"):
        return
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:  # an older pytest: xdist's own _nodeid works there
        return
    item._id = coerce_node_id(f"{item.nodeid}@{group}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Sums each xdist group's time (:mod:`_group_times`; in the controller under xdist)."""
    _group_times.record(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The longest xdist groups, beside ``--durations`` (only when the tests had groups).

    Then the machine's speed and load (:mod:`_machine`): runs of different hours compare.
    """
    _group_times.summary(terminalreporter)
    _machine.summary(terminalreporter)
