"""`bosun env` and `bosun sandbox exec --env`: the contract an external benchmark calls (names, flags, JSON keys,
exit codes), and bad input refused with a clear, specific error that changes nothing."""

from __future__ import annotations

import hashlib
import io
import json
import secrets
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.conftest import bosun
from tests.sandbox.conftest import chown_tree
from tests.sandbox.envfixtures import TINY, make_repo

BUILD_KEYS = {"env_id", "python", "cached", "outdated", "build_s", "test_command", "backend_refs", "log",
              "warnings", "seed_unignored", "attempts", "toolchain"}


def test_show_explains_without_building(tmp_path: Path):
    repo = make_repo(tmp_path / "tiny", TINY)
    proc = bosun("env", "show", "--repo", str(repo))
    assert proc.returncode == 0, proc.stderr
    assert "python                 3.13" in proc.stdout and "test command           python -m pytest" in proc.stdout
    assert "why:" in proc.stdout and "requires-python" in proc.stdout
    data = json.loads(bosun("env", "show", "--repo", str(repo), "--json").stdout)
    assert data["spec"]["python"] == "3.13" and data["env_id"].startswith("env-")


def test_show_says_plainly_when_the_repository_is_not_one_it_detects(tmp_path: Path):
    """A Ruby repository is not taken for Python without a word: the warning comes first, names the Gemfile and the
    declaration that would do; the JSON has it too."""
    repo = make_repo(tmp_path / "ruby", {"Gemfile": "source 'https://rubygems.org'\n", "lib/x.rb": "puts 1\n"})
    proc = bosun("env", "show", "--repo", str(repo))
    assert proc.returncode == 0, proc.stderr
    second = proc.stdout.splitlines()[1]
    assert second.startswith("warning: not detected: this is not a Python project (found Gemfile (Ruby)"), \
        proc.stdout
    assert ".bosun/environment.toml" in proc.stdout
    data = json.loads(bosun("env", "show", "--repo", str(repo), "--json").stdout)
    assert data["warning"].startswith("not detected:")
    python = bosun("env", "show", "--repo", str(make_repo(tmp_path / "tiny", TINY)), "--json")
    assert json.loads(python.stdout)["warning"] == ""


def test_show_names_a_go_or_rust_repositorys_toolchain_and_test_command(tmp_path: Path):
    go = make_repo(tmp_path / "go", {"go.mod": "module example.com/x\n\ngo 1.22\n", "x.go": "package x\n",
                                     "x_test.go": "package x\n"})
    proc = bosun("env", "show", "--repo", str(go))
    assert proc.returncode == 0 and "warning" not in proc.stdout, proc.stdout + proc.stderr
    assert "golang-go (Debian's, in the base)" in proc.stdout and "go test -json ./... (go; offline: GOPROXY=off" \
        in proc.stdout
    rs = make_repo(tmp_path / "rs", {"Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\n', "src/lib.rs": ""})
    data = json.loads(bosun("env", "show", "--repo", str(rs), "--json").stdout)
    assert data["spec"]["native"]["language"] == "rust" and data["spec"]["setup"] == ["cargo fetch"]


def test_show_names_a_declared_image_and_a_polyglot_part(tmp_path: Path):
    """A repository of no detected ecosystem with a devcontainer: the image and where it is declared, docker only,
    no warning of an undetected repository; a Python service with a front end the CI tests: the part's row."""
    dc = make_repo(tmp_path / "dc", {"Makefile": "test:\n\ttrue\n", ".devcontainer/Dockerfile": "FROM debian\n",
                                     ".devcontainer/devcontainer.json": '{"build": {"dockerfile": "Dockerfile"}}',
                                     ".bosun/environment.toml": 'devcontainer = true\ntest_command = "make test"\n'})
    proc = bosun("env", "show", "--repo", str(dc))
    assert proc.returncode == 0 and "warning" not in proc.stdout, proc.stdout + proc.stderr
    assert "image                  .devcontainer/Dockerfile (built locally, context .devcontainer)" in proc.stdout
    assert "docker only" in proc.stdout and "make test (unknown)" in proc.stdout
    flow = ("jobs:\n  web:\n    steps:\n      - run: npm ci && npm test\n        working-directory: web\n")
    poly = make_repo(tmp_path / "poly", {**TINY, "web/package.json": '{"scripts": {"test": "jest"}}',
                                         ".github/workflows/ci.yml": flow})
    proc = bosun("env", "show", "--repo", str(poly))
    assert "part web" in proc.stdout and "tests: npm test (jest), after the main ones" in proc.stdout, proc.stdout


@pytest.mark.docker
def test_build_json_and_exec_in_the_environment(tmp_path: Path):
    # an environment of this test's own (a comment more in pyproject.toml): it removes and rebuilds it below, which
    # the shared tiny environment, in use by the sandbox tests on the other workers meanwhile, must not go through
    repo = make_repo(tmp_path / "tiny", {**TINY, "pyproject.toml": TINY["pyproject.toml"] + "# test_env_cli's own\n"})
    shown = json.loads(bosun("env", "show", "--repo", str(repo), "--json").stdout)
    if shown["built"]:  # (built here before: what a build prints is checked below; 5 s)
        assert bosun("env", "rm", shown["env_id"]).returncode == 0
    first = bosun("env", "build", "--repo", str(repo), "--json", timeout=1800)
    assert first.returncode == 0, first.stderr
    built = json.loads(first.stdout)
    assert set(built) == BUILD_KEYS and set(built["backend_refs"]) == {"docker", "bwrap"}
    assert built["python"].startswith("3.13") and built["test_command"] == "python -m pytest"
    assert Path(built["log"]).is_file() and built["warnings"] == [] and built["outdated"] is False
    # setuptools' egg-info, which TINY's .gitignore does not name: into workspaces, out of diffs
    assert built["seed_unignored"] == ["tinypkg.egg-info/"]
    second = bosun("env", "build", "--repo", str(repo), "--ref", "main", "--json")
    again = json.loads(second.stdout)
    # (found, not built: a build takes 5 s and more; a lookup under a loaded parallel suite up to a second or two)
    assert again["cached"] is True and again["env_id"] == built["env_id"] and again["build_s"] < 3.0
    text = bosun("env", "build", "--repo", str(repo)).stdout
    assert "left out of diffs: 1 path(s) the build made that .gitignore does not name: tinypkg.egg-info/" in text
    assert built["attempts"][-1].startswith("as of ") and f"  install: {built['attempts'][-1]}" in text
    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", str(repo), str(ws)], check=True)
    chown_tree(ws, 1000, 1000)
    for backend in ("docker", "bwrap"):
        proc = bosun("sandbox", "exec", "--env", built["env_id"], "--workspace", str(ws), "--backend", backend,
                     "--timeout", "120", "--json", "--", "python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
        assert proc.returncode == 0, proc.stderr
        res = json.loads(proc.stdout)
        assert set(res) == {"exit_code", "stdout", "stderr", "timed_out", "duration_s"}
        assert res["exit_code"] == 0 and "2 passed" in res["stdout"], res
    listed = {row["env_id"]: row for row in json.loads(bosun("env", "list", "--json").stdout)}
    assert listed[built["env_id"]]["outdated"] is False
    # the same environment as if older rules had built it: reused as built, and the build says so
    record = Path(built["log"]).parent / "env.json"
    assert record.is_file()
    current = record.read_text()
    record.write_text(json.dumps({**json.loads(current), "rules": 0}))
    try:
        old = bosun("env", "build", "--repo", str(repo), "--json")
        assert old.returncode == 0, old.stderr
        assert json.loads(old.stdout)["outdated"] is True and json.loads(old.stdout)["cached"] is True
        assert f"{built['env_id']} was built by older rules than this bosun's; it works as built" in old.stderr
    finally:
        record.write_text(current)


def test_bad_input_is_refused_clearly(tmp_path: Path):
    missing = bosun("env", "build", "--repo", str(tmp_path / "nope"), "--json")
    assert missing.returncode == 2 and missing.stdout == ""
    assert "no such directory" in missing.stderr.strip().splitlines()[-1]
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "not a git repository" in bosun("env", "show", "--repo", str(plain)).stderr
    repo = make_repo(tmp_path / "tiny", TINY)
    bad_ref = bosun("env", "build", "--repo", str(repo), "--ref", "no-such-branch")
    assert bad_ref.returncode == 2 and "no such commit" in bad_ref.stderr
    bad_toml = make_repo(tmp_path / "badtoml", {**TINY, ".bosun/environment.toml": 'python = "3.7"\n'})
    proc = bosun("env", "build", "--repo", str(bad_toml), "--json")
    assert proc.returncode == 2 and "python '3.7' is not available" in proc.stderr and proc.stdout == ""
    for env_id in ("env-" + "0" * 20, "nonsense", "../../etc"):
        proc = bosun("sandbox", "exec", "--env", env_id, "--workspace", str(repo), "--json", "--", "true")
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert "environment" in proc.stderr
    assert bosun("env", "rm", "env-" + "1" * 20).returncode == 2
    assert bosun("env", "bases", "--build", "3.8").returncode == 2
    for flag, value in (("--min-free-gb", "-1"), ("--min-free-gb", "nan"), ("--max-gb", "inf"),
                        ("--older-than-days", "-2")):
        proc = bosun("env", "prune", flag, value, "--json")
        assert proc.returncode == 2 and proc.stdout == "" and f"{flag} {value}: give a number" in proc.stderr
    dry = bosun("env", "prune", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert set(json.loads(dry.stdout)) == {"environments", "images", "staging", "bases", "uv_caches", "detections",
                                           "freed_mb"}


def test_bad_overrides_setting_is_refused(tmp_path: Path):
    repo = make_repo(tmp_path / "tiny", TINY)
    env = {"BOSUN_ENV_OVERRIDES": json.dumps({str(repo): str(tmp_path / "missing.toml")})}
    proc = bosun("env", "show", "--repo", str(repo), env=env)
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    override = tmp_path / "env.toml"
    override.write_text('python = "3.9"\n')
    overrides = {"BOSUN_ENV_OVERRIDES": json.dumps({str(repo): str(override)})}
    proc = bosun("env", "show", "--repo", str(repo), env=overrides)
    assert proc.returncode == 0 and "python                 3.9" in proc.stdout and "override" in proc.stdout



def test_list_and_prune_say_which_environments_older_rules_built(tmp_path: Path):
    from environments.models import EnvRecord, EnvSpec
    from environments.store import EnvStore

    store, key = EnvStore(tmp_path / "cache"), "e" * 20
    store.ensure_dirs()
    store.commit(store.staging(key), EnvRecord(env_id=f"env-{key}", key=key, python="3.11.2", base="b",
                                               spec=EnvSpec(python="3.11"), test_command="pytest"))  # rules: 0
    env = {"BOSUN_ENV_CACHE": str(tmp_path / "cache")}
    listed = bosun("env", "list", env=env)
    assert listed.returncode == 0 and f"env-{key}" in listed.stdout and "(outdated: built by older rules)" in \
        listed.stdout and "`bosun env prune --outdated`" in listed.stdout, listed.stdout
    assert json.loads(bosun("env", "list", "--json", env=env).stdout)[0]["outdated"] is True
    # used within the hour (just built): kept, as every prune keeps one
    pruned = json.loads(bosun("env", "prune", "--outdated", "--json", env=env).stdout)
    assert pruned["environments"] == [] and store.record(key) is not None


def _old_image(tag: str, labels: dict[str, str]) -> None:
    """An image made in 2020 (older than any prune's grace), empty, with ``labels``: ``docker load`` of a tar in
    docker's save format."""
    layer = b"\0" * 1024  # an empty tar archive
    config = json.dumps({"created": "2020-01-01T00:00:00Z", "architecture": "amd64", "os": "linux",
                         "config": {"Labels": labels},
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]}
                         }).encode()
    name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": name, "RepoTags": [tag], "Layers": ["layer.tar"]}]).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for member, data in ((name, config), ("layer.tar", layer), ("manifest.json", manifest)):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    subprocess.run(["docker", "load"], input=buf.getvalue(), check=True, capture_output=True)


@pytest.mark.docker
def test_prune_removes_only_its_own_caches_orphan_images(tmp_path: Path):
    """Docker's images are the host's, a cache's records are its own: a prune of one cache (a test's, a second
    installation's) must not take another's images for orphans."""
    cache = tmp_path / "cache"
    cache.mkdir()
    mine, others, unlabelled = (f"bosun-env:{secrets.token_hex(10)}" for _ in range(3))
    _old_image(mine, {"bosun.env.cache": str(cache.resolve())})
    _old_image(others, {"bosun.env.cache": "/var/cache/bosun/environments"})
    _old_image(unlabelled, {})  # built before images named their cache: only the default cache removes those
    try:
        pruned = bosun("env", "prune", "--json", env={"BOSUN_ENV_CACHE": str(cache)})
        assert pruned.returncode == 0, pruned.stderr
        assert json.loads(pruned.stdout)["images"] == [mine]
        present = [subprocess.run(["docker", "image", "inspect", t], capture_output=True).returncode == 0
                   for t in (mine, others, unlabelled)]
        assert present == [False, True, True]
    finally:
        subprocess.run(["docker", "rmi", mine, others, unlabelled], capture_output=True)
