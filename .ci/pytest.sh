#!/usr/bin/env bash
# Runs the suite in two phases, each with the same arguments:
#   1. every test but the serial ones, on BOSUN_TEST_WORKERS processes (pytest-xdist; default 4, 0 for one
#      process): each process starts its own embedded stack, on free ports, when a test first needs one;
#   2. the serial ones (the `serial` marker, and every test that starts a cluster) without the rest of the suite, on
#      BOSUN_TEST_SERIAL_WORKERS processes (default 2: two clusters at a time; 1 for one at a time): they measure host
#      and NATS loss against deadlines, which the whole suite's load would miss.
# tests/conftest.py selects each phase's tests from BOSUN_TEST_PHASE. pytest's exit 5 ("no tests collected") is a
# failure only when neither phase collected a test; both phases run, and the first failure's code is the exit code.
set -uo pipefail
cd "$(dirname "$0")/.."
workers="${BOSUN_TEST_WORKERS:-4}"
if ! [[ "$workers" =~ ^[0-9]+$ ]]; then
  echo "BOSUN_TEST_WORKERS=$workers: give a number of processes (0: run in this one)" >&2
  exit 2
fi
serial_workers="${BOSUN_TEST_SERIAL_WORKERS:-2}"
if ! [[ "$serial_workers" =~ ^[0-9]+$ ]]; then
  echo "BOSUN_TEST_SERIAL_WORKERS=$serial_workers: give a number of processes (0 or 1: run in this one)" >&2
  exit 2
fi
parallel=()
if [ "$workers" -gt 0 ]; then
  parallel=(-n "$workers" --dist worksteal)
fi
serial=()
if [ "$serial_workers" -gt 1 ]; then
  serial=(-n "$serial_workers" --dist worksteal)
fi
# pytest rewrites each test module's asserts on import and caches the result beside it, unless
# PYTHONDONTWRITEBYTECODE is set (as in many CI images): then each of the phases' processes would rewrite all of
# them again, about 9 s each. One collection with writing allowed fills that cache; the processes read it.
PYTHONDONTWRITEBYTECODE= .venv/bin/python -m pytest --collect-only -q -p no:cacheprovider "$@" >/dev/null 2>&1 || true
BOSUN_TEST_PHASE=parallel .venv/bin/python -m pytest "${parallel[@]}" "$@"
rc1=$?
BOSUN_TEST_PHASE=serial .venv/bin/python -m pytest "${serial[@]}" "$@"
rc2=$?
for rc in "$rc1" "$rc2"; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
    exit "$rc"
  fi
done
if [ "$rc1" -eq 5 ] && [ "$rc2" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit 0
