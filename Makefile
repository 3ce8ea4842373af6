# The README's two commands are `make demo` and `make test`; both start from a machine that
# has only the toolchains (cargo, python3) and build everything they need.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.rdmalab-installed
SOURCES := $(shell find crates -name '*.rs' -o -name 'Cargo.toml' 2>/dev/null) pyproject.toml Cargo.lock

.PHONY: setup fast demo test test-rust test-python docs bench reference clean

setup: $(STAMP)

$(VENV)/bin/activate:
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet "maturin>=1.5,<2"

$(STAMP): $(VENV)/bin/activate $(SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
		$(VENV)/bin/maturin develop --release --quiet --extras test
	touch $(STAMP)

# The package rebuilt profile-guided, in place (bench/pgo.py: instrumented, trained through
# its command line on runs the benchmarks leave out, rebuilt; some 10 minutes on 2 cores).
# Needs rustup's llvm-tools. It stays until the sources change and `make setup` rebuilds.
fast: setup
	$(VPY) bench/pgo.py --python $(VENV)

demo: setup
	$(VENV)/bin/rdmalab demo --out out/demo

test: setup test-rust test-python

test-rust:
	cargo test --profile test-release --workspace --exclude rdmalab-py

# Two passes: the tests in parallel, one worker per core (pytest-xdist), then alone those
# marked `serial` (signals to running commands, Ray instances of their own), which another
# worker beside them could make late.
test-python: setup
	$(VPY) -m pytest -q -n auto -m "not serial" tests/python
	$(VPY) -m pytest -q -m serial tests/python

# The documentation site into site/, strict: a broken link or anchor fails the build.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

bench:
	$(PY) bench/run.py

# The reference pages generated from the code (docs/reference/) and the scenario JSON Schema
# shipped in the package; a test fails when a committed one is out of date.
reference: setup
	$(VPY) -m rdmalab.docgen

clean:
	rm -rf $(VENV) target out site
