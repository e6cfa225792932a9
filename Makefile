# Two entry points (see README): `make demo` and `make test` (and `make docs`).
# Each creates .venv on first use (only Python 3.11 needed) and installs the
# project (its compiled kernels are built by the package build) with what it
# needs: the demo only the runtime dependencies, the tests also the `test`
# extra (Pinocchio, libcosim, pytest...).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
RUNTIME_STAMP := $(VENV)/.mbfmu-runtime
TEST_STAMP    := $(VENV)/.mbfmu-test
# rebuild the C kernels in place when their sources changed since install
BUILD_KERNELS := $(PY) setup.py --quiet build_ext --inplace

.PHONY: demo test test-all kernels bench clean docs

$(RUNTIME_STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): $(RUNTIME_STAMP)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

# the developer set-up: everything the tests need, kernels up to date
kernels: $(TEST_STAMP)
	$(BUILD_KERNELS)

demo: $(RUNTIME_STAMP)
	$(BUILD_KERNELS)
	$(PY) -m mbfmu demo
	@echo "the command line: .venv/bin/mbfmu --help (or source .venv/bin/activate, then mbfmu --help)"

# the linter first (its rules: [tool.ruff] in pyproject.toml), held at zero findings
LINT := $(PY) -m ruff check --quiet mbfmu tests examples benchmarks models docs

test: kernels
	$(LINT)
	$(PY) -m pytest -n 2 -m "not slow" $(PYTEST_ARGS)

test-all: kernels
	$(LINT)
	$(PY) -m pytest -n 2 $(PYTEST_ARGS)

bench: kernels
	$(PY) benchmarks/dynamics.py

clean:
	rm -rf build $(VENV) mbfmu/dynamics/*.so

# The documentation site (docs/_build/html); warnings are errors, tutorials run.
DOCS_STAMP := $(VENV)/.mbfmu-docs-installed
$(DOCS_STAMP): $(TEST_STAMP)
	$(PY) -m pip install --quiet -e '.[docs]'
	# only its OpenModelica FMU files are used (tutorial 4): not its framework
	$(PY) -m pip install --quiet --no-deps 'gemseo-fmu>=3.0'
	touch $(DOCS_STAMP)

docs: kernels $(DOCS_STAMP)
	MPLBACKEND=Agg $(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	$(PY) docs/check_site.py docs/_build/html
