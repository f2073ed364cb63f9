# The two commands a new user runs (see README):
#   make demo   set up, build the demo database with the local model, open the dashboard
#   make test   set up (including Debian's Chromium for browser tests) and run every test
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.framewatch-installed

.PHONY: install demo test test-fast browser bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: this machine carries the CPU wheel on local disk; anything
	# else would make sentence-transformers pull a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	# llama-cpp-python is source-only on PyPI: about 3 minutes to compile on 2 cores, once.
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/framewatch demo

# Browser tests drive Debian's Chromium; never a downloaded browser.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "chromium missing and not root: browser tests will be skipped (apt-get install chromium chromium-driver)"; fi; }

# pytest exits 5 when a selection collects no test; that is not a failure of the code.
test: install browser
	$(PY) -m pytest -q; rc=$$?; [ $$rc -eq 5 ] && exit 0; exit $$rc

test-fast: install
	$(PY) -m pytest -q -m "not slow and not e2e"

# Each script prints its figures as JSON; bench_dashboard.py needs bench/make_store.py first (about 11 minutes).
bench: install
	$(PY) bench/bench_demo.py
	$(PY) bench/bench_ingest.py
	$(PY) bench/bench_providers.py
	$(PY) bench/bench_scoring.py
	$(PY) bench/bench_stereo.py

clean:
	rm -rf $(VENV) data test-artifacts .pytest_cache
