# The one gate: `make test` (which .ci/run calls) installs the pinned toolchain into .venv and
# runs lint, template validation, `sam build` + an import check of the built artifacts, and pytest.
# Nothing here relies on a tool installed by hand: everything comes from requirements/dev.lock.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DELETE_ON_ERROR:
.DEFAULT_GOAL := test
MAKEFLAGS += --no-builtin-rules

# Python 3.13 through pyenv: with this PYENV_VERSION the shims make `python3.13` visible (and
# keep plain `python3` at 3.11). `sam build` looks up `python3.13` on PATH for the python3.13
# runtime, so the variable is exported to every recipe.
export PYENV_VERSION := 3.13.0:3.11.7
PY := python3.13
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export AWS_DEFAULT_REGION ?= us-east-1
export SAM_CLI_TELEMETRY := 0
# SAM CLI otherwise checks PyPI for a newer version on every command.
export SAM_CLI_DISABLE_VERSION_CHECK := 1

BUILD_DIR := build
TRANSFORMED := $(BUILD_DIR)/transformed.json

# Top-level development requirements; `make lock` resolves them (with the project's own
# dependencies and its `local` extra) into requirements/dev.lock.
LOCK_REQUIREMENTS := aws-sam-cli aws-sam-translator cfn-lint 'moto[server]' ruff mypy pytest \
	'boto3-stubs[sqs]'

.PHONY: venv lint validate build unit integration template pytest test demo lock clean

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
	# tools/ is not in pyproject's mypy `files`; checked with the same strict settings.
	$(BIN)/mypy tools

validate: $(STAMP)
	$(BIN)/sam validate --lint --template-file template.yaml
	$(BIN)/sam validate --template-file template.yaml --region $(AWS_DEFAULT_REGION)
	$(BIN)/cfn-lint template.yaml
	mkdir -p $(BUILD_DIR)
	$(BIN)/python tools/transform_template.py template.yaml -o $(TRANSFORMED)
	$(BIN)/cfn-lint $(TRANSFORMED)
	# E3002 is ignored for this file only: cfn-lint does not apply the SAM transform to
	# a template that has one, so it sees AWS::Serverless::Application with a local
	# `Location: ../template.yaml`, which is valid only before `sam package` turns it
	# into an S3 URL (or, in the SAR form, an ApplicationId/SemanticVersion object).
	$(BIN)/cfn-lint examples/nested-app.yaml

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

# In this order, stopping at the first failure.
test: $(STAMP)
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory validate
	$(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory pytest

demo:
	@echo "make demo arrives with the local runtime (issue 4)"

# Regenerates requirements/dev.lock from a clean throwaway venv.
lock:
	rm -rf $(BUILD_DIR)/lock-venv
	$(PY) -m venv $(BUILD_DIR)/lock-venv
	$(BUILD_DIR)/lock-venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BUILD_DIR)/lock-venv/bin/python -m pip install --quiet --disable-pip-version-check \
		'.[local]' $(LOCK_REQUIREMENTS)
	{ echo '# Pinned development environment (Python 3.13). Regenerate with: make lock'; \
	  $(BUILD_DIR)/lock-venv/bin/python -m pip freeze --exclude-editable \
	    | grep -v -i '^sqs-dlq-replay[ =@]'; } > requirements/dev.lock.tmp
	mv requirements/dev.lock.tmp requirements/dev.lock
	rm -rf $(BUILD_DIR)/lock-venv

clean:
	rm -rf $(VENV) .aws-sam $(BUILD_DIR) build-check .mypy_cache .ruff_cache .pytest_cache
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +
