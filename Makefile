# idlelab: `make serve` starts the dashboard, `make test` runs every test.
# Both create .venv and install the package (editable, with test extras) when needed.

PYTHON ?= python3
VENV ?= .venv
HOST ?= $(or $(IDLELAB_HOST),127.0.0.1)
PORT ?= $(or $(IDLELAB_PORT),8000)
BIN := $(VENV)/bin
STAMP := $(VENV)/.idlelab-installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup migrate warm serve test chromium bench lint clean

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

test: setup chromium
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python bench/api.py

lint: setup
	$(BIN)/ruff check app engine tests bench migrations
	$(BIN)/mypy

clean:
	rm -rf .pytest_cache .ruff_cache .mypy_cache engine/__pycache__
