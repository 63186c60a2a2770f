# gnmt-tf: `make test` and `make quickstart` create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SHARED_DATA := $(wildcard ../shared/data/multi30k)
DATA_DIR ?= $(if $(GNMT_TF_DATA),$(GNMT_TF_DATA),$(SHARED_DATA))
MINUTES ?= 5
QUICKSTART_DIR ?= runs/quickstart

.PHONY: venv test test-all quickstart clean

$(BIN)/gnmt-tf: requirements.txt setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

venv: $(BIN)/gnmt-tf

test: venv
	$(BIN)/python -m pytest -q

test-all: venv
	$(BIN)/python -m pytest -q --run-slow

# Train a vocabulary and a small GNMT on Multi30k en->de for $(MINUTES) minutes,
# translate test_2016_flickr with beam search and score it.
quickstart: venv
	@test -n "$(DATA_DIR)" || { echo "set GNMT_TF_DATA or DATA_DIR to the Multi30k directory (or run: $(BIN)/gnmt-tf data download multi30k)"; exit 2; }
	$(BIN)/gnmt-tf quickstart --data-dir $(DATA_DIR) --model-dir $(QUICKSTART_DIR) --minutes $(MINUTES)

clean:
	rm -rf $(VENV) runs .pytest_cache
