"""Go and Rust repositories: detection (environments/golang.py, environments/rust.py, pure) and real builds with
Debian's toolchains whose tests run offline in a sandbox and read as the runner writes them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from environments import ecosystems, golang, java, rust
from environments.detect import detect
from environments.repofiles import MemoryFiles
from environments.results import parse_output
from tests.sandbox.envfixtures import make_repo

DATA = Path(__file__).parent / "data"


def probe_files(name: str) -> dict[str, str]:
    root = DATA / name
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_a_go_module_is_detected_with_debians_go_and_its_dependencies_fetched_at_build_time():
    mod = ("module github.com/acme/tool\n\ngo 1.22.3\n\ntoolchain go1.23.1\n\nrequire (\n\tgithub.com/x/y v1.2.0\n"
           "\t// a comment\n\tgolang.org/x/sys v0.20.0 // indirect\n)\n\nrequire example.com/z v0.1.0\n")
    det = detect(MemoryFiles({"go.mod": mod, "go.sum": "x\n", "main.go": "package main\n", "cli/cli.go": "",
                              "tools/gen.py": ""}))
    spec = det.spec
    assert spec.native is not None and spec.native.language == "go" and spec.native.runner == "go"
    assert spec.apt == ["golang-go"] and spec.setup == ["go mod download"] and not spec.install_project
    assert spec.test.argv == ["go", "test", "-json", "./..."] and spec.env["GOTOOLCHAIN"] == "local"
    assert spec.sandbox_env()["GOPROXY"] == "off" and "GOPROXY" not in spec.env  # the build may download
    assert set(det.files) == {"go.mod", "go.sum"} and all(v.startswith("blob:") for v in det.files.values())
    why = {r.field: (r.value, r.source) for r in det.reasons}
    assert why["go"][0] == "1.22.3" and why["toolchain line"][0] == "1.23.1" and "3 module(s)" in why["dependencies"][1]
    assert not det.warning and not det.notes


def test_go_details_a_workspace_a_vendor_folder_and_a_go_newer_than_debians():
    f = golang.facts({"go.work": "go 1.22\n\nuse (\n\t./api // the API\n\t./cli\n)\nuse ./extra\n"}, {"go.work"})
    assert f.workspace == ["./api", "./cli", "./extra"]
    assert golang.plan(f)[2] == ["go mod download"]
    vendored = golang.plan(golang.facts({"go.mod": "module m\ngo 1.20\nrequire a v1\n"}, {"go.mod",
                                                                                       "vendor/modules.txt"}))
    assert vendored[2] == [] and any(r.value == "vendor/" for r in vendored[4])
    bare = golang.plan(golang.facts({"go.mod": "module m\n\ngo 1.12\n"}, {"go.mod"}))
    assert bare[2] == [] and not bare[5]
    newer = golang.plan(golang.facts({"go.mod": "module m\n\ngo 1.99\n"}, {"go.mod"}))
    assert "needs Go 1.99, newer than Debian's" in newer[5][0]
    hostile = golang.facts({"go.mod": "module " + "x" * 5000 + "\ngo notaversion\nrequire (\n"}, {"go.mod"})
    assert len(hostile.module) == 200 and hostile.go == "" and hostile.requires == 0
    patch = golang.plan(golang.facts({"go.mod": "module m\n\ngo 1.24.99\n"}, {"go.mod"}))
    assert "newer than Debian's" in patch[5][0]  # a patch release newer than Debian's is refused by go too
    import time
    started = time.monotonic()  # one pass over the lines: 100,000 unclosed blocks cost nothing
    many = golang.facts({"go.mod": "require (\n" * 100_000, "go.work": "use (\n" * 100_000}, {"go.mod", "go.work"})
    assert many.requires <= golang._MAX_LINES and len(many.workspace) <= 100 and time.monotonic() - started < 2


def test_a_rust_package_is_detected_with_debians_cargo_and_its_workspace():
    cargo = ('[package]\nname = "tool"\nrust-version = "1.70"\n[dependencies]\nserde = "1"\n'
             '[dev-dependencies]\nquickcheck = "1"\n[target.\'cfg(unix)\'.dependencies]\nlibc = "0.2"\n'
             '[workspace]\nmembers = ["crates/*"]\n[workspace.dependencies]\nlog = "0.4"\n')
    det = detect(MemoryFiles({"Cargo.toml": cargo, "Cargo.lock": "", "rust-toolchain.toml":
                              '[toolchain]\nchannel = "nightly-2024-01-01"\n', "src/lib.rs": ""}))
    spec = det.spec
    assert spec.native is not None and spec.native.runner == "cargo" and spec.apt == ["cargo"]
    assert spec.setup == ["cargo fetch"] and spec.test.argv == ["cargo", "test", "--workspace", "--no-fail-fast"]
    assert spec.sandbox_env()["CARGO_NET_OFFLINE"] == "true" and spec.env["CARGO_HOME"].startswith("/opt/bosun-env")
    why = {r.field: (r.value, r.source) for r in det.reasons}
    assert "4 dependencies, pinned by Cargo.lock" in why["dependencies"][1] and why["workspace"][0] == "crates/*"
    assert any("nightly-2024-01-01" in n for n in det.notes)
    assert set(det.files) == {"Cargo.toml", "Cargo.lock", "rust-toolchain.toml"}
    members = detect(MemoryFiles({"Cargo.toml": cargo, "crates/a/Cargo.toml": "[package]\nname = 'a'\n",
                                  "target/x/Cargo.toml": "", "src/lib.rs": ""}))
    assert set(members.files) == {"Cargo.toml", "crates/a/Cargo.toml"}  # a member's dependencies key it too
    go_work = detect(MemoryFiles({"go.work": "go 1.22\nuse ./api\n", "api/go.mod": "module a\n", "api/go.sum": "",
                                  "api/a.go": "", "vendor/x/go.mod": "", "b.go": ""}))
    assert set(go_work.files) == {"go.work", "api/go.mod", "api/go.sum"}


def test_rust_files_that_are_not_valid_are_notes_not_crashes():
    f = rust.facts({"Cargo.toml": "[package\nname=", "rust-toolchain": "[toolchain\n"}, {"Cargo.toml"})
    assert f.package == "" and f.dependencies == 0 and len(f.notes) == 2
    deep = rust.facts({"Cargo.toml": "a = " + "[" * 100_000, "rust-toolchain.toml": "b = " + "{x = " * 50_000},
                      {"Cargo.toml"})
    assert deep.package == "" and len(deep.notes) == 2  # (tomllib recurses: too deep is a note, not a crash)
    legacy = rust.facts({"Cargo.toml": '[package]\nname = "x"\n[workspace]\nmembers = "no-list"\n',
                         "rust-toolchain": "1.99.0\n"}, {"Cargo.toml"})
    assert legacy.channel == "1.99.0" and legacy.members == []
    assert any("Debian's rustc" in n for n in rust.plan(legacy)[5])


def test_the_ecosystem_is_the_projects_not_its_scripts():
    go_repo = ["go.mod", "main.go", "cmd/a.go", "hack/gen.py"]
    assert ecosystems.kind(go_repo) == "go" and ecosystems.kind(["Cargo.toml", "src/lib.rs"]) == "rust"
    assert ecosystems.kind([*go_repo, "setup.py"]) == "python"  # Python's configuration at the top decides
    assert ecosystems.kind(["go.mod", "x.py", "y.py", "z.go"]) == "python"
    assert ecosystems.kind(["package.json", "go.mod", "a.js"]) == "node"
    assert ecosystems.kind(["package.json", "go.mod", "commitlint.config.js", "a.go", "cmd/b.go"]) == "go"
    assert ecosystems.unsupported(go_repo) == "" and ecosystems.unsupported(["Cargo.toml", "src/lib.rs"]) == ""
    assert ecosystems.kind(["pom.xml", "src/main/java/A.java"]) == "java"
    assert ecosystems.kind(["settings.gradle.kts", "app/build.gradle.kts", "app/src/main/kotlin/A.kt"]) == "java"
    assert "Gemfile (Ruby)" in ecosystems.unsupported(["Gemfile", "lib/a.rb"])


POM = """<project><properties><maven.compiler.source>1.8</maven.compiler.source>
<maven.compiler.target>1.8</maven.compiler.target></properties></project>"""


def test_a_maven_project_is_detected_with_debians_jdk_and_maven_and_read_by_its_junit_reports():
    det = detect(MemoryFiles({"pom.xml": POM, "src/main/java/a/A.java": "", "src/test/java/a/ATest.java": ""}))
    spec = det.spec
    assert spec.native is not None and spec.native.language == "java" and spec.native.runner == "junit"
    assert spec.apt == ["openjdk-21-jdk-headless", "maven"] and spec.setup[0].startswith("mvn -B -ntp -q")
    assert spec.env["MAVEN_OPTS"] == "-Dmaven.repo.local=/opt/bosun-env/m2"
    assert spec.test.argv[:2] == ["sh", "-c"] and "mvn -B -o -ntp " in spec.test.argv[2]
    assert "-Dmaven.test.failure.ignore=true" in spec.setup[0]  # (Surefire resolves its provider only by running)
    why = {r.field: r.value for r in det.reasons}
    assert why["jdk"] == "openjdk-21-jdk-headless" and set(det.files) == {"pom.xml"}
    assert any("asks for Java 8" in r.source for r in det.reasons)


@pytest.mark.parametrize("files,jdk,wrapper", [
    ({"build.gradle.kts": "kotlin { jvmToolchain(25) }", "gradlew": ""}, 25, True),
    ({"build.gradle": "java { toolchain { languageVersion = JavaLanguageVersion.of(17) } }"}, 17, False),
    ({"build.gradle": "sourceCompatibility = JavaVersion.VERSION_1_8\n", "gradlew": ""}, 8, True),
    ({"build.gradle": "sourceCompatibility = '11'\n"}, 11, False),
])
def test_a_gradle_project_gets_the_jdk_its_build_names(files, jdk, wrapper):
    f = java.facts(files, set(files))
    assert f.tool == "gradle" and f.java == jdk and f.wrapper == wrapper
    _, apt, _, test, _, notes = java.plan(f)
    assert apt[0] == f"openjdk-{25 if jdk == 25 else 21}-jdk-headless"
    assert ("./gradlew" if wrapper else "gradle --no-daemon") in test.argv[2] and "cleanTest test" in test.argv[2]
    assert ("gradle" in apt) == (not wrapper)
    assert any("no gradlew" in n for n in notes) == (not wrapper)
    assert any("toolchain, which the base's suite does not have" in n for n in notes) == (jdk == 17)


def test_java_versions_out_of_reach_are_notes():
    f = java.facts({"pom.xml": "<java.version>30</java.version><release>x</release>"}, {"pom.xml"})
    assert f.java == 30 and java.jdk_for(30) == 25 and "newer than Debian's JDK 25" in java.plan(f)[5][0]
    assert java.feature("1.8") == 8 and java.feature("17.0.2") == 17 and java.feature("x") == 0
    assert java.facts({"pom.xml": "<java.version>999999</java.version>"}, {"pom.xml"}).java == 0
    old = java.facts({"pom.xml": "<maven.compiler.source>1.6</maven.compiler.source>"}, {"pom.xml"})
    assert old.java == 6 and "compiles Java 8 and later only" in java.plan(old)[5][0]


def test_the_java_test_command_prints_this_runs_reports_alone_on_stdout(tmp_path):
    """The script's report dump, run by a real shell: the reports written after the run started (not an earlier
    run's) come out on stdout under their markers, from any module, and read right; the build tool gets run_tests'
    arguments ("$@") and writes its own output to stderr."""
    import os
    import subprocess

    det = detect(MemoryFiles({"pom.xml": POM, "src/A.java": ""}))
    assert 'test "$@" >&2; rc=$?; ' in det.spec.test.argv[2] and det.spec.test.argv[3:] == ["tests"]
    stamp = str(tmp_path / "stamp")
    stale = tmp_path / "core" / "target" / "surefire-reports"
    stale.mkdir(parents=True)
    (stale / "TEST-Old.xml").write_text('<testsuite><testcase classname="Old" name="gone"/></testsuite>')
    os.utime(stale / "TEST-Old.xml", (1_000_000_000, 1_000_000_000))
    fresh = tmp_path / "api" / "target" / "surefire-reports"
    fresh.mkdir(parents=True)
    report = ('<testsuite><testcase classname="a.B" name="ok"/><testcase classname="a.B" name="bad">'
              '<failure message="expected 1"/></testcase></testsuite>')
    script = f"touch {stamp}; sleep 1; printf '%s' '{report}' > api/target/surefire-reports/TEST-a.B.xml; " + \
        java._DUMP.replace(java.STAMP, stamp)
    ran = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert "<!-- bosun: junit report ./api/target/surefire-reports/TEST-a.B.xml -->" in ran.stdout
    got = parse_output("junit", ran.stdout, 1)
    assert got.passed == ["a.B#ok"] and got.failed == ["a.B#bad"] and "Old#gone" not in ran.stdout


def test_junit_reports_are_read_as_a_real_runner_writes_them(tmp_path):
    """pytest's --junitxml is a real JUnit XML writer: its report, printed as the Java test command prints
    Surefire's, gives the statuses pytest's own summary gives."""
    import subprocess
    import sys

    (tmp_path / "test_probe.py").write_text(
        "import pytest\n\ndef test_ok():\n    assert 1\n\ndef test_bad():\n    assert 0, 'one & <two>'\n\n"
        "@pytest.mark.skip\ndef test_skip():\n    pass\n\nclass TestGroup:\n    def test_in(self):\n        pass\n")
    ran = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "--junitxml=r.xml",
                          "test_probe.py"], cwd=tmp_path, capture_output=True, text=True)
    own = parse_output("pytest", ran.stdout, ran.returncode)
    output = ("[INFO] Tests run: 4\n<!-- bosun: junit report ./target/surefire-reports/TEST-probe.xml -->\n"
              + (tmp_path / "r.xml").read_text() + "\n")
    report = parse_output("junit", output, ran.returncode)
    assert report.failed == ["test_probe#test_bad"] and "one & <two>" in report.messages["test_probe#test_bad"]
    assert sorted(report.passed) == ["test_probe#test_ok", "test_probe.TestGroup#test_in"]
    assert report.counts == {"passed": 2, "failed": 1, "skipped": 1}
    assert len(own.passed) == len(report.passed) and len(own.failed) == len(report.failed)


def test_hostile_junit_reports_are_data():
    import time
    started = time.monotonic()  # plain searches: 100,000 unclosed cases and a DOCTYPE in a test's output cost nothing
    assert parse_output("junit", '<testcase name="x">' * 100_000, 1).passed == []
    html = ('<testcase name="a" classname="C"><system-out><![CDATA[<!DOCTYPE html>]]></system-out></testcase>'
            '<testcase name="b" classname="C"><failure message="m"/></testcase>')
    assert parse_output("junit", html, 1).failed == ["C#b"] and time.monotonic() - started < 2
    bomb = ('<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
            '<testsuite><testcase name="x" classname="&b;"/></testsuite>')
    assert parse_output("junit", bomb, 1).passed == []
    broken = '<testcase name="a" classname="C"/><testcase name="b" classname="C"><failure message="m"' \
             '<testcase name="c"><error message="boom"/></testcase><testcase classname="C"/>'
    r = parse_output("junit", broken, 1)
    assert r.passed == ["C#a"] and r.failed == []  # the malformed case and the nameless one are passed over
    rerun = ('<testcase name="t" classname="C"><failure/></testcase>\n'
             '<testcase name="t" classname="C"></testcase>')
    assert parse_output("junit", rerun, 0).passed == ["C#t"]


# -- real builds ---------------------------------------------------------------------------------------------------

async def _build_and_test(envs, tmp_path, name: str, break_test: tuple[str, str, str], command: list[str]):
    from environments.runtime import provider_for, run_of
    from sandbox.base import Limits
    from tests.sandbox.conftest import chown_tree

    repo = make_repo(tmp_path / name, probe_files(name))
    det, tree = envs.detect_repo(str(repo))
    record = envs.ensure(det, tree).record
    again = envs.ensure(*envs.detect_repo(str(repo)))
    assert again.cached and again.record.env_id == record.env_id
    ws = tmp_path / "ws"
    shutil.copytree(repo, ws, ignore=shutil.ignore_patterns(".git"))
    path, old, new = break_test
    (ws / path).write_text((ws / path).read_text().replace(old, new))
    chown_tree(ws, 1000, 1000)
    # (the default /tmp: go's build cache of the standard library's packages the tests use is ~60 MB)
    limits = Limits(memory_mb=1024, pids=512, cpus=1.0, tmp_mb=256, nofile=4096)
    box = await provider_for(record, "docker", limits=limits).acquire(ws)
    try:
        res = await box.exec(command, timeout_s=600, output_cap=400_000)
    finally:
        await box.close()
    report = parse_output(run_of(record).info.runner, res.stdout + "\n" + res.stderr, res.exit_code)
    return record, res, report


@pytest.mark.docker
async def test_a_go_module_builds_with_debians_go_and_its_tests_run_offline(envs, tmp_path):
    """The probe module (two packages, a subtest): Debian's Go in the base, `go test -json ./...` in a sandbox
    without network, every test's status read from go's own events; a test made to fail is named."""
    record, res, report = await _build_and_test(
        envs, tmp_path, "go-probe", ("count_test.go", 'Count("   "); got != 0', 'Count("   "); got != 1'),
        ["go", "test", "-json", "./..."])
    assert record.toolchain["go"].startswith(golang.DEBIAN_GO) and record.spec.native.language == "go"
    assert res.exit_code == 1, res.stdout[-2000:]
    assert report.failed == ["example.com/probe/TestCountEmpty"], res.stdout[-3000:]
    assert sorted(report.passed) == ["example.com/probe/TestCountWords", "example.com/probe/upper/TestShout",
                                     "example.com/probe/upper/TestShout/Go", "example.com/probe/upper/TestShout/a"]


@pytest.mark.docker
async def test_a_rust_crate_builds_with_debians_cargo_and_its_tests_run_offline(envs, tmp_path):
    """The probe crate (unit and integration tests): Debian's cargo in the base, `cargo fetch` at build time
    writes the Cargo.lock the repository lacks (kept, and listed as a file git does not ignore), the tests run in
    a sandbox without network and every binary's results are read; a test made to fail is named."""
    record, res, report = await _build_and_test(
        envs, tmp_path, "rust-probe", ("src/lib.rs", 'count("   "), 0', 'count("   "), 1'),
        ["cargo", "test", "--workspace", "--no-fail-fast"])
    assert record.toolchain["cargo"].startswith(rust.DEBIAN_RUST) and "rustc" in record.toolchain
    assert record.seed_unignored == ["Cargo.lock"]
    assert res.exit_code != 0, res.stdout[-2000:]
    assert report.failed == ["tests::empty_is_zero"], (res.stdout + res.stderr)[-3000:]
    assert sorted(report.passed) == ["counts_through_the_public_api", "tests::counts_words"]
    assert report.counts == {"passed": 2, "failed": 1}
