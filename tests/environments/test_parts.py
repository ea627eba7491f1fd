"""Polyglot repositories (environments/parts.py): a JavaScript/TypeScript part beside the main ecosystem, found from
the CI; its tests run after the main ones and each part's results are read by its runner; a real build of one."""

from __future__ import annotations

import subprocess

import pytest

from agents.tools import commands
from environments.parts import candidates
from environments.results import PART_MARK, parse_parts
from environments.runtime import info_of, provider_for
from tests.environments.test_detect import spec_of
from tests.sandbox.conftest import TEST_LIMITS
from tests.sandbox.envfixtures import TINY, built

WEB_PACKAGE = '{"name": "web", "scripts": {"test": "node --test"}}'
WORKFLOW = """name: ci
on: [push]
jobs:
  python:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e . && pytest
  web:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-node@v4
      - run: npm ci
        working-directory: web
      - name: test
        run: |
          cd web && npm test
"""
PYTHON = {"setup.py": "from setuptools import setup\nsetup(name='svc')\n", "svc.py": "", "tests/test_svc.py": ""}


def test_a_front_end_the_ci_installs_and_tests_is_a_part():
    det = spec_of({**PYTHON, "web/package.json": WEB_PACKAGE, "web/package-lock.json": "{}", "web/app.js": "",
                   ".github/workflows/ci.yml": WORKFLOW})
    part = det.spec.node_part
    assert part is not None and part.root == "web" and part.test == "npm test" and part.runner == "node-test"
    assert det.spec.test.kind == "pytest" and det.spec.node is None  # the main ecosystem stays Python
    assert "web/package.json" in det.files and "web/package-lock.json" in det.files
    assert any(r.field == "part" and "installed by .github/workflows/ci.yml" in r.source for r in det.reasons)
    path = det.spec.path().split(":")
    assert path[:3] == ["/opt/bosun-env/venv/bin", "/opt/bosun-env/node/bin", "/workspace/web/node_modules/.bin"]
    assert det.spec.sandbox_env()["npm_config_offline"] == "true"


def test_a_front_end_the_ci_does_not_run_is_no_part_and_a_declaration_gets_none():
    repo = {**PYTHON, "web/package.json": WEB_PACKAGE}
    assert spec_of(repo).spec.node_part is None  # no workflow
    only_install = WORKFLOW.replace("cd web && npm test", "echo done")
    installed = spec_of({**repo, ".github/workflows/ci.yml": only_install}).spec.node_part
    assert installed is not None and installed.test == ""  # its toolchain and packages, its tests not run
    other = spec_of({**repo, ".github/workflows/ci.yml": WORKFLOW.replace("web", "docs")}).spec
    assert other.node_part is None  # the CI works in another folder
    declared = spec_of({**repo, ".github/workflows/ci.yml": WORKFLOW, ".bosun/environment.toml": 'python = "3.11"\n'})
    assert declared.spec.node_part is None  # a declaration says everything itself
    go = spec_of({"go.mod": "module x\n\ngo 1.21\n", "main.go": "package main\n", "ui/package.json": WEB_PACKAGE,
                  ".github/workflows/ui.yml": "jobs:\n  ui:\n    defaults:\n      run:\n        working-directory: ui\n"
                                              "    steps:\n      - run: yarn install && yarn test\n"})
    assert go.spec.native is not None and go.spec.node_part is not None and go.spec.node_part.root == "ui"


def test_the_candidates_are_near_the_top_and_outside_vendored_folders():
    paths = ["package.json", "web/package.json", "a/b/package.json", "a/b/c/package.json",
             "node_modules/x/package.json", ".github/x/package.json", "web/not-package.json"]
    assert candidates(paths) == ["", "web", "a/b"]


def info():
    det = spec_of({**PYTHON, "web/package.json": WEB_PACKAGE, ".github/workflows/ci.yml": WORKFLOW})
    from environments.models import EnvRecord  # noqa: PLC0415

    record = EnvRecord(env_id="env-x", key="x", python="3.13.1", base="b", spec=det.spec, test_command="")
    return info_of(record)


def test_the_test_run_runs_every_part_and_reads_each_by_its_runner():
    env = info()
    cmd, is_pytest = commands.test_invocation(env, [])
    assert isinstance(cmd, str) and is_pytest and f"echo {PART_MARK}web" in cmd and "(cd web && npm test) 2>&1" in cmd
    assert cmd.endswith("exit $s")
    output = ("PASSED tests/test_svc.py::test_a\n= 1 passed in 0.1s =\n"
              f"{PART_MARK}web\n"
              "# Subtest: adds\nok 1 - adds\n  ---\n  duration_ms: 1\n  ...\n"
              "# Subtest: breaks\nnot ok 2 - breaks\n  ---\n  error: 'boom'\n  ...\n1..2\n# pass 1\n# fail 1\n")
    report = commands.read_report(env, output, 1)
    assert "tests/test_svc.py::test_a" in report.passed and report.exit_code == 1
    assert any(t.startswith("web/") and "adds" in t for t in report.passed), report
    assert any(t.startswith("web/") and "breaks" in t for t in report.failed), report
    # ids under the part's folder run that part alone; others the main runner
    only, _ = commands.test_invocation(env, ["web/test/a.test.js"])
    assert only.startswith(f"echo {PART_MARK}web; cd web && npm test -- test/a.test.js")
    main, _ = commands.test_invocation(env, ["tests/test_svc.py::test_a"])
    assert "tests/test_svc.py::test_a" in main and "npm" not in main


def test_a_marker_for_no_known_part_changes_nothing():
    text = "PASSED t.py::a\n= 1 passed in 0.1s =\n"
    assert parse_parts("pytest", {}, text, 0).passed == ["t.py::a"]
    hostile = text + f"{PART_MARK}../../etc\nok 1 - x\n"
    assert parse_parts("pytest", {"web": "tap"}, hostile, 0).passed == ["t.py::a"]


@pytest.mark.docker
async def test_a_python_service_with_a_front_end_builds_both_and_runs_both_tests(envs, tmp_path, request):
    files = {**TINY, "web/package.json": WEB_PACKAGE, ".github/workflows/ci.yml": WORKFLOW,
             "web/test/sum.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
                                     "test('adds', () => assert.strictEqual(1 + 1, 2));\n"}
    record = built(envs, tmp_path / "poly", files, request)
    repo = tmp_path / "poly"
    assert record.spec.node_part is not None and record.toolchain.get("node")
    env = info_of(record)
    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", str(repo), str(ws)], check=True)
    subprocess.run(["chown", "-R", "1000:1000", str(ws)], check=True)
    box = await provider_for(record, "docker", limits=TEST_LIMITS).acquire(ws)
    try:
        cmd, _ = commands.test_invocation(env, [])
        res = await box.exec(cmd, timeout_s=300)
        report = commands.read_report(env, res.stdout + "\n" + res.stderr, res.exit_code)
        assert res.exit_code == 0, res.stdout[-2000:] + res.stderr[-2000:]
        assert any(t.startswith("tests/") for t in report.passed), report
        assert any(t.startswith("web/") and "adds" in t for t in report.passed), report
    finally:
        await box.close()


def test_a_hostile_workflow_is_read_in_linear_time():
    import time  # noqa: PLC0415

    text = "defaults:" + " \n" * 150_000 + "cd web" + " " * 100_000 + "\n- " * 50_000
    started = time.monotonic()
    det = spec_of({**PYTHON, "web/package.json": WEB_PACKAGE, ".github/workflows/x.yml": text[:500_000]})
    assert time.monotonic() - started < 2.0 and det.spec.node_part is None
