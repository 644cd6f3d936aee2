# Two entry points that work on a fresh machine (Python 3.11, Java 17, make):
#   make run   - the main job on the embedded default
#   make test  - the whole test suite and lint (what CI runs)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test quick lint bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

run: $(VENV)/.installed
	$(VENV)/bin/bkconform qualify --master "local[2]" --shards 8 --target local

test: $(VENV)/.installed
	$(VENV)/bin/tox -e py311,lint

quick: $(VENV)/.installed
	$(VENV)/bin/pytest

lint: $(VENV)/.installed
	$(VENV)/bin/tox -e lint

bench: $(VENV)/.installed
	$(VENV)/bin/tox -e bench

clean:
	rm -rf $(VENV) .tox build *.egg-info
