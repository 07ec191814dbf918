# `make demo` and `make test` do all the set-up on a fresh machine: .venv, CPU torch first, then the project.
PYTHON ?= python3
VENV ?= .venv
DOCS_VENV ?= .venv-docs
# where torch==2.13.0 comes from (tools/torch_index.py): auto = a local build if pip has one (find-links),
# else on Linux PyTorch's CPU index (PyPI's Linux torch is the CUDA build: gigabytes), else PyPI;
# pypi = the default index whatever it gives; or an index URL, e.g. for CUDA 12.8:
#   make setup TORCH_INDEX=https://download.pytorch.org/whl/cu128
TORCH_INDEX ?= auto
PY := $(VENV)/bin/python
DEMO_STAMP := $(VENV)/.demo-stamp
STAMP := $(VENV)/.installed-stamp

.PHONY: setup test lint docs site demo bench browser clean

# make demo: torch, the project and what train.demo needs (the demo extra) and nothing else
$(DEMO_STAMP): pyproject.toml constraints.txt tools/torch_index.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# the pinned CPU build of torch must come first: anything else downloads gigabytes
	from=$$($(PY) tools/torch_index.py $(TORCH_INDEX)) && $(PY) -m pip install --quiet torch==2.13.0 $$from
	# constraints.txt keeps that torch while the extras install (torchrl, tianshou ask for torch too)
	$(PY) -m pip install --quiet -e ".[demo]" -c constraints.txt
	# the research code (agents/, train/, benchmarks/) is not installed: a path entry for this
	# checkout makes it importable from anywhere in this venv (notebooks, Ray workers)
	$(PY) -c 'import pathlib, site; pathlib.Path(site.getsitepackages()[0], "patchwork-checkout.pth").write_text(str(pathlib.Path.cwd()) + "\n")'
	touch $@

# make test and the rest: everything else on top
$(STAMP): $(DEMO_STAMP)
	$(PY) -m pip install --quiet -e ".[train,dev,interop,scale,openspiel]" -c constraints.txt
	touch $@

setup: $(STAMP)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check --exclude "*.ipynb" .
	$(VENV)/bin/mypy patchwork_env agents train
	$(VENV)/bin/lint-imports

# the documentation site alone, from a small venv of its own (the library and mkdocs: no torch, no Ray)
$(DOCS_VENV)/.docs-stamp: pyproject.toml
	test -x $(DOCS_VENV)/bin/python || $(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install --quiet -e ".[docs]"
	touch $@

docs: $(DOCS_VENV)/.docs-stamp
	$(MAKE) site VENV=$(DOCS_VENV)

# the site (mkdocs-material) from the venv VENV names, warnings as errors; the results pages must be current
site:
	$(VENV)/bin/python tools/render_results.py --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

test: lint
	$(MAKE) site
	$(VENV)/bin/pytest --nbmake

demo: $(DEMO_STAMP)
	$(PY) -m train.demo

bench: setup
	$(PY) -m benchmarks

# Debian's chromium + chromedriver for the replay viewer's browser tests (never a downloaded
# browser); without them those tests skip, except under CI=true where they fail. .ci/run calls this.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		echo "chromium and chromedriver are installed"; \
	else \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	fi

clean:
	rm -rf $(VENV) $(DOCS_VENV) .pytest_cache .mypy_cache .ruff_cache site
