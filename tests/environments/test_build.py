"""Real builds (docker engine, PyPI) and real sandboxes of the environments they give, on both backends."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from environments.buildrun import BuildFailed
from environments.dockerping import image_exists
from environments.models import env_id_for
from environments.runtime import provider_for
from environments.store import key_of
from infra.errors import ConfigError
from sandbox.hostrepo import TaskRepo
from tests.sandbox.conftest import TEST_LIMITS, chown_tree
from tests.sandbox.envfixtures import TINY, built, make_repo

pytestmark = pytest.mark.docker


def checkout(repo: Path, dest: Path, uid: int = 1000) -> Path:
    subprocess.run(["git", "clone", "-q", str(repo), str(dest)], check=True, capture_output=True)
    chown_tree(dest, uid, uid)
    return dest


async def test_a_tiny_package_with_a_dependency_builds_once_and_runs_on_both_backends(envs, tmp_path, request):
    # The tiny package with a pyproject.toml of its own (a comment more): an environment of this test's own, not the
    # one the other tests share, built here every run (5 s), so what a build leaves is checked below
    own = {**TINY, "pyproject.toml": TINY["pyproject.toml"] + "# test_build's own\n"}
    tiny_repo = make_repo(tmp_path / "tiny", own)
    det, tree = envs.detect_repo(str(tiny_repo))
    assert det.spec.python == "3.13" and det.spec.exclude_newer == "2025-06-02T23:59:59Z"
    while (left := envs.lookup(det, need_docker=False)) is not None:  # a run that was killed left it
        envs.remove(left.env_id)
    first = envs.ensure(det, tree)
    record = first.record
    request.addfinalizer(lambda: envs.remove(record.env_id))
    assert not first.cached
    assert record.test_command == "python -m pytest" and record.python.startswith("3.13")
    assert image_exists(record.backend_refs["docker"]) and Path(record.backend_refs["bwrap"], "venv").is_dir()
    labels = subprocess.run(["docker", "image", "inspect", record.backend_refs["docker"], "--format",
                             "{{json .Config.Labels}}"], capture_output=True, text=True, check=True).stdout
    assert '"bosun.sandbox":"1"' not in labels  # else the reaper would take its containers for orphans
    assert json.loads(labels)["bosun.env.cache"] == str(envs.cache.resolve())  # whose image it is (a prune's)
    volumes = subprocess.run(["docker", "image", "inspect", record.backend_refs["docker"], "--format",
                              "{{json .Config.Volumes}}"], capture_output=True, text=True, check=True).stdout
    assert volumes.strip() == "null"  # else docker makes a volume for each of its sandboxes
    assert not (envs.store.root / "uv" / record.key).exists()  # the installer's cache goes after the build
    started = time.monotonic()
    again = envs.ensure(*envs.detect_repo(str(tiny_repo)))
    # (found, not built: a build takes 5 s and more; a lookup under a loaded parallel suite up to a second or two)
    assert again.cached and again.record.env_id == record.env_id and time.monotonic() - started < 3.0
    # the same files committed a day later (another key: resolved as of its own day) reuse it: no build
    later = envs.detect_repo(str(make_repo(tmp_path / "later", own, date="2025-06-03T10:00:00+00:00")))
    assert envs.key(later[0]) != record.key and record.family
    started = time.monotonic()
    again = envs.ensure(*later)
    assert again.cached and again.record.env_id == record.env_id and time.monotonic() - started < 3.0
    ws = checkout(tiny_repo, tmp_path / "ws")
    for backend in ("docker", "bwrap"):
        provider = provider_for(record, backend, limits=TEST_LIMITS)
        # setuptools' egg-info, which the repository's .gitignore does not name: it goes into workspaces (at
        # start: the checkout must be complete before) and stays out of diffs
        assert provider.writes_on_start and record.seed_unignored == ["tinypkg.egg-info/"]
        box = await provider.acquire(ws)
        try:
            assert box.environment is not None and box.environment.env_id == record.env_id
            res = await box.exec(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], timeout_s=120)
            assert res.exit_code == 0 and "2 passed" in res.stdout, res.stdout + res.stderr
            res = await (box.exec(["sh", "-c", "command -v python; python -c 'import six, sys; print(sys.prefix)'"],
                                  timeout_s=60))
            assert res.stdout.split() == ["/opt/bosun-env/venv/bin/python", "/opt/bosun-env/venv"], backend
            # the sandbox's rules hold in an environment too: no network, nothing writable outside the workspace
            res = await (box.exec(["python", "-c", "import socket; socket.create_connection(('pypi.org', 443), 3)"],
                                  timeout_s=60))
            assert res.exit_code != 0, backend
            res = await (box.exec(["sh", "-c", "touch /opt/bosun-env/venv/x || touch /usr/x || id -u"],
                                  timeout_s=30))
            assert res.stdout.strip() == "1000" and "Read-only file system" in res.stderr, (backend, res)
        finally:
            await box.close()


def test_a_failing_setup_names_the_step_and_caches_nothing(envs, tmp_path):
    files = dict(TINY)
    files["pyproject.toml"] = files["pyproject.toml"].replace('["six>=1.16"]', '["bosun-no-such-package-xyz"]')
    repo = make_repo(tmp_path / "broken", files)
    det, tree = envs.detect_repo(str(repo))
    key = envs.key(det)
    with pytest.raises(BuildFailed) as err:
        envs.ensure(det, tree)
    assert err.value.step == "install" and "bosun-no-such-package-xyz" in err.value.tail
    assert "environment build failed at step 'install'" in str(err.value)
    assert envs.store.record(key) is None and image_exists(f"bosun-env:{key}") is False
    assert not list(envs.store.envs.glob(f".building-{key}-*")) and err.value.log.is_file()
    assert not (envs.store.root / "uv" / key).exists()  # the repository's failure: not built again


def test_a_devcontainers_setup_that_fails_is_noted_and_the_build_goes_on(envs, tmp_path, request):
    """Detection's setup commands are hints (astropy 5.2's devcontainer runs `conda init bash`): one that fails is
    noted in the build's log, the next one still runs, and the environment is built."""
    devcontainer = ('{"image": "mcr.microsoft.com/devcontainers/python:3.9", "postCreateCommand": '
                    '"conda init bash; exit 3"}')
    repo = make_repo(tmp_path / "hinted", {**TINY, ".devcontainer/devcontainer.json": devcontainer})
    det, tree = envs.detect_repo(str(repo))
    assert det.spec.setup == ["conda init bash; exit 3"] and det.spec.setup_best_effort
    record = envs.ensure(det, tree).record
    request.addfinalizer(lambda: envs.remove(record.env_id))
    log = envs.log_of(record).read_text()
    assert "note: setup 1 failed (exit 3): it is detection's" in log and "conda: not found" in log


DECLARED = r"""prepare = ["echo made-before-the-install > prepared.txt"]
setup = [
  # the build runs a program it put in /tmp (a compiler's probe does: scikit-learn's OpenMP check)
  "cat prepared.txt > generated.txt; echo made-by-the-build >> generated.txt",
  "echo 'echo probe-ran' > /tmp/probe.sh && chmod +x /tmp/probe.sh && /tmp/probe.sh >> generated.txt",
  # build products the repository's .gitignore does not name: workspaces get them, diffs leave them out
  "echo not-elf > tinypkg/_speedups.cpython-39-x86_64-linux-gnu.so",
  "mkdir -p build/lib/tinypkg && echo copy > build/lib/tinypkg/__init__.py && echo gen > 'weird [x]*?.txt '",
  # ...except a name no exclude pattern can hold: left out, and the record says so
  "echo no-pattern > \"$(printf 'line\\nbreak.so')\"",
]
test_command = "python -m pytest -q tests/test_tiny.py"
[env]
TINY_MODE = "declared"
"""


async def test_a_declared_environment_with_setup_seed_and_variables(envs, tmp_path, request):
    repo = make_repo(tmp_path / "declared", {**TINY, ".bosun/environment.toml": DECLARED})
    record = envs.ensure(*envs.detect_repo(str(repo))).record
    request.addfinalizer(lambda: envs.remove(record.env_id))  # built by every run: the build's rules are tested
    assert record.spec.origin == "declared" and record.seed
    # (setuptools' egg-info too: the repository's .gitignore names only generated.txt)
    assert record.seed_unignored == ["build/", "prepared.txt", "tinypkg.egg-info/",
                                     "tinypkg/_speedups.cpython-39-x86_64-linux-gnu.so", "weird [x]*?.txt "]
    assert len(record.warnings) == 1 and "1 file(s)" in record.warnings[0] and \
        "'line\\nbreak.so'" in record.warnings[0], record.warnings
    task = TaskRepo(tmp_path / "workspaces", "declared")  # a run workspace as bosun makes it (its scratch .git)
    base = task.prepare(str(repo), "HEAD")
    ws = task.materialize("run", base, owner=(1000, 1000))
    (ws / "tests" / "keep.txt").write_text("mine")
    for backend in ("docker", "bwrap"):
        provider = provider_for(record, backend, limits=TEST_LIMITS)
        assert provider.writes_on_start  # the build's files go in at start: the checkout must be complete before
        box = await provider.acquire(ws, objects=TaskRepo.objects_for(ws))
        try:
            res = await box.exec(["sh", "-c", "cat generated.txt; echo $TINY_MODE; cat tinypkg/*.so "
                                  "build/lib/tinypkg/__init__.py 'weird [x]*?.txt '; ls | grep -c break"],
                                 timeout_s=30)
            assert res.stdout.split() == ["made-before-the-install", "made-by-the-build", "probe-ran", "declared",
                                          "not-elf", "copy", "gen", "0"], (backend, res)
            # git in the sandbox leaves the build's files out as the host's import does; the agent's own shows
            res = await box.exec(["git", "status", "--porcelain", "--untracked-files=all"], timeout_s=30)
            assert res.stdout.splitlines() == ["?? tests/keep.txt"], (backend, res)
        finally:
            await box.close()
    assert (ws / "tests" / "keep.txt").read_text() == "mine"
    # the host's import of the same workspace, by the record's list, leaves out the same files
    imported = task.import_run("run", base, "m", unignored=record.seed_unignored)
    assert imported.files == ["tests/keep.txt"], imported


def test_a_build_whose_list_of_files_git_does_not_ignore_is_not_valid_fails_at_seed(envs, tmp_path):
    """The list is written in the build container, where the repository's code ran: read as data."""
    setup = 'setup = ["printf \'../../etc/passwd\' > /opt/bosun-env/seed-unignored"]\n'
    # (the build makes nothing git does not ignore, so the seed writes no list of its own over the planted one)
    repo = make_repo(tmp_path / "hostile", {**TINY, ".bosun/environment.toml": setup,
                                            ".gitignore": "generated.txt\n*.egg-info/\n"})
    det, tree = envs.detect_repo(str(repo))
    key = envs.key(det)
    if envs.store.record(key) is not None:  # (built by a run before the rule)
        envs.remove(env_id_for(key))
    with pytest.raises(BuildFailed) as err:
        envs.ensure(det, tree)
    assert err.value.step == "seed" and "'../../etc/passwd' is not a relative path" in str(err.value)
    assert envs.store.record(key) is None and image_exists(f"bosun-env:{key}") is False


@pytest.mark.slow
@pytest.mark.parametrize("python", ["3.9", "3.11"])
async def test_other_interpreters(envs, tmp_path, python):
    """Builds the 3.9 (bullseye) and 3.11 (bookworm) bases on first use (a few minutes each, once per machine)."""
    repo = make_repo(tmp_path / f"py{python}", {**TINY, ".bosun/environment.toml": f'python = "{python}"\n'})
    record = envs.ensure(*envs.detect_repo(str(repo))).record
    assert record.python.startswith(python + ".")
    ws = checkout(repo, tmp_path / "ws")
    for backend in ("docker", "bwrap"):
        box = await provider_for(record, backend, limits=TEST_LIMITS).acquire(ws)
        try:
            res = await box.exec(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], timeout_s=120)
            assert res.exit_code == 0 and "2 passed" in res.stdout, (backend, res.stdout, res.stderr)
        finally:
            await box.close()


def test_remove_and_unknown_ids(envs):
    with pytest.raises(ConfigError, match="not an environment id"):
        envs.remove("../../etc")
    with pytest.raises(ConfigError, match="no environment env-0000"):
        envs.remove("env-" + "0" * 20)
    assert key_of("env-" + "a" * 20) == "a" * 20


def test_a_build_reaches_the_registries_and_the_internet_but_not_this_host(envs, tmp_path, request):
    """The build's container (sandbox/netns.py: build_only): a host on the internet answers (tests/sandbox/
    test_network.py's stand-in for one), the registry too (the tiny package's dependency installs), and every
    address of this host's own, public ones included, is out of reach (a service listening on all of them), also
    for a socket bound to eth0 and for the bridge's broadcast."""
    from sandbox import netns
    from tests.sandbox.test_network import AROUND, PUBLIC, REACH, internet_host

    own = netns.host_addresses()
    with internet_host() as port:
        setup = (f'setup = ["python reach.py {port} {PUBLIC} {" ".join(own)}", '
                 f'"python around.py {port} {" ".join(own)}"]\n')
        record = built(envs, tmp_path / "reach", {**TINY, "reach.py": REACH, "around.py": AROUND,
                                                  ".bosun/environment.toml": setup}, request)
    log = envs.log_of(record).read_text()
    assert f"reached {PUBLIC} hello" in log, log[-3000:]
    for address in own:
        assert f"timeout {address}" in log, log[-3000:]
        assert f"udp-silent {address}" in log and f"tcp-bound-failed {address}" in log, log[-3000:]
    assert "broadcast-silent" in log and "answered" not in log and "tcp-bound-reached" not in log, log[-3000:]
