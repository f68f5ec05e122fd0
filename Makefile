# The entry points for a fresh machine (see README.md):
#   make lab    set everything up and open the course in JupyterLab
#   make test   set everything up and run the whole test suite (what CI runs)
# and, for a self-learner, make explore: the course with every exercise solved
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# what is installed: the course's tools (.[course]: JupyterLab, nbgrader) for make lab, and with them the test
# tools (.[dev]: pytest, transformers, Playwright, ...) for make test and the benchmarks; .[dev] holds .[course]
COURSE := $(VENV)/.installed-course
DEV    := $(VENV)/.installed-dev
NBCONVERT_CONFIG := $(VENV)/etc/jupyter/jupyter_nbconvert_config.py

.PHONY: lab explore test setup system-packages fonts checkpoints bench gpu-wheels clean labextension

# The course's edition make lab opens: en (default), zh-TW or zh-CN, e.g. `make lab EDITION=zh-TW` (not LANG: that
# is the shell's locale). Another edition than English also installs JupyterLab's language pack for it
# (.[zh-tw] / .[zh-cn]) and opens with `posref lab --lang EDITION`.
EDITION ?= en
EDITIONS := en zh-TW zh-CN
ifeq ($(filter $(EDITION),$(EDITIONS)),)
$(error EDITION=$(EDITION) is not an edition of the course: use one of $(EDITIONS))
endif
EDITION_PACK := $(if $(filter-out en,$(EDITION)),$(VENV)/.installed-$(EDITION))
EDITION_ARGS := $(if $(filter-out en,$(EDITION)),--lang $(EDITION))

# JupyterLab on the student's own copy of the course (work/, filled from notebooks/; work-zh-TW/ from
# editions/zh-TW/notebooks/ for EDITION=zh-TW), opened on 00_start.ipynb, without nbgrader's instructor tools, as
# root too (see posref/launch.py and posref/workfolder.py)
lab: $(COURSE) $(NBCONVERT_CONFIG) fonts $(EDITION_PACK)
	$(PY) -m posref lab $(EDITION_ARGS)

# For a self-learner: the same course with every exercise solved, so that Run All reaches each explorer of 02-08,
# in a folder of its own (explore/, explore-zh-TW/ with EDITION=zh-TW; see posref/explore.py)
explore: $(COURSE) $(NBCONVERT_CONFIG) fonts $(EDITION_PACK)
	$(PY) -m posref explore $(EDITION_ARGS)

test: setup system-packages hub-proxy
	$(PY) -m pytest -q -n auto --durations=25

setup: $(DEV) $(NBCONVERT_CONFIG)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(COURSE): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install -q -c constraints.txt -e '.[course]'
	touch $@

$(DEV): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $@ $(COURSE) $(VENV)/.installed-zh-TW $(VENV)/.installed-zh-CN

# `jupyter nbconvert --to html` in any shell with this environment exports offline too (MathJax inside the page):
# nbconvert's configuration in the environment's own Jupyter config folder (see the file)
$(NBCONVERT_CONFIG): posref/jupyter_config/shell/jupyter_nbconvert_config.py | $(PY)
	mkdir -p $(dir $@)
	cp $< $@

# an edition's language pack; .[dev] holds both
$(VENV)/.installed-zh-TW $(VENV)/.installed-zh-CN: $(VENV)/.installed-%: $(COURSE)
	$(PY) -m pip install -q -c constraints.txt -e '.[$*]'
	touch $@

# A CJK font, so that figures show the lecture's Chinese example sentences (pinyin without one). Installed only
# as root with apt-get; elsewhere it says what to install.
fonts:
	@if fc-list 2>/dev/null | grep -q CJK; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null; } \
	    || echo "note: could not install fonts-noto-cjk (no network?): figures show pinyin"; \
	else echo "note: no CJK font found: figures show pinyin; install one (Debian/Ubuntu: sudo apt-get install fonts-noto-cjk)"; fi

# Debian packages the browser test (chromium) and the grading sandbox (bubblewrap) use. Installed only where
# this runs as root with apt-get; elsewhere those tests skip and say why.
system-packages:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for p in chromium bubblewrap fonts-noto-cjk; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi; \
	else echo "note: not root or no apt-get: install chromium and bubblewrap yourself for the browser and sandbox tests"; fi

# JupyterHub's proxy (configurable-http-proxy, from npm) as tools/hub's lock pins it, into .hub/ (git ignores it): what
# the JupyterHub test (tests/notebooks/test_hub.py) and a hub host run. Installed once per lock: nothing is fetched
# when it is there. JupyterHub itself is in the environment (.[hub], which .[dev] holds).
HUB_PROXY := .hub/node_modules/.bin/configurable-http-proxy
hub-proxy: $(HUB_PROXY)

$(HUB_PROXY): tools/hub/package.json tools/hub/package-lock.json
	@if command -v npm >/dev/null; then \
	  mkdir -p .hub && cp tools/hub/package.json tools/hub/package-lock.json .hub/ && \
	  (cd .hub && npm ci --no-audit --no-fund --loglevel=error) && touch $@; \
	else echo "note: no npm: the JupyterHub test skips (install Node.js 20 or later with npm)"; fi

# For whoever changes the course's Validate button or Assignment List (posref_jupyter/labextension/): rebuild its
# committed bundle (posref_jupyter/jupyter_data/labextensions/@posref/validate/) with the builder its lock pins; needs
# Node.js 20 and npm. Students never run it: the bundle is committed (tools/labextension.py; a test checks it is this build)
labextension: $(COURSE)
	cd posref_jupyter/labextension && npm ci --no-audit --no-fund --loglevel=error
	$(PY) tools/labextension.py build

checkpoints: setup
	$(PY) -m posref train-checkpoints --out data/checkpoints

bench: setup
	$(PY) -m posref.bench

# Wheels for the lent GPU machine's image (CPython 3.12; no downloads there) into .whl/, which the device call
# carries; see README.md, "The GPU run". Uses this checkout's venv for its versions when there is one.
gpu-wheels:
	PYTHON=$(if $(wildcard $(PY)),$(PY),$(PYTHON)) bash tools/gpu-wheels.sh

clean:
	rm -rf $(VENV) .pytest_cache
