# The two commands: `make run` (main job) and `make test`.
# Both create .venv if missing and install what they need from this repo's own files.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP_DEV := $(VENV)/.installed-dev
STAMP_RUN := $(VENV)/.installed-run
PYTEST_ARGS ?=
# test processes (pytest-xdist): the live tiers mostly wait on engines, clusters and stacks, so
# more processes than cores pay; tests that share an engine or a stack keep to one process
# (tests/conftest.py, --dist loadgroup). With 3 the workers' sums were even (1093-1109 s of a
# 1128 s run): the total bounds it. 4 were no faster (1131 s; every group slower) and flakier
PYTEST_WORKERS ?= 3
PYTEST := $(BIN)/pytest -q -rs --durations=25 -n $(PYTEST_WORKERS) --dist loadgroup
UNIT_MARKERS := not docker and not k8s and not registry and not slurm

.PHONY: run test lint typecheck unit bench clean venv goldens docs

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# torch==2.13.0 (CPU) installs from the machine's local wheel cache via the [examples] extra.
# compileall: editable sources get bytecode even where PYTHONDONTWRITEBYTECODE is set (as on
# these machines), so every `torchx` and supervisor start does not recompile the package.
$(STAMP_RUN): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[examples,airflow,kfp,docker,workflow]'
	$(PY) -m compileall -q core adapters
	touch $@

$(STAMP_DEV): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev,examples,mlflow,airflow,kfp,docker,kubernetes,workflow]'
	$(PY) -m compileall -q core adapters
	touch $@ $(STAMP_RUN)

venv: $(STAMP_DEV)

## make run: train a small DDP model (1 node x 2 workers) through `torchx run -s local_cwd dist.ddp`,
## then the example pipeline (pipelines/pipeline.yaml) locally, under Airflow (dag.test) and compiled
## for KFP and run with kfp.local, then the KFP example pipeline (pipelines/torchx_training.py)
## with kfp.local (in containers when the local Docker engine runs).
run: $(STAMP_RUN)
	PATH="$(CURDIR)/$(BIN):$$PATH" scripts/run-main-job.sh
	PATH="$(CURDIR)/$(BIN):$$PATH" scripts/pipeline-run.sh
	PATH="$(CURDIR)/$(BIN):$$PATH" PYTHON=$(CURDIR)/$(PY) scripts/kfp-local-run.sh

## make test: installs what the tests need (the venv with every extra; scripts/install-ci-deps.sh:
## docker-compose, a no-op once present), ruff + mypy on the packages, then the whole test suite,
## with the local Docker engine and Kubernetes cluster up where this machine can start them
## (scripts/infra; stopped afterwards)
test: $(STAMP_DEV)
	scripts/install-ci-deps.sh
	$(MAKE) --no-print-directory docs
	$(BIN)/ruff check core adapters tests bench examples pipelines dags scripts
	$(BIN)/ruff format --check core adapters tests bench examples pipelines dags scripts
	$(BIN)/mypy
	$(BIN)/lint-imports
	PATH="$(CURDIR)/$(BIN):$$PATH" scripts/infra/with-infra.sh $(PYTEST) \
	  --continue-on-collection-errors $(PYTEST_ARGS)

## make unit: the tests that need no infrastructure (no engine, cluster, Slurm or stack)
unit: $(STAMP_DEV)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(PYTEST) -m "$(UNIT_MARKERS)" $(PYTEST_ARGS)

## make docs: the docs site (mkdocs.yml, pages in docs/) built with --strict into build/docs-site:
## a broken link or anchor, or a page missing from the nav, fails it
docs: $(STAMP_DEV)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

lint: $(STAMP_DEV)
	$(BIN)/ruff check core adapters tests bench examples pipelines dags scripts
	$(BIN)/ruff format --check core adapters tests bench examples pipelines dags scripts
	$(BIN)/lint-imports

typecheck: $(STAMP_DEV)
	$(BIN)/mypy

## make bench: first the issue-29 launch table (bench/bench_launch.py: CLI and API side by side
## with TorchX 0.7.0 in one interleaved run, the Kubernetes 1.35 and Airflow rows, goal met or
## not per row), then the other benches
bench: $(STAMP_DEV)
	$(PY) -m compileall -q core adapters
	PATH="$(CURDIR)/$(BIN):$$PATH" $(PY) bench/bench_launch.py --k8s --rows airflow
	PATH="$(CURDIR)/$(BIN):$$PATH" $(PY) bench/bench_local.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(PY) bench/bench_airflow.py
	PATH="$(CURDIR)/$(BIN):$$PATH" scripts/infra/with-infra.sh $(PY) bench/bench_docker.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(PY) bench/bench_workflow.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(PY) bench/bench_kfp.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(PY) bench/bench_kubernetes.py
	PATH="$(CURDIR)/$(BIN):$$PATH" scripts/infra/with-infra.sh $(PY) bench/bench_kubernetes_live.py

## make goldens: rewrite the golden files (Kubernetes manifests, Slurm dry runs, KFP IR) from the
## current output; review the diff before committing. Tests never rewrite them (refused under CI).
GOLDEN_TESTS := tests/core/schedulers/kubernetes/test_kubernetes_golden.py \
	tests/core/schedulers/slurm/test_slurm_golden.py tests/pipelines/test_compile.py
goldens: $(STAMP_DEV)
	$(BIN)/pytest -q --regen-goldens $(GOLDEN_TESTS)
	git status --short -- tests/core/schedulers/kubernetes/golden tests/core/schedulers/slurm/golden \
	  tests/pipelines/golden

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
