# The one gate: `make test` (what .ci/run calls) installs the pinned toolchain into .venv, then
# runs lint, template validation, checkov and `sam build` with an import check of what it built
# (side by side), then pytest (in parallel processes), then the benchmark smoke, stopping at
# the first failure. Every tool comes from requirements/dev.lock: nothing installed by hand is
# relied on. uv makes every venv and every lock (below: the one on PATH, or fetched once).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DELETE_ON_ERROR:
.DEFAULT_GOAL := test
MAKEFLAGS += --no-builtin-rules

# Python 3.13 (any patch) for the toolchain and the python3.13 runtime of `sam build`: the
# first that runs of `python3.13` on PATH and pyenv's 3.13.x versions. Its folder goes first on
# PATH, because `sam build` (and the layer's Makefile) look `python3.13` up there. PY and DEMO_PY
# are the interpreter a candidate runs on, never a venv's (an activated .venv or .venv-demo is
# first on PATH, and a recipe that remakes it would remove its Python).
BASE_EXECUTABLE = print(sys._base_executable)
PY := $(shell for candidate in python3.13 $$(pyenv root 2>/dev/null)/versions/3.13*/bin/python3.13; do \
	  "$$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 13); $(BASE_EXECUTABLE)' \
	  2>/dev/null | grep . && break; done)
NEED_PY = @test -n "$(PY)" || { echo "make: Python 3.13 not found (neither python3.13 on PATH nor \
	pyenv's 3.13.x): install it, e.g. \`pyenv install 3.13\` or your system's python3.13" >&2; exit 1; }
need-py:
	$(NEED_PY)
ifneq ($(PY),)
export PATH := $(dir $(PY)):$(PATH)
endif
# `make demo` needs only Python 3.11+: the first of these that is new enough.
DEMO_PY := $(shell for candidate in python3 python3.13 python3.12 python3.11; do \
	  "$$candidate" -c 'import sys; assert sys.version_info >= (3, 11); $(BASE_EXECUTABLE)' \
	  2>/dev/null | grep . && break; done)
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export AWS_DEFAULT_REGION ?= us-east-1
export SAM_CLI_TELEMETRY := 0
# Otherwise SAM CLI asks PyPI for a newer version of itself on every command.
export SAM_CLI_DISABLE_VERSION_CHECK := 1

BUILD_DIR := build
TRANSFORMED := $(BUILD_DIR)/transformed.json

# uv (PyPI's `uv`) makes every venv (no ensurepip, no pip in it; the lock's files installed in
# parallel from its cache, each checked against the lock's sha256) and resolves every lock
# (`uv pip compile --generate-hashes`). The `uv` on PATH when there is one (0.5 or newer),
# otherwise UV_VERSION, fetched once from PyPI into build/uv by the first Python 3.11+'s pip
# (`make` does it: nothing to install by hand). It never downloads a Python: each venv is made
# for the interpreter PY or DEMO_PY found.
UV_VERSION := 0.13.8
UV_DIR := $(BUILD_DIR)/uv
UV := $(or $(shell version=$$(uv --version 2>/dev/null | cut -d' ' -f2); \
	  [ -n "$$version" ] && [ "$$(printf '0.5.0\n%s\n' "$$version" | sort -V | head -1)" = 0.5.0 ] \
	  && command -v uv),$(CURDIR)/$(UV_DIR)/bin/uv)
export UV_PYTHON_DOWNLOADS := never
# Each venv is named by --python; an activated venv (VIRTUAL_ENV) is never the one installed into.
UV_PIP = $(UV) pip $(1) --quiet --python $(2)

# `make uv`: uv ready (.ci/run, before two makes that each need it start side by side).
uv: | $(UV)
	@:

$(CURDIR)/$(UV_DIR)/bin/uv:
	@test -n "$(DEMO_PY)" || { echo "make: Python 3.11 or newer not found (python3, python3.11-3.13): \
	install one" >&2; exit 1; }
	@echo "make: fetching uv $(UV_VERSION) from PyPI into $(UV_DIR) (once; or put uv on your PATH)"
	@rm -rf $(UV_DIR)
	@PIP_ROOT_USER_ACTION=ignore PIP_USER=0 PIP_REQUIRE_VIRTUALENV=0 $(DEMO_PY) -m pip install \
	  --quiet --disable-pip-version-check --no-deps --only-binary=:all: --target $(UV_DIR) \
	  uv==$(UV_VERSION) && test -x $@ || { echo "make: could not fetch uv with $(DEMO_PY)'s pip: \
	install uv (docs.astral.sh/uv) or pip for that Python" >&2; rm -rf $(UV_DIR); exit 1; }

# $(call uv-venv,DIR,PYTHON,LOCK,OPTIONS): a venv in DIR for PYTHON (no pip in it) holding
# LOCK's pins, each file checked against the lock's sha256, and OPTIONS, one of:
# - --require-hashes: LOCK alone, every requirement hashed (the tools' venvs);
# - --verify-hashes -e .: the package too, editable (built by setuptools, as pip would; it has
#   no hash), every pin's hash still checked (tests/local/test_locks.py: every pin has them);
# with --compile-bytecode for the venvs users run: without it, where bytecode is not written
# (PYTHONDONTWRITEBYTECODE=1, as in many container images) every run compiles what it imports.
# --no-deps: the lock is the whole environment, nothing is resolved at install.
define uv-venv
	@rm -rf $(1)
	@$(UV) venv --quiet --python $(2) $(1)
	@$(call UV_PIP,install,$(1)/bin/python) --no-deps $(4) -r $(3)
endef
# `sam build` is redone only when something it reads changed: the tests that need the built
# artifact (tests/release runs `make publish`) use the build `make test` made before pytest.
BUILT := .aws-sam/build/.built
BUILD_INPUTS := template.yaml samconfig.toml tools/check_build.py $(shell find functions/replay \
	layers/replay -type f ! -path '*/__pycache__/*' ! -path '*.egg-info/*' 2>/dev/null)

# pytest's worker processes (pytest-xdist) in `make test` and `make pytest`: more than the cores,
# because many tests wait in real time (delays, visibility timeouts) rather than compute.
# PYTEST_WORKERS=0 runs the suite in one process.
PYTEST_WORKERS ?= 4
# The steps of `make test` before pytest that can run side by side (none needs another's output).
CHECK_JOBS ?= 4

# LocalStack, the second emulator (`make test-localstack`): its own venv under build/, from
# requirements/localstack.lock (`make lock-localstack` regenerates it from localstack.txt).
LOCALSTACK_VENV := $(BUILD_DIR)/localstack-venv
LOCALSTACK_STAMP := $(LOCALSTACK_VENV)/.installed
# The tests marked `emulator` in these directories (tests/emulation.py) run against LocalStack.
LOCALSTACK_TESTS := tests/integration tests/local tests/operator_cli tests/console

# checkov, in its own venv under build/ too, from requirements/checkov.lock.
CHECKOV_VENV := $(BUILD_DIR)/checkov-venv
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed

# Publishing to the Serverless Application Repository (docs/publishing.md): `make package
# S3_BUCKET=...` builds, writes the SAR README and template under build/sar/ and uploads the
# artifacts; `make publish` does that and publishes (SHARE=--public, or --account ID, or
# --org o-..., then shares it); `make release VERSION=x.y.z` writes the version everywhere
# first. SOURCE_CODE_URL and HOME_PAGE_URL override the template's links for a fork.
S3_BUCKET ?=
S3_PREFIX ?= sqs-dlq-replay
SOURCE_CODE_URL ?= https://github.com/sqs-dlq-replay/sqs-dlq-replay
HOME_PAGE_URL ?= $(SOURCE_CODE_URL)
SHARE ?=
SAR_DIR := $(BUILD_DIR)/sar
PACKAGED := $(SAR_DIR)/packaged.yaml

.PHONY: need-py uv venv lint validate build unit integration template pytest test demo console-demo bench bench-smoke soak lock \
	localstack-venv test-localstack lock-localstack bench-smoke-waiting bench-smoke-computing checkov lock-checkov clean \
	package need-bucket publish release

venv: $(STAMP)

# The development venv: Python 3.13, requirements/dev.lock, the package editable. Not compiled
# ahead (thousands of modules the gate mostly never imports): a run compiles what it imports.
$(STAMP): requirements/dev.lock pyproject.toml | need-py $(UV)
	@echo "make: installing the toolchain (requirements/dev.lock) into $(VENV) with uv"
	$(call uv-venv,$(VENV),$(PY),requirements/dev.lock,--verify-hashes -e .)
	@touch $@

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python tools/release.py check-version

# - samconfig's default environment turns `--lint` on for `sam validate`, which then runs
#   cfn-lint only; its `translate` environment runs the SAM translator's validation instead.
# - The transformed template is linted with W3037 (unknown IAM action) off: SAM's own
#   SQSPollerPolicy lists sqs:ChangeMessageVisibilityBatch and sqs:DeleteMessageBatch, which
#   IAM does not know (the single-message actions authorise the batch APIs). template.yaml
#   and the example are linted with every rule.
validate: $(STAMP) $(TRANSFORMED)
	$(BIN)/sam validate --lint --template-file template.yaml
	$(BIN)/sam validate --config-env translate --template-file template.yaml \
		--region $(AWS_DEFAULT_REGION)
	$(BIN)/cfn-lint -- template.yaml
	$(BIN)/cfn-lint --ignore-checks W3037 -- $(TRANSFORMED)
	$(BIN)/cfn-lint -- examples/nested-app.yaml examples/nested-app-serverless.yaml \
		release/bucket.yaml

# The SAM transform's output, which `validate` and `checkov` both check.
$(TRANSFORMED): template.yaml tools/transform_template.py $(STAMP)
	mkdir -p $(BUILD_DIR)
	$(BIN)/python tools/transform_template.py template.yaml -o $@

# No container: the python3.13 builder runs the python3.13 that PY found (first on PATH).
build: $(BUILT)

$(BUILT): $(STAMP) $(BUILD_INPUTS)
	rm -f $@
	$(BIN)/sam build --template-file template.yaml
	$(BIN)/python tools/check_build.py
	touch $@

# The packaged template is checked as SAR and CloudFormation will read it: cfn-lint, and the
# SAM translator on its s3:// artifacts.
package: need-bucket build
	$(BIN)/python tools/release.py check-version
	$(BIN)/python tools/release.py sar-readme -o $(SAR_DIR)/README-SAR.md \
		--source-code-url $(SOURCE_CODE_URL)
	$(BIN)/python tools/release.py sar-template .aws-sam/build/template.yaml \
		-o $(SAR_DIR)/template.yaml --readme $(SAR_DIR)/README-SAR.md \
		--source-code-url $(SOURCE_CODE_URL) --home-page-url $(HOME_PAGE_URL)
	$(BIN)/sam package --template-file $(SAR_DIR)/template.yaml --s3-bucket $(S3_BUCKET) \
		--s3-prefix $(S3_PREFIX) --output-template-file $(PACKAGED) --region $(AWS_DEFAULT_REGION)
	$(BIN)/cfn-lint -- $(PACKAGED)
	$(BIN)/python tools/transform_template.py $(PACKAGED) -o $(SAR_DIR)/packaged-transformed.json

need-bucket:
	@test -n "$(S3_BUCKET)" || { echo "make: S3_BUCKET=<bucket> is required: an S3 bucket that \
	serverlessrepo.amazonaws.com may read (release/bucket.yaml creates one)" >&2; exit 1; }

# --fail-on-same-version: a published version is never overwritten or re-published.
publish: package
	$(BIN)/sam publish --template $(PACKAGED) --region $(AWS_DEFAULT_REGION) --fail-on-same-version
	$(if $(SHARE),$(BIN)/python tools/release.py share $(SHARE))

release: $(STAMP)
	@test -n "$(VERSION)" || { echo "make: VERSION=x.y.z is required" >&2; exit 1; }
	$(BIN)/python tools/release.py set-version $(VERSION)
	$(MAKE) --no-print-directory publish
	@echo "released $(VERSION): commit and tag it, e.g. git commit -am 'Release $(VERSION)' && git tag v$(VERSION)"

unit: $(STAMP)
	$(BIN)/pytest tests/unit

integration: $(STAMP)
	$(BIN)/pytest tests/integration

template: $(STAMP)
	$(BIN)/pytest tests/template

# The audit trail of the commands that tests and benchmarks run lands in the build folder, never
# in the operator's own ($XDG_STATE_HOME/dlq-replay/audit.jsonl); the tests make one each too.
pytest bench bench-smoke test-localstack: export XDG_STATE_HOME = $(CURDIR)/$(BUILD_DIR)/state

# .venv-demo first: tests/console/test_demo_venv.py serves `make console-demo`'s console from it
# (a fresh clone's), and in CI fails without it.
pytest: $(STAMP) $(DEMO_STAMP)
	$(BIN)/pytest --numprocesses $(PYTEST_WORKERS)

# Each step's output is printed whole when it ends (--output-sync); a failure stops the gate
# once the steps already running have ended.
test: $(STAMP)
	$(MAKE) --no-print-directory --jobs $(CHECK_JOBS) --output-sync=target lint validate checkov build
	$(MAKE) --no-print-directory pytest
	$(MAKE) --no-print-directory bench-smoke

# Security checks of the template as written, as CloudFormation deploys it (after the SAM
# transform, which `validate` writes) and of the nested example. Every skip is in the template,
# next to the resource, with its reason. --skip-download: no call to Bridgecrew's platform.
checkov: $(STAMP) $(CHECKOV_STAMP) $(TRANSFORMED)
	for template in template.yaml $(TRANSFORMED) examples/nested-app.yaml \
	    examples/nested-app-serverless.yaml release/bucket.yaml; do \
	  $(CHECKOV_VENV)/bin/checkov --skip-download --quiet --compact --framework cloudformation \
	    -f "$$template" || exit 1; \
	done

$(CHECKOV_STAMP): requirements/checkov.lock | need-py $(UV)
	@echo "make: installing checkov (requirements/checkov.lock) into $(CHECKOV_VENV) with uv"
	$(call uv-venv,$(CHECKOV_VENV),$(PY),requirements/checkov.lock,--require-hashes)
	@touch $@

# $(call uv-lock,INPUTS,LOCK,PYTHON VERSION,MAKE TARGET[,OPTIONS]): INPUTS resolved into LOCK,
# every pin with the sha256 of each of its files on the index (`uv pip compile
# --generate-hashes`), for Python PYTHON VERSION (with --universal: that version or newer, on
# every platform). The pins LOCK already has are kept where the inputs allow (a new dependency
# moves nothing else); LOCK_UPGRADE=1 moves every pin to its newest release.
LOCK_UPGRADE ?=
define uv-lock
	$(UV) pip compile --quiet --python $(PY) --python-version $(3) --generate-hashes \
	  --custom-compile-command 'make $(4)' $(if $(LOCK_UPGRADE),--upgrade) $(5) $(1) -o $(2)
endef

lock-checkov: | need-py $(UV)
	$(call uv-lock,requirements/checkov.txt,requirements/checkov.lock,3.13,lock-checkov,--universal)

localstack-venv: $(LOCALSTACK_STAMP)

$(LOCALSTACK_STAMP): requirements/localstack.lock | need-py $(UV)
	@echo "make: installing LocalStack (requirements/localstack.lock) into $(LOCALSTACK_VENV) with uv"
	$(call uv-venv,$(LOCALSTACK_VENV),$(PY),requirements/localstack.lock,--require-hashes)
	@touch $@

# Starts LocalStack on a free port of 127.0.0.1, runs the `emulator` tests against it, stops it
# by its pid whatever happens (tools/localstack.py). Fails if LocalStack does not come up or no
# test ran. The tests run in parallel too: each has a LocalStack account of its own.
test-localstack: $(STAMP) $(LOCALSTACK_STAMP)
	$(BIN)/python tools/localstack.py --python $(LOCALSTACK_VENV)/bin/python -- \
		$(BIN)/pytest --numprocesses $(PYTEST_WORKERS) -m emulator --emulator=localstack \
		$(LOCALSTACK_TESTS)

lock-localstack: | need-py $(UV)
	$(call uv-lock,requirements/localstack.txt,requirements/localstack.lock,3.13,lock-localstack)

# The README's first command: the replay on an embedded SQS emulator, no AWS account needed.
# DEMO_ARGS passes options through, e.g. make demo DEMO_ARGS="--messages 1000 --poison-rate 0.1".
# Its own light environment (the package and its `demo` extra, requirements/demo.lock) on any
# Python 3.11+, so a first `make demo` does not install the whole development toolchain. Its
# last line says where `dlq-replay` is (the README's next commands run it).
DEMO_ARGS ?=
demo: $(DEMO_STAMP)
	@$(DEMO_VENV)/bin/dlq-replay demo $(DEMO_ARGS) || status=$$?; \
	echo "make: the web console on demo queues (parked samples): make console-demo (Ctrl-C stops it)"; \
	echo "make: \`dlq-replay\` is $(DEMO_VENV)/bin/dlq-replay; \`source $(DEMO_VENV)/bin/activate\` puts it on your PATH"; \
	exit $${status:-0}

# `dlq-replay console --demo`: the console on the embedded emulator, until Ctrl-C (docs/console.md).
console-demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/dlq-replay console --demo

# $(call user-venv,DIR,PYTHON): a venv as users have one: requirements/demo.lock (the package's
# dependencies and its `demo` extra, pinned), the package editable (the `dlq-replay` command; its
# source is this checkout's), all of it compiled to bytecode.
define user-venv
	$(call uv-venv,$(1),$(2),requirements/demo.lock,--verify-hashes -e . --compile-bytecode)
	@touch $(1)/.installed
endef
$(DEMO_STAMP): requirements/demo.lock pyproject.toml | $(UV)
	@test -n "$(DEMO_PY)" || { echo "make: Python 3.11 or newer not found (python3, python3.11-3.13): \
	install one" >&2; exit 1; }
	@echo "make: installing the demo's environment (requirements/demo.lock) into $(DEMO_VENV) with uv"
	$(call user-venv,$(DEMO_VENV),$(DEMO_PY))

# Benchmarks: `make bench` for the figures, `make bench-smoke` (part of `make test`, after
# `build`: bench_cold_start measures the built artifact) so the benchmark code keeps running.
# bench_end_to_end runs the tools as users install them: the package and
# its dependencies (requirements/demo.lock) in a venv of their own, none of the development
# toolchain (through aws-sam-cli it brings pyOpenSSL and awscrt, which botocore imports at start
# when present).
BENCH_VENV := $(BUILD_DIR)/bench-venv
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): requirements/demo.lock pyproject.toml | need-py $(UV)
	@echo "make: installing the benchmark's venv (requirements/demo.lock) into $(BENCH_VENV) with uv"
	$(call user-venv,$(BENCH_VENV),$(PY))

bench: $(STAMP) $(BENCH_STAMP)
	$(MAKE) --no-print-directory build
	$(BIN)/python bench/bench_replay.py
	$(BIN)/python bench/bench_demo.py
	$(BIN)/python bench/bench_consumer.py
	$(BIN)/python bench/bench_redrive.py
	$(BIN)/python bench/bench_batch_send.py
	$(BIN)/python bench/bench_deliver.py
	$(BIN)/python bench/bench_cold_start.py
	$(BIN)/python bench/bench_cold_start.py --source
	$(BIN)/python bench/bench_worker.py
	$(BIN)/python bench/bench_cli_start.py
	$(BIN)/python bench/bench_signals.py
	$(BIN)/python bench/bench_breaker.py
	$(BIN)/python bench/bench_outage.py
	$(BIN)/python bench/bench_kinds.py
	$(BIN)/python bench/bench_record_cpu.py
	$(BIN)/python bench/bench_console.py
	$(BIN)/python bench/bench_overview.py
	$(BIN)/python bench/bench_answers.py
	$(BIN)/python bench/bench_follow.py
	$(BIN)/python bench/bench_follow_redrive.py
	$(BIN)/python bench/bench_end_to_end.py --python $(BENCH_VENV)/bin/python

# The fault-injection soak (tools/soak.py): N messages through the failure path with a chaos
# proxy in front of moto and the replay SIGKILLed KILLS times; fails when a message is lost.
# `make test` runs a short seeded one (tests/chaos/test_soak.py).
N ?= 10000
SEED ?= 1
KILLS ?= 3
SOAK_PATH ?= worker
soak: $(STAMP)
	$(BIN)/python tools/soak.py --messages $(N) --seed $(SEED) --kills $(KILLS) --path $(SOAK_PATH)

# Two halves side by side (output kept whole per half): the scenarios that mostly wait on the
# emulator's clock (the demo, the signals, the outage scenario) beside the ones that compute.
bench-smoke: $(STAMP)
	$(MAKE) --no-print-directory --jobs 2 --output-sync=target bench-smoke-waiting bench-smoke-computing

bench-smoke-waiting: $(STAMP)
	$(BIN)/python bench/bench_outage.py --smoke
	$(BIN)/python bench/bench_demo.py --smoke
	$(BIN)/python bench/bench_signals.py --smoke
	$(BIN)/python bench/bench_kinds.py --smoke

bench-smoke-computing: $(STAMP)
	$(BIN)/python bench/bench_replay.py --smoke
	$(BIN)/python bench/bench_consumer.py --smoke
	$(BIN)/python bench/bench_redrive.py --smoke
	$(BIN)/python bench/bench_batch_send.py --smoke
	$(BIN)/python bench/bench_deliver.py --smoke
	$(BIN)/python bench/bench_cold_start.py --smoke
	$(BIN)/python bench/bench_cold_start.py --source --smoke
	$(BIN)/python bench/bench_worker.py --smoke
	$(BIN)/python bench/bench_cli_start.py --smoke
	$(BIN)/python bench/bench_breaker.py --smoke
	$(BIN)/python bench/bench_record_cpu.py --smoke
	$(BIN)/python bench/bench_console.py --smoke
	$(BIN)/python bench/bench_overview.py --smoke
	$(BIN)/python bench/bench_answers.py --smoke
	$(BIN)/python bench/bench_follow.py --smoke
	$(BIN)/python bench/bench_follow_redrive.py --smoke
	$(BIN)/python bench/bench_end_to_end.py --smoke

# requirements/dev.lock: the toolchain (requirements/dev.txt) with the package's dependencies and
# every extra of it, for Python 3.13; then requirements/demo.lock: the `demo` extra at dev.lock's
# versions (its constraints), for Python 3.11 and newer.
lock: | need-py $(UV)
	$(call uv-lock,pyproject.toml requirements/dev.txt,requirements/dev.lock,3.13,lock,--universal --all-extras)
	$(call uv-lock,pyproject.toml,requirements/demo.lock,3.11,lock,--universal --extra demo --extra console \
	  -c requirements/dev.lock)

clean:
	rm -rf $(VENV) $(DEMO_VENV) .aws-sam $(BUILD_DIR) build-check .mypy_cache .ruff_cache .pytest_cache
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
