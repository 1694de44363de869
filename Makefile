# The one gate: `make test` (what .ci/run calls) installs the pinned toolchain into .venv, then
# runs lint, template validation, checkov and `sam build` with an import check of what it built
# (side by side), then pytest (in parallel processes), then the benchmark smoke, stopping at
# the first failure. Every tool comes from requirements/dev.lock: nothing installed by hand is
# relied on.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DELETE_ON_ERROR:
.DEFAULT_GOAL := test
MAKEFLAGS += --no-builtin-rules

# Python 3.13 (any patch) for the toolchain and the python3.13 runtime of `sam build`: the
# first that runs of `python3.13` on PATH and pyenv's 3.13.x versions. Its folder goes first on
# PATH, because `sam build` (and the layer's Makefile) look `python3.13` up there.
PY := $(shell for candidate in python3.13 $$(pyenv root 2>/dev/null)/versions/3.13*/bin/python3.13; do \
	  "$$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 13)' >/dev/null 2>&1 \
	  && { command -v "$$candidate"; break; }; done)
NEED_PY = @test -n "$(PY)" || { echo "make: Python 3.13 not found (neither python3.13 on PATH nor \
	pyenv's 3.13.x): install it, e.g. \`pyenv install 3.13\` or your system's python3.13" >&2; exit 1; }
ifneq ($(PY),)
export PATH := $(dir $(PY)):$(PATH)
endif
# `make demo` needs only Python 3.11+: the first of these that is new enough.
DEMO_PY := $(shell for candidate in python3 python3.13 python3.12 python3.11; do \
	  "$$candidate" -c 'import sys; assert sys.version_info >= (3, 11)' >/dev/null 2>&1 \
	  && { command -v "$$candidate"; break; }; done)
DEMO_VENV := .venv-demo
# Every file the locks pin, by URL and hash (tools/wheel_links.py): what the venvs install from.
WHEEL_LINKS := requirements/wheels.html
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

# Top-level development requirements; `make lock` resolves them, with the project's own
# dependencies and its `demo` extra, into requirements/dev.lock.
LOCK_REQUIREMENTS := aws-sam-cli aws-sam-translator cfn-lint 'moto[server]' ruff mypy pytest selenium \
	pytest-xdist hypothesis 'boto3-stubs[sqs,sns,lambda,stepfunctions,events]'

# LocalStack, the second emulator (`make test-localstack`): its own venv under build/, from
# requirements/localstack.lock (`make lock-localstack` regenerates it from localstack.txt).
LOCALSTACK_VENV := $(BUILD_DIR)/localstack-venv
LOCALSTACK_STAMP := $(LOCALSTACK_VENV)/.installed
# The tests marked `emulator` in these directories (tests/emulation.py) run against LocalStack.
LOCALSTACK_TESTS := tests/integration tests/local tests/operator_cli

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

.PHONY: venv lint validate build unit integration template pytest test demo console-demo bench bench-smoke soak lock \
	localstack-venv test-localstack lock-localstack bench-smoke-waiting bench-smoke-computing checkov lock-checkov clean \
	package need-bucket publish release

venv: $(STAMP)

# $(call locked-install,VENV,LOCK): LOCK's packages into VENV from the pinned releases' files
# that tools/wheel_links.py listed in requirements/wheels.html, with their hashes: pip
# reads no index page (most of its time otherwise). Where that fails, through the package index
# pip is configured with. Not compiled at install: a run compiles what it imports, once, where
# compiling every module of every package cost most of the rest.
define locked-install
	$(1)/bin/python -m pip install --quiet --disable-pip-version-check --no-compile \
	    --no-index --find-links '$(CURDIR)/$(WHEEL_LINKS)' --retries 0 --timeout 10 \
	    -r $(2) \
	  || { echo "make: trying again through the package index" >&2; \
	       $(1)/bin/python -m pip install --quiet --disable-pip-version-check --no-compile -r $(2); }
endef

$(STAMP): requirements/dev.lock $(WHEEL_LINKS) pyproject.toml
	$(NEED_PY)
	rm -rf $(VENV)
	$(PY) -m venv $(VENV)
	$(call locked-install,$(VENV),requirements/dev.lock)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

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

pytest: $(STAMP)
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

$(CHECKOV_STAMP): requirements/checkov.lock $(WHEEL_LINKS)
	$(NEED_PY)
	rm -rf $(CHECKOV_VENV)
	$(PY) -m venv $(CHECKOV_VENV)
	$(call locked-install,$(CHECKOV_VENV),requirements/checkov.lock)
	touch $@

lock-checkov:
	$(NEED_PY)
	rm -rf $(BUILD_DIR)/lock-checkov-venv
	$(PY) -m venv $(BUILD_DIR)/lock-checkov-venv
	$(BUILD_DIR)/lock-checkov-venv/bin/python -m pip install --quiet \
		--disable-pip-version-check -r requirements/checkov.txt
	{ echo '# Pinned checkov environment (Python 3.13) for make checkov. Regenerate with: make lock-checkov'; \
	  $(BUILD_DIR)/lock-checkov-venv/bin/python -m pip freeze --disable-pip-version-check; \
	} > requirements/checkov.lock.tmp
	mv requirements/checkov.lock.tmp requirements/checkov.lock
	rm -rf $(BUILD_DIR)/lock-checkov-venv
	$(PY) tools/wheel_links.py

localstack-venv: $(LOCALSTACK_STAMP)

$(LOCALSTACK_STAMP): requirements/localstack.lock $(WHEEL_LINKS)
	$(NEED_PY)
	rm -rf $(LOCALSTACK_VENV)
	$(PY) -m venv $(LOCALSTACK_VENV)
	$(call locked-install,$(LOCALSTACK_VENV),requirements/localstack.lock)
	touch $@

# Starts LocalStack on a free port of 127.0.0.1, runs the `emulator` tests against it, stops it
# by its pid whatever happens (tools/localstack.py). Fails if LocalStack does not come up or no
# test ran. The tests run in parallel too: each has a LocalStack account of its own.
test-localstack: $(STAMP) $(LOCALSTACK_STAMP)
	$(BIN)/python tools/localstack.py --python $(LOCALSTACK_VENV)/bin/python -- \
		$(BIN)/pytest --numprocesses $(PYTEST_WORKERS) -m emulator --emulator=localstack \
		$(LOCALSTACK_TESTS)

lock-localstack:
	$(NEED_PY)
	rm -rf $(BUILD_DIR)/lock-localstack-venv
	$(PY) -m venv $(BUILD_DIR)/lock-localstack-venv
	$(BUILD_DIR)/lock-localstack-venv/bin/python -m pip install --quiet \
		--disable-pip-version-check -r requirements/localstack.txt
	{ echo '# Pinned LocalStack environment (Python 3.13) for make test-localstack. Regenerate with: make lock-localstack'; \
	  $(BUILD_DIR)/lock-localstack-venv/bin/python -m pip freeze --disable-pip-version-check; \
	} > requirements/localstack.lock.tmp
	mv requirements/localstack.lock.tmp requirements/localstack.lock
	rm -rf $(BUILD_DIR)/lock-localstack-venv
	$(PY) tools/wheel_links.py

# The README's first command: the replay on an embedded SQS emulator, no AWS account needed.
# DEMO_ARGS passes options through, e.g. make demo DEMO_ARGS="--messages 1000 --poison-rate 0.1".
# Its own light environment (the package and its `demo` extra, requirements/demo.lock) on any
# Python 3.11+, so a first `make demo` does not install the whole development toolchain. Not
# compiled at install (moto's thousands of modules for every service): the demo's first run
# compiles the few it imports.
DEMO_ARGS ?=
demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/python -m dlq_replay.cli.main demo $(DEMO_ARGS)
	@echo "Next: the web console on demo queues (parked samples): make console-demo (Ctrl-C stops it)"

# `dlq-replay console --demo`: the console on the embedded emulator, until Ctrl-C (docs/console.md).
console-demo: $(STAMP)
	$(BIN)/dlq-replay console --demo

# $(call user-venv,DIR,PYTHON,PIP OPTIONS[,editable]): a venv with the package's dependencies only
# (requirements/demo.lock: its own and its `demo` extra's, pinned) and the package: pip's
# editable install (`editable`: the `dlq-replay` command, as users have it) or a path entry to
# layers/replay (a .pth file: importable at once, no build, which the first `make demo` would
# wait for). Made quickly, as the first `make demo` waits for it:
# - PYTHON's own pip, when it is 22.3 or newer, installs into the venv (`pip --python`), so the
#   venv is made without a pip of its own: no ensurepip, about 7 s. An older pip: the venv's own.
# - --no-deps: the lock is the whole environment, so pip has nothing to resolve.
# - --no-index --find-links requirements/wheels.html (tools/wheel_links.py): pip weighs
#   only the pinned releases' wheels, not every file of every release on each package's index
#   page (most of its time otherwise), and checks each download's sha256. Where that fails (no
#   wheel for this platform, files.pythonhosted.org out of reach), the same pip tries again
#   through the package index pip is configured with.
# - The lock's lines (biggest wheel first) are dealt out to USER_VENV_JOBS pips side by side,
#   back and forth (0 1 1 0 0 1 …), so each gets a like share of the unpacking; a pip works on
#   one core. --no-warn-conflicts, as a package's dependencies may be another pip's. The
#   recipe fails if any of them does, once all have ended.
USER_VENV_JOBS := 2
PIP_HAS_PYTHON_OPTION := import pip, sys; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))
PATH_ENTRY := import pathlib, sys, sysconfig; \
  pathlib.Path(sysconfig.get_path("purelib"), "sqs_dlq_replay.pth").write_text(sys.argv[1] + "\n")
DEAL_OUT := !/^(\#|$$)/ { r = int(i / n); j = i % n; if (r % 2) j = n - 1 - j; if (j == k) print; i++ }
define user-venv
	rm -rf $(1)
	if $(2) -c '$(PIP_HAS_PYTHON_OPTION)' 2>/dev/null; then \
	  $(2) -m venv --without-pip $(1); pip=($(2) -m pip --python $(1)/bin/python); \
	else \
	  $(2) -m venv $(1); pip=($(1)/bin/python -m pip); \
	fi; \
	pip+=(install --quiet --disable-pip-version-check --no-deps --no-warn-conflicts $(3)); \
	pids=(); \
	for job in $$(seq 0 $$(($(USER_VENV_JOBS) - 1))); do \
	  awk -v n=$(USER_VENV_JOBS) -v k=$$job '$(DEAL_OUT)' requirements/demo.lock > $(1)/lock-$$job.txt; \
	  { "$${pip[@]}" --no-index --find-links '$(CURDIR)/$(WHEEL_LINKS)' --retries 0 --timeout 10 \
	      -r $(1)/lock-$$job.txt \
	    || { echo "make: trying again through the package index" >&2; \
	         "$${pip[@]}" -r $(1)/lock-$$job.txt; }; } & pids+=($$!); \
	done; \
	$(if $(4),"$${pip[@]}" -e . & pids+=($$!);) \
	failed=0; for pid in "$${pids[@]}"; do wait "$$pid" || failed=1; done; test $$failed = 0
	rm $(1)/lock-*.txt
	$(if $(4),,$(1)/bin/python -c '$(PATH_ENTRY)' '$(CURDIR)/layers/replay')
	touch $(1)/.installed
endef

$(DEMO_STAMP): requirements/demo.lock $(WHEEL_LINKS)
	@test -n "$(DEMO_PY)" || { echo "make: Python 3.11 or newer not found (python3, python3.11-3.13): \
	install one" >&2; exit 1; }
	$(call user-venv,$(DEMO_VENV),$(DEMO_PY),--no-compile)

# Benchmarks: `make bench` for the figures, `make bench-smoke` (part of `make test`, after
# `build`: bench_cold_start measures the built artifact) so the benchmark code keeps running.
# bench_end_to_end runs the tools as users install them: the package and
# its dependencies (requirements/demo.lock) in a venv of their own, none of the development
# toolchain (through aws-sam-cli it brings pyOpenSSL and awscrt, which botocore imports at start
# when present).
BENCH_VENV := $(BUILD_DIR)/bench-venv
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): requirements/demo.lock $(WHEEL_LINKS) pyproject.toml
	$(NEED_PY)
	$(call user-venv,$(BENCH_VENV),$(PY),,editable)

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
	$(BIN)/python bench/bench_end_to_end.py --smoke

# Regenerates requirements/dev.lock from a clean, throwaway venv, then requirements/demo.lock
# (the demo extra at dev.lock's versions, resolved on the demo's Python); then the locks' wheel
# links (requirements/wheels.html, from PyPI; demo.lock is ordered biggest wheel first).
lock:
	$(NEED_PY)
	rm -rf $(BUILD_DIR)/lock-venv
	$(PY) -m venv $(BUILD_DIR)/lock-venv
	$(BUILD_DIR)/lock-venv/bin/python -m pip install --quiet --disable-pip-version-check \
		--upgrade pip
	$(BUILD_DIR)/lock-venv/bin/python -m pip install --quiet --disable-pip-version-check \
		'.[demo,console]' $(LOCK_REQUIREMENTS)
	{ echo '# Pinned development environment (Python 3.13). Regenerate with: make lock'; \
	  $(BUILD_DIR)/lock-venv/bin/python -m pip freeze --all --exclude pip --exclude-editable \
	    | grep -v -i '^sqs[-_]dlq[-_]replay[ =@]'; } > requirements/dev.lock.tmp
	mv requirements/dev.lock.tmp requirements/dev.lock
	rm -rf $(BUILD_DIR)/lock-venv
	rm -rf $(BUILD_DIR)/lock-demo-venv
	$(DEMO_PY) -m venv $(BUILD_DIR)/lock-demo-venv
	grep -v -i '^networkx' requirements/dev.lock > $(BUILD_DIR)/demo-constraints.txt
	$(BUILD_DIR)/lock-demo-venv/bin/python -m pip install --quiet --disable-pip-version-check \
		-c $(BUILD_DIR)/demo-constraints.txt '.[demo]'
	{ echo "# The demo's light environment: the package and its \`demo\` extra, at dev.lock's versions (networkx"; \
	  echo "# excepted: dev.lock's needs Python 3.12+). Works on Python 3.11 to 3.13. Regenerate: make lock"; \
	  echo "# Biggest wheel first (tools/wheel_links.py), as make demo's pips take turns down the list."; \
	  $(BUILD_DIR)/lock-demo-venv/bin/python -m pip freeze --exclude-editable \
	    | grep -v -i '^sqs[-_]dlq[-_]replay[ =@]'; } > requirements/demo.lock.tmp
	mv requirements/demo.lock.tmp requirements/demo.lock
	rm -rf $(BUILD_DIR)/lock-demo-venv
	$(PY) tools/wheel_links.py

clean:
	rm -rf $(VENV) $(DEMO_VENV) .aws-sam $(BUILD_DIR) build-check .mypy_cache .ruff_cache .pytest_cache
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
