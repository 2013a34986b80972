# ClusterDesigner. `make run` serves the app with embedded defaults; `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
PORT ?= 8000

export DJANGO_SETTINGS_MODULE := clusterdesigner.settings

.PHONY: install run test lint bench clean worker

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP) $(RUN_STAMP)

# What serving needs (make run): the package and its dependencies, not the test and lint tools.
$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(RUN_STAMP)

install: $(STAMP)

# Embedded defaults: SQLite under var/, Celery tasks in-process, debug on, demo catalog and designs loaded.
run: export DJANGO_DEBUG := 1
run: export DATABASE_URL := $(or $(DATABASE_URL),sqlite:///var/db.sqlite3)
run: $(RUN_STAMP)
	mkdir -p var
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_catalog
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

# The whole suite. Uses DATABASE_URL / REDIS_URL when set (CI points them at PostgreSQL and Redis);
# otherwise SQLite and in-process tasks, and the tests that need the real services skip (fail under CI=true).
# Three phases: the tests that may run side by side on TEST_WORKERS processes (pytest-xdist, one file per
# process at a time; the browser tests too, each file with its own Chromium); beside them, in one more
# process, the Celery-worker tests (marker "serial" in tests/integration and tests/browser: a real worker on
# the REDIS_URL broker, which no other test publishes to; their own test database; no clock bound but
# generous waits); then, alone, the fault tests (tests/faults: they stop servers and kill workers, and bound
# recoveries in seconds, so they run on a quiet machine). Only the folders that hold a phase's tests are
# collected (tests/conftest.py marks them). The worker tests mostly wait on their worker (~10 s of CPU in
# ~45 s) and took that long again after the parallel phase. Their output is kept in var/test-worker-phase.log
# and printed once the parallel phase ends. Every phase always runs; the target fails if any failed (a phase
# that selects no test, exit 5, is fine).
# Each pytest process builds its test database from the models (--nomigrations: the 37 migrations took ~12 s of
# every process's start on PostgreSQL); tests/project/test_migrations.py checks that models and migrations
# agree, every migration runs from empty on SQLite (tests/project/test_gunicorn_access_log.py) and on the fault
# tests' private PostgreSQL (tests/faults/conftest.py: private_postgres).
# Files go to the workers longest first, in the order tests/conftest.py sorts them (the crawl and browser
# files, then the rest by their number of tests), not xdist's (by number of tests, one-test browser files last).
# Three processes on the 2-core CI machine: the browser files wait on Chromium and the live server, and a third
# process fills that time (fresh-clone .ci/run: parallel phase 12 min 13 s with 2, 11 min 12 s with 3).
TEST_WORKERS ?= 3
# Bytecode is written during the tests even where the environment says not to (PYTHONDONTWRITEBYTECODE, set on
# the CI machines): pytest caches its assertion rewriting of the test modules in __pycache__, and without it every
# pytest process rewrites all of them again (~8 s of CPU each); the fault phase reuses what the others wrote.
test: install
	mkdir -p var artifacts
	status=0; \
	unset PYTHONDONTWRITEBYTECODE; \
	$(BIN)/pytest --nomigrations --durations=10 -m serial tests/browser tests/integration $(PYTEST_ARGS) \
		> var/test-worker-phase.log 2>&1 & worker_phase=$$!; \
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --nomigrations --durations=30 -m "not serial" $(PYTEST_ARGS) || { rc=$$?; [ $$rc -eq 5 ] || status=$$rc; }; \
	wait $$worker_phase || { rc=$$?; [ $$rc -eq 5 ] || status=$$rc; }; \
	cat var/test-worker-phase.log; \
	$(BIN)/pytest --nomigrations --durations=10 -m serial tests/faults $(PYTEST_ARGS) || { rc=$$?; [ $$rc -eq 5 ] || status=$$rc; }; \
	exit $$status

# Ruff's lint rules and its formatter (check only: `ruff format` fixes); mypy strict on the engine and with
# the django-stubs and DRF-stubs plugins on the rest, no module exempt (tests/project/test_mypy_config.py).
lint: install
	$(BIN)/ruff check clusterdesigner apps tests bench
	$(BIN)/ruff format --check clusterdesigner apps tests bench
	DJANGO_DEBUG=1 $(BIN)/mypy clusterdesigner apps

bench: install
	for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

worker: install
	$(BIN)/celery -A clusterdesigner worker --loglevel=INFO

clean:
	rm -rf $(VENV) var staticfiles artifacts .pytest_cache
