"""pytest arguments that leave out the tests added since an older commit.

Issue 28 asks for a suite of at most 15 minutes "for today's coverage", the tiers later issues
add counting on top. This prints a ``--deselect NODE_ID`` pair (one word a line, as pytest reads
an ``@file``) for every test collected now whose function name (``def test_...`` in any file
under ``tests/``) the suite did not have at ``COMMIT``, so the old coverage can be timed on
today's code and infrastructure::

    .venv/bin/python bench/suite_at.py 9e3c52d > /tmp/suite_at.args
    make test PYTEST_ARGS=@/tmp/suite_at.args

Deselecting keeps pytest's usual collection. Naming the kept tests' ids instead does not: a
module named once per test is set up once per test (its module-scoped fixtures too, e.g. the
shared Celery stack), which made such a run slower than the whole suite.

Matching by function name keeps tests that moved to another module (e.g. to the 1.35
cluster's); a test renamed since is kept when :data:`RENAMED` names its old name, else it counts
as new. ``--ids`` prints the new tests' ids alone.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test_\w+)", re.M)

RENAMED = {
    "test_sigterm_to_the_launcher_cancels_its_app": (
        "test_docker_stop_of_the_launcher_cancels_its_app"  # 1.20 -> 1.35: ctr instead of docker
    ),
    "test_the_scan_sees_every_mode": "test_the_scan_sees_both_modes",
    "test_spawn_runs_the_command_in_its_own_process_group": (
        "test_spawn_runs_the_command_in_its_own_session"
    ),
    "test_trigger_that_cannot_reach_the_cluster_fails_the_task_and_leaves_the_app": (
        "test_trigger_that_cannot_reach_the_cluster_fails_the_task_and_cancels_the_app"
    ),
}
"""Today's name -> the old name of a test that was renamed (it counts as old coverage)."""


def names_at(commit: str) -> set[str]:
    """The test function names of ``tests/`` at ``commit``."""
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", commit, "tests"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    names: set[str] = set()
    for path in files:
        if not (Path(path).name.startswith("test_") and path.endswith(".py")):
            continue
        source = subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        names.update(TEST_DEF.findall(source))
    return names


def collected() -> list[str]:
    """The node ids pytest collects now (``--collect-only -q``)."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout
    return [line.strip() for line in out.splitlines() if "::" in line]


def function_of(node_id: str) -> str:
    """``tests/x.py::test_y[param]`` -> ``test_y``."""
    return node_id.rsplit("::", 1)[-1].split("[", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", help="the older commit (e.g. 9e3c52d, when issue 28 was filed)")
    parser.add_argument("--ids", action="store_true", help="the new tests' ids, one a line")
    args = parser.parse_args()
    old = names_at(args.commit)
    old |= {name for name, was in RENAMED.items() if was in old}
    ids = collected()
    new = [i for i in ids if function_of(i) not in old]
    for node_id in new:
        print(node_id if args.ids else f"--deselect\n{node_id}")
    print(f"suite_at: {len(ids) - len(new)} of {len(ids)} tests kept", file=sys.stderr)


if __name__ == "__main__":
    main()
