# The two commands a fresh machine needs: `make run` and `make test`. Each builds .venv itself.
PYTHON ?= $(shell ls $$HOME/.pyenv/versions/3.13*/bin/python3.13 2>/dev/null | head -n 1 || true)
PYTHON := $(or $(PYTHON),$(shell python3.13 -c "import sys; print(sys.executable)" 2>/dev/null),python3)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test check template unit conformance bench bench-smoke clean slow-start slow-finish

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# Serving needs only Stratus itself; the development extras (test tools, backends, anchors) come with `make test`.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

run: $(VENV)/.installed-run  ## serve the demo server on http://127.0.0.1:8000/mcp with the in-memory store
	$(BIN)/stratus serve

check: $(VENV)/.installed  ## lint and type-check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	bash scripts/typecheck
	bash scripts/check-module-size

unit: $(VENV)/.installed  ## the pytest suite
	$(BIN)/python -m pytest -m "not slow"

conformance: $(VENV)/.installed  ## the official MCP conformance suite: one process, the emulated stack (2 containers a function) on Redis (the Function URL, the REST API; with durable tasks through the Function URL and the HTTP API) / a Redis Cluster (through the HTTP API) / DynamoDB, a gateway
	bash scripts/conformance
	CONFORMANCE_TARGET=emulated-redis bash scripts/conformance
	CONFORMANCE_TARGET=emulated-redis CONFORMANCE_DOOR=StreamingRestApi bash scripts/conformance
	CONFORMANCE_TARGET=emulated-redis CONFORMANCE_PARAMETERS=DurableTasks=true bash scripts/conformance
	CONFORMANCE_TARGET=emulated-redis CONFORMANCE_DOOR=ServerlessHttpApi CONFORMANCE_PARAMETERS=DurableTasks=true bash scripts/conformance
	CONFORMANCE_TARGET=emulated-redis-cluster CONFORMANCE_DOOR=ServerlessHttpApi bash scripts/conformance
	CONFORMANCE_TARGET=emulated-dynamodb bash scripts/conformance
	CONFORMANCE_TARGET=gateway bash scripts/conformance

template:  ## sam validate --lint, and cfn-lint on the SAM-translated template (tools pinned in their own venv)
	bash scripts/lint-template

test: slow-start check template conformance bench-smoke unit slow-finish  ## everything CI runs

# The tests marked `slow` (minutes of moto's server) run beside everything else at the lowest CPU priority, on the
# core the rest leaves idle, so they add little to `make test`'s time; `slow-finish` waits for them (at most an
# hour), prints their summary and fails if they failed.
SLOW := .cache/slow-tests
slow-start: $(VENV)/.installed
	@mkdir -p .cache && rm -f $(SLOW).rc
	@(STRATUS_SLOW_TESTS=1 nice -n 19 $(BIN)/python -m pytest -q -p no:cacheprovider -m slow >$(SLOW).log 2>&1; \
		echo $$? >$(SLOW).rc) </dev/null &
	@echo "slow tests started in the background: $(SLOW).log"
	@echo "make test takes about 25 minutes on 2 cores (the unit tests about 13, the slow tests beside them)"

slow-finish:
	@for _ in $$(seq 1 3600); do [ -f $(SLOW).rc ] && break; sleep 1; done
	@tail -n 5 $(SLOW).log
	@[ "$$(cat $(SLOW).rc 2>/dev/null)" = 0 ] || { cat $(SLOW).log; echo "the slow tests failed (or took over an hour)" >&2; exit 1; }

bench: $(VENV)/.installed  ## cold start, warm latency, throughput against the anchors: both shapes, Lambda's CPU shares, each Python
	$(BIN)/python bench/run.py

bench-smoke: $(VENV)/.installed  ## the benchmark in seconds, every subject once: keeps it working (CI)
	$(BIN)/python bench/run.py --smoke

# `sam build --build-in-source` calls these (template Metadata: BuildMethod makefile): the packages Stratus runs
# on Lambda, as wheels for the function's platform, plus its own code. boto3 comes with the Lambda runtime.
LAMBDA_PLATFORM ?= manylinux2014_aarch64
LAMBDA_REQUIREMENTS := "mangum>=0.19" "pydantic>=2.7" "uvicorn>=0.30" "httptools>=0.6" "redis>=8.0" "pyjwt[crypto]>=2.8" \
	"aws-lambda-powertools>=3.0"
# `TRACER=true sam build`: also the X-Ray SDK, which Powertools' `Tracer` needs (the `tracer` extra; it brings its own
# botocore, so the package grows by about the size of botocore).
# Stratus never imports it: only a tool's own `Tracer()` does (docs/writing-tools.md).
TRACER ?= false
ifeq ($(TRACER),true)
LAMBDA_REQUIREMENTS += "aws-xray-sdk>=2.12"
endif

# `TRACES=true sam build`: also OpenTelemetry's SDK and OTLP encoder (the `otel` extra), which the template's
# `Traces=xray|otlp` needs; without them a function refuses to start, naming the setting.
TRACES ?= false
ifeq ($(TRACES),true)
LAMBDA_REQUIREMENTS += "opentelemetry-sdk>=1.27" "opentelemetry-exporter-otlp-proto-common>=1.27"
endif

# The durable task worker alone ships the durable execution SDK (pyproject.toml's `durable` extra), with the boto3 it
# requires: the runtime's own may predate the durable-execution APIs its checkpoints call.
build-DurableTaskWorkerFunction: LAMBDA_REQUIREMENTS += "aws-durable-execution-sdk-python>=3.0,<4"

build-BufferedFunction build-StreamingFunction build-SweeperFunction build-TaskWorkerFunction build-DurableTaskWorkerFunction:
	$(PYTHON) -m pip install --quiet --target "$(ARTIFACTS_DIR)" --platform $(LAMBDA_PLATFORM) --implementation cp \
		--python-version 3.13 --only-binary=:all: $(LAMBDA_REQUIREMENTS) \
		$(if $(LAMBDA_REQUIREMENTS_FILE),-r "$(LAMBDA_REQUIREMENTS_FILE)")
	@# Stratus goes in as pip installs it anywhere (core/ as `stratus`, handlers/ as `stratus.handlers`): pyproject.toml's
	@# mapping is the only one. From a copy of the sources: the functions build in parallel (samconfig.toml), and
	@# setuptools' build/ folder in the checkout would be shared between them. -L: `stratus init`'s files link to
	@# template.yaml and run.sh (handlers/scaffold.py).
	source=$$(mktemp -d) && cp -rL pyproject.toml README.md core handlers emulator "$$source/" \
		&& $(PYTHON) -m pip install --quiet --no-deps --target "$(ARTIFACTS_DIR)" "$$source"; \
		status=$$?; rm -rf "$$source"; exit $$status
	cp -r examples run.sh $(LAMBDA_EXTRA_CODE) "$(ARTIFACTS_DIR)/"
	find "$(ARTIFACTS_DIR)" -name __pycache__ -prune -exec rm -rf {} +
	@# Bytecode ships in the package: /var/task is read-only, so without it every cold start compiles each module it
	@# imports (measured: 2.3x the instructions of `import examples.add`). unchecked-hash pycs stay valid whatever
	@# timestamps the zip gives the sources (PEP 552; docs.python.org/3/library/compileall.html).
	if $(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))'; then \
		$(PYTHON) -m compileall -q -j 0 --invalidation-mode unchecked-hash "$(ARTIFACTS_DIR)"; \
	else echo "build: no Python 3.13 (the runtime's) to compile bytecode with; the package ships sources only" >&2; fi

clean:
	rm -rf $(VENV) .cache .mypy_cache .pytest_cache .ruff_cache
