# Two entry points that work on a fresh machine (Python 3.11, Java 17, make):
#   make run   - the main job on the embedded default
#   make test  - the whole test suite and lint (what CI runs)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test quick lint bench mutate findings-table findings-verify clean

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

# The verdict paths, mutated one at a time: every mutation must be killed by the fast suite
# (docs/testing.md); then mutmut over the verdict modules when it is installed.
mutate: $(VENV)/.installed
	$(PY) tools/verdict_mutations.py --report runs/mutations
	@if [ -x $(VENV)/bin/mutmut ]; then $(PY) tools/verdict_mutations.py --mutmut --report runs/mutations; \
	else echo "mutmut is not installed (.venv/bin/pip install mutmut): skipped"; fi

# Every finding judged again, each x release x ledger storage (about 30 minutes; not in CI):
# runs/findings-table/table.md (docs/findings/findings-table.md).
findings-table: $(VENV)/.installed
	$(PY) tools/findings_table.py --out runs/findings-table

# The upstream-style reproducers (reproducers/zookeeper, JUnit in ZooKeeper's framework) on the
# released jars, and with --with-fix on a build with the candidate fix; and the BookKeeper ones
# (reproducers/bookkeeper, on BookKeeperClusterTestCase) on released BookKeeper, 4.18.0 by
# default, and with --with-fix on each finding's candidate fix built on its own
# (reproducers/bookkeeper/patches; about 10 minutes; the releases' sources come from git mirrors,
# --mirror and --bookkeeper-mirror; Maven's repository is $BKCONFORM_HOME/m2-reproducers; not
# in CI): runs/findings-verify/table.md (docs/findings/candidate-fixes.md).
# Other releases: make findings-verify VERIFY_ARGS="--versions 3.9.5,3.8.4 --with-fix".
# BookKeeper only, two releases, 3 runs each:
#   make findings-verify VERIFY_ARGS="--only bookkeeper --bookkeeper-versions 4.18.0,4.17.3 --bookkeeper-runs 3"
VERIFY_ARGS ?= --with-fix
findings-verify: $(VENV)/.installed
	$(PY) tools/findings_verify.py $(VERIFY_ARGS)

bench: $(VENV)/.installed
	$(VENV)/bin/tox -e bench

clean:
	rm -rf $(VENV) .tox build *.egg-info
