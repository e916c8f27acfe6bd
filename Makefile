# Set-up and entry points. Needs only Python >= 3.11 and network access to PyPI.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: demo test test-fast bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@

demo: venv
	$(BIN)/bloomdb demo

# the suite runs in one worker process per CPU (pytest-xdist); `$(BIN)/python -m pytest` runs it in one
test: venv
	$(BIN)/python -m pytest -q -n logical

test-fast: venv
	$(BIN)/python -m pytest -q -n logical -m "not slow"

clean:
	rm -rf $(VENV) build src/*.egg-info
