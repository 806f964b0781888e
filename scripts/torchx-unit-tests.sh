#!/usr/bin/env bash
# Runs TorchX's own unit tests (torchx/**/test/*_test.py of a TorchX checkout) against OUR torchx
# package and prints the pass/fail counts. It fetches nothing: pass the path of a TorchX checkout
# (the directory that holds torchx/). TorchX's test directories are copied into a temporary
# directory and grafted onto our packages' __path__ (torchx.specs.test, torchx.cli.test, ...), so
# the tests import our torchx and never TorchX's. Test directories of parts we don't ship
# (examples, torchx.distributed, the components integration tests) are skipped and counted.
#
# Usage: scripts/torchx-unit-tests.sh TORCHX_CHECKOUT [pytest args...]
#   SEL="specs/test cli/test/cmd_run_test.py"  runs only those paths (relative to torchx/).
#   PYTHON=...  the interpreter (default: .venv/bin/python of this repo).
#   LOG=file    keeps pytest's full output (tracebacks) in that file.
# See docs/torchx-differences.md for the counts and the differences we keep on purpose.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
src="${1:?usage: scripts/torchx-unit-tests.sh TORCHX_CHECKOUT [pytest args...]}"
shift
src="$(cd "$src" && pwd)"
[ -d "$src/torchx" ] || { echo "torchx-unit-tests: $src has no torchx/ directory" >&2; exit 2; }
py="${PYTHON:-$repo/.venv/bin/python}"
skip_dirs="examples distributed components/integration_tests"

work="$(mktemp -d -t torchx-unit-tests-XXXXXX)"
trap 'rm -rf "$work"' EXIT
tests="$work/tests"
plugin="$work/plugin"
mkdir -p "$tests/torchx" "$plugin"

skipped=0
while IFS= read -r d; do
    d="${d#./}"
    for x in $skip_dirs; do
        case "$d" in "$x" | "$x"/*)
            n="$(find "$src/torchx/$d" -maxdepth 1 -name '*_test.py' | wc -l)"
            skipped=$((skipped + n))
            echo "skipped (not shipped): torchx/$d ($n test files)"
            continue 2 ;;
        esac
    done
    mkdir -p "$tests/torchx/$d"
    cp -r "$src/torchx/$d/." "$tests/torchx/$d/"
done < <(cd "$src/torchx" && find . -type d -name test | sort)

# Empty __init__.py files above the test packages, so pytest names the modules
# torchx.<pkg>.test.<module>; the plugin imports our packages first, so these are never used.
find "$tests/torchx" -type d ! -path '*/test' ! -path '*/test/*' -exec touch {}/__init__.py \;

cat >"$plugin/_torchx_test_overlay.py" <<'PY'
"""Grafts the copied TorchX test packages onto our torchx packages' __path__."""
import importlib
import os
import sys

root = os.environ["TORCHX_TESTS_DIR"]
import torchx

if os.path.realpath(torchx.__file__).startswith(os.path.realpath(root)):
    sys.exit("torchx-unit-tests: imported the copied tree instead of our torchx")
for dirpath, _dirs, _files in os.walk(os.path.join(root, "torchx")):
    if os.path.basename(dirpath) != "test":
        continue
    parent = os.path.dirname(dirpath)
    name = os.path.relpath(parent, root).replace(os.sep, ".")
    try:
        pkg = importlib.import_module(name)
    except ImportError as e:
        print(f"torchx-unit-tests: no package {name} ({e})", file=sys.stderr)
        continue
    if parent not in pkg.__path__:
        pkg.__path__.append(parent)
PY

targets=()
if [ -n "${SEL:-}" ]; then
    for x in $SEL; do targets+=("$tests/torchx/$x"); done
else
    targets=("$tests/torchx")
fi

log="$work/pytest.log"
set +e
(cd "$plugin" && TORCHX_TESTS_DIR="$tests" PYTHONPATH="$plugin" "$py" -m pytest \
    -p _torchx_test_overlay -p no:randomly -p no:cacheprovider -o addopts="" \
    --rootdir="$tests" --continue-on-collection-errors -q -rfE --tb=line \
    "${targets[@]}" "$@") >"$log" 2>&1
rc=$?
set -e
if [ -n "${LOG:-}" ]; then cp "$log" "$LOG"; fi
grep -E '^(FAILED|ERROR) ' "$log" | sed -E 's#^(FAILED|ERROR) [^ ]*/tests/torchx/#\1 torchx/#' || true
summary="$(tail -n 1 "$log")"
echo "skipped test files (not shipped): $skipped"
echo "TorchX unit tests against $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo torchx-flow):"
echo "  $summary"
exit "$rc"
