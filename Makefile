# The two commands of the README: `make run` and `make test`. Everything else is a step of them.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
ONNXPORT := $(VENV)/bin/onnxport

.PHONY: run test setup build chromium testdata clean

run: build
	$(ONNXPORT) serve --host 127.0.0.1 --port 8000

build: setup
	$(ONNXPORT) build

test: setup chromium testdata
	$(VENV)/bin/lint-imports
	node --test tests/js/*.mjs
	$(PY) -m pytest

setup: $(VENV)/.installed node_modules/.installed

# torch is pinned in pyproject.toml, so pip takes the CPU build that lies on these machines
# instead of fetching a multi-GB CUDA one.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,ray]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

chromium:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

testdata: $(VENV)/.installed
	$(PY) scripts/fetch_onnx_testdata.py
	$(PY) scripts/fetch_third_party.py

clean:
	rm -rf $(VENV) node_modules models/.repository tests/data/onnx-backend tests/data/third-party
