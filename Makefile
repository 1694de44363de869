# The one gate: `make test` (what .ci/run calls) installs the pinned toolchain into .venv, then
# runs lint, template validation, `sam build` with an import check of what it built, and
# pytest, in that order, stopping at the first failure. Every tool comes from
# requirements/dev.lock: nothing installed by hand is relied on.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DELETE_ON_ERROR:
.DEFAULT_GOAL := test
MAKEFLAGS += --no-builtin-rules

# Python 3.13 through pyenv: with this PYENV_VERSION the shims make `python3.13` visible (plain
# `python3` stays 3.11). It is exported because `sam build` looks `python3.13` up on PATH for
# the python3.13 runtime.
export PYENV_VERSION := 3.13.0:3.11.7
PY := python3.13
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export AWS_DEFAULT_REGION ?= us-east-1
export SAM_CLI_TELEMETRY := 0
# Otherwise SAM CLI asks PyPI for a newer version of itself on every command.
export SAM_CLI_DISABLE_VERSION_CHECK := 1

BUILD_DIR := build
TRANSFORMED := $(BUILD_DIR)/transformed.json

# Top-level development requirements; `make lock` resolves them, with the project's own
# dependencies and its `local` extra, into requirements/dev.lock.
LOCK_REQUIREMENTS := aws-sam-cli aws-sam-translator cfn-lint 'moto[server]' ruff mypy pytest \
	'boto3-stubs[sqs]'

# LocalStack, the second emulator (`make test-localstack`): its own venv under build/, from
# requirements/localstack.lock (`make lock-localstack` regenerates it from localstack.txt).
LOCALSTACK_VENV := $(BUILD_DIR)/localstack-venv
LOCALSTACK_STAMP := $(LOCALSTACK_VENV)/.installed
# The tests marked `emulator` in these directories (tests/emulation.py) run against LocalStack.
LOCALSTACK_TESTS := tests/integration tests/local tests/operator_cli

.PHONY: venv lint validate build unit integration template pytest test demo bench bench-smoke lock \
	localstack-venv test-localstack lock-localstack clean

venv: $(STAMP)

$(STAMP): requirements/dev.lock pyproject.toml
	rm -rf $(VENV)
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements/dev.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# - samconfig's default environment turns `--lint` on for `sam validate`, which then runs
#   cfn-lint only; its `translate` environment runs the SAM translator's validation instead.
# - The transformed template is linted with W3037 (unknown IAM action) off: SAM's own
#   SQSPollerPolicy lists sqs:ChangeMessageVisibilityBatch and sqs:DeleteMessageBatch, which
#   IAM does not know (the single-message actions authorise the batch APIs). template.yaml
#   and the example are linted with every rule.
validate: $(STAMP)
	$(BIN)/sam validate --lint --template-file template.yaml
	$(BIN)/sam validate --config-env translate --template-file template.yaml \
		--region $(AWS_DEFAULT_REGION)
	$(BIN)/cfn-lint -- template.yaml
	mkdir -p $(BUILD_DIR)
	$(BIN)/python tools/transform_template.py template.yaml -o $(TRANSFORMED)
	$(BIN)/cfn-lint --ignore-checks W3037 -- $(TRANSFORMED)
	$(BIN)/cfn-lint -- examples/nested-app.yaml

# No container: the python3.13 builder runs pip with the python3.13 that PYENV_VERSION exposes.
build: $(STAMP)
	$(BIN)/sam build --template-file template.yaml
	$(BIN)/python tools/check_build.py

unit: $(STAMP)
	$(BIN)/pytest tests/unit

integration: $(STAMP)
	$(BIN)/pytest tests/integration

template: $(STAMP)
	$(BIN)/pytest tests/template

pytest: $(STAMP)
	$(BIN)/pytest

test: $(STAMP)
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory validate
	$(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory pytest
	$(MAKE) --no-print-directory bench-smoke

localstack-venv: $(LOCALSTACK_STAMP)

$(LOCALSTACK_STAMP): requirements/localstack.lock
	rm -rf $(LOCALSTACK_VENV)
	$(PY) -m venv $(LOCALSTACK_VENV)
	$(LOCALSTACK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		-r requirements/localstack.lock
	touch $@

# Starts LocalStack on a free port of 127.0.0.1, runs the `emulator` tests against it, stops it
# by its pid whatever happens (tools/localstack.py). Fails if LocalStack does not come up or no
# test ran.
test-localstack: $(STAMP) $(LOCALSTACK_STAMP)
	$(BIN)/python tools/localstack.py --python $(LOCALSTACK_VENV)/bin/python -- \
		$(BIN)/pytest -m emulator --emulator=localstack $(LOCALSTACK_TESTS)

lock-localstack:
	rm -rf $(BUILD_DIR)/lock-localstack-venv
	$(PY) -m venv $(BUILD_DIR)/lock-localstack-venv
	$(BUILD_DIR)/lock-localstack-venv/bin/python -m pip install --quiet \
		--disable-pip-version-check -r requirements/localstack.txt
	{ echo '# Pinned LocalStack environment (Python 3.13) for make test-localstack. Regenerate with: make lock-localstack'; \
	  $(BUILD_DIR)/lock-localstack-venv/bin/python -m pip freeze --disable-pip-version-check; \
	} > requirements/localstack.lock.tmp
	mv requirements/localstack.lock.tmp requirements/localstack.lock
	rm -rf $(BUILD_DIR)/lock-localstack-venv

# The README's first command: the replay on an embedded SQS emulator, no AWS account needed.
# DEMO_ARGS passes options through, e.g. make demo DEMO_ARGS="--messages 1000 --poison-rate 0.1".
DEMO_ARGS ?=
demo: $(STAMP)
	$(BIN)/dlq-replay demo $(DEMO_ARGS)

# Benchmarks: `make bench` for the figures, `make bench-smoke` (part of `make test`) so the
# benchmark code keeps running.
bench: $(STAMP)
	$(BIN)/python bench/bench_replay.py

bench-smoke: $(STAMP)
	$(BIN)/python bench/bench_replay.py --smoke

# Regenerates requirements/dev.lock from a clean, throwaway venv.
lock:
	rm -rf $(BUILD_DIR)/lock-venv
	$(PY) -m venv $(BUILD_DIR)/lock-venv
	$(BUILD_DIR)/lock-venv/bin/python -m pip install --quiet --disable-pip-version-check \
		--upgrade pip
	$(BUILD_DIR)/lock-venv/bin/python -m pip install --quiet --disable-pip-version-check \
		'.[local]' $(LOCK_REQUIREMENTS)
	{ echo '# Pinned development environment (Python 3.13). Regenerate with: make lock'; \
	  $(BUILD_DIR)/lock-venv/bin/python -m pip freeze --exclude-editable \
	    | grep -v -i '^sqs[-_]dlq[-_]replay[ =@]'; } > requirements/dev.lock.tmp
	mv requirements/dev.lock.tmp requirements/dev.lock
	rm -rf $(BUILD_DIR)/lock-venv

clean:
	rm -rf $(VENV) .aws-sam $(BUILD_DIR) build-check .mypy_cache .ruff_cache .pytest_cache
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
