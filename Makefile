# bosun — two commands for a newcomer: `make demo` and `make test`. Both bootstrap what they need.
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: bootstrap demo test test-fast lint bench lock up down clean

bootstrap:
	@bash infra/bootstrap.sh

# The demo installs what bosun needs; the suite also what only its tests use (a browser, nginx).
demo:
	@bash infra/bootstrap.sh demo
	@$(PY) -m entry.demo

test: bootstrap
	@bash .ci/pytest.sh $(PYTEST_ARGS)

# The same suite without the slow crash/restart/load tests.
test-fast: bootstrap
	@bash .ci/pytest.sh -m "not slow" $(PYTEST_ARGS)

lint: bootstrap
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/lint-imports

bench: bootstrap
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# Re-pin constraints.txt from the current .venv.
lock:
	@$(VENV)/bin/pip freeze --exclude-editable | grep -v '^-e ' > constraints.txt && echo "constraints.txt updated"

up:
	@$(VENV)/bin/bosun up
down:
	@$(VENV)/bin/bosun down

clean:
	@$(VENV)/bin/bosun down || true
	rm -rf $(VENV) .pytest_cache
