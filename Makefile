# gnmt-tf: `make test` and `make quickstart` create .venv when it is missing,
# with $(PYTHON) (Python 3.11 to 3.13; scripts/check_python.py checks).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SHARED_DATA := $(wildcard ../shared/data/multi30k)
DATA_DIR ?= $(if $(GNMT_TF_DATA),$(GNMT_TF_DATA),$(SHARED_DATA))
MINUTES ?= 5
QUICKSTART_DIR ?= runs/quickstart

.PHONY: venv lint test test-all test-beam quickstart quickstart-train docs clean

# scripts/check_python.py: say which Python is needed (setup.py's
# PYTHON_REQUIRES) before creating the virtualenv with the wrong one.
$(BIN)/gnmt-tf: requirements.txt setup.py
	@test -x $(BIN)/python || $(PYTHON) scripts/check_python.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

venv: $(BIN)/gnmt-tf

# Import layers and no cycles (.importlinter); runs before the tests.
lint: venv
	$(BIN)/lint-imports

# The Apache Beam job's tests run in their own environment (see test-beam):
# in the main one they are skipped.
test: lint
	$(BIN)/python -m pytest -q
	$(MAKE) test-beam

test-all: lint
	$(BIN)/python -m pytest -q --run-slow

# The [beam] extra needs protobuf < 7 (see requirements-beam.txt), so it has
# its own virtualenv: requirements.txt's pins but protobuf and
# grpcio-health-checking, then requirements-beam.txt's.
BEAM_VENV := .venv-beam
$(BEAM_VENV)/bin/gnmt-tf: requirements.txt requirements-beam.txt setup.py
	@test -x $(BEAM_VENV)/bin/python || $(PYTHON) scripts/check_python.py
	test -x $(BEAM_VENV)/bin/python || $(PYTHON) -m venv $(BEAM_VENV)
	$(BEAM_VENV)/bin/pip install -q --upgrade pip
	grep -v '^protobuf==\|^grpcio-health-checking==' requirements.txt > $(BEAM_VENV)/requirements.txt
	$(BEAM_VENV)/bin/pip install -q -r $(BEAM_VENV)/requirements.txt -r requirements-beam.txt
	$(BEAM_VENV)/bin/pip install -q -e '.[beam,dev]'
	touch $@

test-beam: $(BEAM_VENV)/bin/gnmt-tf
	$(BEAM_VENV)/bin/python -m pytest -q tests/gnmt_tf/beam_translate

# The shipped multi30k-transformer (no network): a few sentences in three
# directions and an HTML page through the document pipeline, then sacreBLEU
# on test_2016_flickr en->de (MAX_LINES=N: its first N sentences).
# Multi30k comes from DATA_DIR / GNMT_TF_DATA / ../shared/data/multi30k;
# without any, gnmt-tf quickstart downloads it into ~/.cache/gnmt_tf/multi30k
# (SHA-256 verified) first.
quickstart: venv
	$(BIN)/gnmt-tf quickstart $(if $(DATA_DIR),--data-dir $(DATA_DIR)) $(if $(MAX_LINES),--max-lines $(MAX_LINES))

# The training demo: a vocabulary and a small GNMT on Multi30k en->de for
# $(MINUTES) minutes, then beam search and sacreBLEU on test_2016_flickr.
quickstart-train: venv
	$(BIN)/gnmt-tf quickstart --train $(if $(DATA_DIR),--data-dir $(DATA_DIR)) --model-dir $(QUICKSTART_DIR) --minutes $(MINUTES)

# docs/benchmarks.md from benchmarks/results/*.json (a test fails while it is
# out of date): run after a benchmark writes its JSON.
docs: venv
	$(BIN)/python benchmarks/report.py

clean:
	rm -rf $(VENV) $(BEAM_VENV) runs .pytest_cache
