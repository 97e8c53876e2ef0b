# idlelab: `make serve` starts the dashboard, `make test` runs every test.
# Both create .venv and install the package (editable, with test extras) when needed.

PYTHON ?= python3
VENV ?= .venv
HOST ?= $(or $(IDLELAB_HOST),127.0.0.1)
PORT ?= $(or $(IDLELAB_PORT),8000)
BIN := $(VENV)/bin
STAMP := $(VENV)/.idlelab-installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup migrate warm serve test chromium postgres bench lint clean

$(STAMP): pyproject.toml
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

migrate: setup
	$(BIN)/idlelab db upgrade

# Compiles the engine once after install (~20 s, said on the terminal), so no run waits for it.
warm: setup
	$(BIN)/idlelab warm

serve: migrate warm
	$(BIN)/idlelab serve --host $(HOST) --port $(PORT)

# Browser tests drive Debian's Chromium; no test tool downloads a browser of its own.
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
		$(SUDO) apt-get update && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	fi

# PostgreSQL's binaries for the tests' PostgreSQL half: the tests start a throwaway server of their
# own (tests/postgres.py), so the package must not create a cluster of its own.
postgres:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		$(SUDO) mkdir -p /etc/postgresql-common && \
		echo 'create_main_cluster = false' | $(SUDO) tee -a /etc/postgresql-common/createcluster.conf >/dev/null && \
		$(SUDO) apt-get update && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y \
			-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold postgresql; \
	fi

test: setup chromium postgres
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python bench/api.py
	$(BIN)/python bench/sweep.py

lint: setup
	$(BIN)/ruff check app engine tests bench migrations
	$(BIN)/mypy

clean:
	rm -rf .pytest_cache .ruff_cache .mypy_cache engine/__pycache__
