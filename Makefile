# The two commands of the README: `make run` and `make test`. Everything else is a helper.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)
# Set REQUIRE_SERVICES=1 to make tests that need PostgreSQL/Redis fail (not skip) when absent.
REQUIRE_SERVICES ?= 0
PYTEST_ARGS ?=

.PHONY: install run test lint

$(STAMP): requirements.txt requirements-dev.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(BIN)/ruff check .

test: install lint
	REQUIRE_SERVICES=$(REQUIRE_SERVICES) $(BIN)/pytest $(PYTEST_ARGS)
