"""Configuration around builds and runs: the host's network settings a build gets, overrides, the cache's records
and pruning, the task's environment marker, and what run_tests and the agents' context make of an environment."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agents.context.static import environment_facts
from agents.tools.commands import PYTEST_FLAGS
from agents.tools.commands import test_invocation as invocation
from environments.declared import load_overrides, override_for
from environments.models import BUILD_RULES, EnvRecord, EnvSpec
from environments.netconf import CA_IN_BUILD, build_network
from environments.service import Environments
from environments.store import CACHE_LABEL, EnvStore, key_of
from infra.errors import ConfigError
from infra.settings import Settings
from sandbox.base import EnvironmentInfo
from sandbox.caches import free_mb
from sandbox.hostrepo import TaskRepo


def test_the_build_gets_proxies_ca_and_remote_indexes(tmp_path: Path):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/simple\nextra-index-url = file:///opt/pypi/simple"
                    " https://extra.example/simple\nfind-links = /opt/wheels\n")
    net = build_network({"HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost", "SSL_CERT_FILE": str(ca),
                         "PIP_CONFIG_FILE": str(conf)})
    assert net.env["HTTPS_PROXY"] == "http://proxy:3128" and net.env["no_proxy"] == "localhost"
    assert net.ca_bundle == ca.read_bytes() and net.env["SSL_CERT_FILE"] == CA_IN_BUILD
    assert net.env["UV_DEFAULT_INDEX"] == "https://mirror.example/simple"
    assert net.env["UV_INDEX"] == "https://extra.example/simple"  # host-local ones are left out, and said so
    assert any("file:///opt/pypi/simple" in n for n in net.notes) and any("/opt/wheels" in n for n in net.notes)
    # the build's routes except where the registries and proxies are (sandbox/netns.py: build_only)
    assert net.registry_hosts() == ["mirror.example", "extra.example", "proxy"]


def test_the_registries_addresses_are_those_this_host_resolves(tmp_path: Path):
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = http://10.1.2.3:3141/root/pypi/simple\n")
    net = build_network({"HTTP_PROXY": "http://user:secret@localhost:3128", "ALL_PROXY": "[::1",
                         "PIP_CONFIG_FILE": str(conf)})
    assert net.registry_hosts() == ["10.1.2.3", "localhost"]  # (a URL that does not parse is left out)
    assert net.registry_addresses() == ["10.1.2.3", "127.0.0.1"]


def test_overrides(tmp_path: Path):
    env_file = tmp_path / "django.toml"
    env_file.write_text('python = "3.11"\n')
    overrides = load_overrides(json.dumps({str(tmp_path / "django"): str(env_file),
                                           "https://github.com/acme/*": str(env_file)}))
    assert override_for(overrides, str(tmp_path / "django")) == env_file
    assert override_for(overrides, "https://github.com/acme/app") == env_file
    assert override_for(overrides, str(tmp_path / "other")) is None
    listing = tmp_path / "overrides.toml"
    listing.write_text(f'"{tmp_path}/x" = "{env_file}"\n')
    assert load_overrides(str(listing)) == {f"{tmp_path}/x": env_file}
    for bad, words in (("{not json", "not a JSON"), ('{"a": 1}', "expected an object"),
                       (str(tmp_path / "missing.json"), "cannot read"),
                       (json.dumps({"r": str(tmp_path / "nope.toml")}), "does not exist")):
        with pytest.raises(ConfigError, match=words):
            load_overrides(bad)


def record(key: str, python: str = "3.11.2") -> EnvRecord:
    return EnvRecord(env_id=f"env-{key}", key=key, python=python, base="b", spec=EnvSpec(python="3.11"),
                     test_command="python -m pytest", backend_refs={"docker": f"bosun-env:{key}", "bwrap": "/x"},
                     size_mb={"bwrap": 600.0, "docker_layer": 500.0})


def test_records_commit_whole_and_ids_are_checked(tmp_path: Path):
    store = EnvStore(tmp_path)
    staging = store.staging("a" * 20)
    (staging / "build.log").write_text("log")
    store.commit(staging, record("a" * 20))
    assert store.find("env-" + "a" * 20).python == "3.11.2" and not staging.exists()
    failed = store.staging("b" * 20)
    (failed / "build.log").write_text("boom")
    kept = store.discard(failed, "b" * 20, failed / "build.log")
    assert kept.read_text() == "boom" and store.record("b" * 20) is None and not failed.exists()
    for bad in ("env-../../etc", "env-" + "a" * 19, "a" * 20, "", None):
        with pytest.raises(ConfigError, match="not an environment id"):
            key_of(bad)
    with pytest.raises(ConfigError, match="no environment"):
        store.find("env-" + "c" * 20)


class FakeApi:
    """Docker's image list (the host's, shared by every cache): ``tags`` as (tag, created, cache label or None)."""

    def __init__(self, tags: list[tuple]) -> None:
        self.tags = tags
        self.removed: list[str] = []

    def images(self, name=None):
        return [{"RepoTags": [t], "Created": c, "Labels": {CACHE_LABEL: label[0]} if label and label[0] else {}}
                for t, c, *label in self.tags]

    def remove_image(self, tag, force=False):
        self.removed.append(tag)


def test_prune_bounds_the_cache_least_recently_used_first(tmp_path: Path):
    envs = Environments(Settings(env_cache=tmp_path))
    old, mine = time.time() - 5 * 86400, str(tmp_path.resolve())
    envs._api = FakeApi([("bosun-env:orphan", old, mine), ("bosun-env:young-orphan", time.time(), mine),
                         ("bosun-env:" + "1" * 20, old, mine),
                         # another cache's image, and one from before images named their cache: not this cache's
                         # to remove (it is not the default cache)
                         ("bosun-env:others", old, "/elsewhere/cache"), ("bosun-env:unlabelled", old, None)])
    for i, used in (("1", old), ("2", old + 3600), ("3", time.time())):
        staging = envs.store.staging(i * 20)
        envs.store.commit(staging, record(i * 20))
        os.utime(envs.store.env_dir(i * 20) / "env.json", (used, used))
    out = envs.prune(max_gb=2.5)
    assert out["images"] == ["bosun-env:orphan"]  # an image younger than an hour may be a build in progress
    assert out["environments"] == ["env-" + "1" * 20]  # 3.3 GB -> 2.2 GB: the least recently used one went
    assert envs.store.record("1" * 20) is None and envs.store.record("2" * 20) is not None
    assert envs.prune(max_gb=0.1)["environments"] == ["env-" + "2" * 20]  # never the one used within the hour


def test_the_default_cache_also_prunes_images_from_before_they_named_their_cache(tmp_path: Path, monkeypatch):
    from environments import service

    monkeypatch.setattr(service, "default_cache", lambda: tmp_path)
    envs = Environments(Settings(env_cache=tmp_path))
    old = time.time() - 5 * 86400
    envs._api = FakeApi([("bosun-env:unlabelled", old, None), ("bosun-env:others", old, "/elsewhere/cache")])
    assert envs.prune()["images"] == ["bosun-env:unlabelled"] and envs._api.removed == ["bosun-env:unlabelled"]


def test_prune_keeps_free_space_on_the_cache_file_system(tmp_path: Path):
    envs = Environments(Settings(env_cache=tmp_path))
    envs._api = FakeApi([])
    old = time.time() - 5 * 86400
    for i, used in (("1", old), ("2", old + 3600), ("3", time.time())):
        envs.store.commit(envs.store.staging(i * 20), record(i * 20))  # 1.1 GB each, as recorded
        os.utime(envs.store.env_dir(i * 20) / "env.json", (used, used))
    assert envs.prune(min_free_gb=0)["environments"] == []  # no floor, no size bound: nothing goes
    free_gb = free_mb(tmp_path) / 1000
    # 0.5 GB short: the least recently used one (counted as 1.1 GB) is enough
    out = envs.prune(min_free_gb=free_gb + 0.5, dry_run=True)
    assert out["environments"] == ["env-" + "1" * 20] and envs.store.record("1" * 20) is not None
    # far short: every one goes but the one used within the hour
    out = envs.prune(min_free_gb=free_gb + 1000)
    assert out["environments"] == ["env-" + "1" * 20, "env-" + "2" * 20] and envs.store.record("3" * 20) is not None


def test_prune_outdated_removes_environments_built_by_older_rules(tmp_path: Path):
    envs = Environments(Settings(env_cache=tmp_path))
    envs._api = FakeApi([])
    old = time.time() - 5 * 86400
    for i, rules, used in (("1", 0, old), ("2", BUILD_RULES, old), ("3", 0, time.time())):
        envs.store.commit(envs.store.staging(i * 20), record(i * 20).model_copy(update={"rules": rules}))
        os.utime(envs.store.env_dir(i * 20) / "env.json", (used, used))
    assert envs.prune()["environments"] == []  # not asked: outdated ones stay, they work as built
    # the current rules' one stays, and so does an outdated one used within the hour
    assert envs.prune(outdated=True, dry_run=True)["environments"] == ["env-" + "1" * 20]
    assert envs.prune(outdated=True)["environments"] == ["env-" + "1" * 20]
    assert envs.store.record("1" * 20) is None and envs.store.record("2" * 20) and envs.store.record("3" * 20)


def test_prune_removes_installer_caches_no_build_is_using(tmp_path: Path):
    envs = Environments(Settings(env_cache=tmp_path))
    envs._api = FakeApi([])
    caches = {name: envs.store.uv_cache(name * 20, os.getuid()) for name in "abc"}
    for path in caches.values():
        (path / "wheel.whl").write_bytes(b"x" * 300_000)
    old = time.time() - 2 * 3600
    os.utime(caches["a"], (old, old))  # a failed build's, kept an hour for another attempt: over
    os.utime(caches["b"], (old, old))  # a build running for two hours: its lock is held
    with envs.store.lock("b" * 20):
        assert envs.prune(dry_run=True)["uv_caches"] == ["a" * 20] and caches["a"].exists()
        out = envs.prune()
    assert out["uv_caches"] == ["a" * 20] and out["freed_mb"] > 0
    assert not caches["a"].exists() and caches["b"].exists() and caches["c"].exists()  # c: within the hour
    with envs.store.lock("b" * 20, wait=False) as free:  # (the prune did not keep the lock)
        assert free


def test_prune_forgets_detections_remembered_a_week_ago(tmp_path: Path):
    envs = Environments(Settings(env_cache=tmp_path))
    envs._api = FakeApi([])
    memos = tmp_path / "detected"
    memos.mkdir()
    for name, age_days in (("old", 8), ("recent", 6)):
        (memos / f"{name}.json").write_text("{}")
        then = time.time() - age_days * 86400
        os.utime(memos / f"{name}.json", (then, then))
    assert envs.prune(dry_run=True)["detections"] == 1 and (memos / "old.json").exists()
    assert envs.prune()["detections"] == 1
    assert sorted(p.name for p in memos.iterdir()) == ["recent.json"]


def test_the_task_marker_names_the_environment_by_path(tmp_path: Path):
    repo = TaskRepo(tmp_path, "task-1")
    repo.set_environment("env-" + "d" * 20, tmp_path / "cache")
    assert TaskRepo.environment_for(repo.runs / "agent-1") == ("env-" + "d" * 20, tmp_path / "cache")
    assert TaskRepo.environment_for(tmp_path / "elsewhere" / "ws") is None
    repo.set_environment(None, None)
    assert TaskRepo.environment_for(repo.runs / "agent-1") is None


def test_run_tests_uses_the_environments_command():
    assert invocation(None, ["-k", "x"]) == (["python3", "-m", "pytest", *PYTEST_FLAGS, "-k", "x"], True)
    env = EnvironmentInfo(env_id="env-x", python="3.9.2", test_argv=["python", "-m", "pytest", "--tb=short"],
                          test_paths=["tests", "examples"], test_command="python -m pytest --tb=short tests examples")
    assert invocation(env, []) == (["python", "-m", "pytest", "--tb=short", *PYTEST_FLAGS, "tests", "examples"],
                                        True)
    cmd, _ = invocation(env, ["tests/test_a.py::test_b"])
    assert cmd[-1] == "tests/test_a.py::test_b" and "examples" not in cmd  # test ids replace the default paths
    runner = env.model_copy(update={"test_kind": "command", "test_argv": ["python", "bin/test"]})
    assert invocation(runner, ["sympy/core", "-k", "a b"]) == ("python bin/test sympy/core -k 'a b'", False)


def test_agents_are_told_the_interpreter_and_test_command():
    facts = environment_facts(EnvironmentInfo(env_id="env-x", python="3.9.2", test_command="python -m pytest tests"))
    assert facts["Python"].startswith("3.9.2 in a virtualenv") and facts["Tests"].startswith("python -m pytest tests")
    assert "not installed" in environment_facts(None)["Python"]


def test_the_installer_cache_is_per_environment_private_and_loses_set_id_bits(tmp_path: Path):
    import os
    import stat

    from environments.store import EnvStore
    from sandbox.caches import strip_setid

    store = EnvStore(tmp_path / "cache")
    a, b = store.uv_cache("key-a", os.getuid()), store.uv_cache("key-b", os.getuid())
    assert a != b and a.parent == b.parent
    assert stat.S_IMODE(a.stat().st_mode) == 0o700 and stat.S_IMODE(a.parent.stat().st_mode) == 0o700
    (a / "wheels").mkdir()
    planted = a / "wheels" / "tool"
    planted.write_text("#!/bin/sh\n")
    os.chmod(planted, 0o6755)
    os.chmod(a / "wheels", 0o3777)
    outside = tmp_path / "outside"
    outside.write_text("x")
    os.chmod(outside, 0o4755)
    (a / "link").symlink_to(outside)
    assert strip_setid(a) == 2
    assert stat.S_IMODE(planted.stat().st_mode) == 0o755 and stat.S_IMODE((a / "wheels").stat().st_mode) == 0o777
    assert stat.S_IMODE(outside.stat().st_mode) == 0o4755  # a link is never followed
    store.remove_uv_cache("key-a")
    assert not a.exists() and b.exists()


def test_one_sandbox_path_and_no_dead_helpers():
    from environments import builder, service
    from sandbox import bwrap

    assert builder.SANDBOX_PATH is bwrap.SANDBOX_PATH
    assert not any(hasattr(service, n) for n in ("failure_summary", "tail_of", "is_root"))


def test_a_remembered_detection_is_keyed_by_the_detector_code_this_process_runs(monkeypatch):
    """A worker that started before an upgrade must not file what its old code detects under the new code's key
    (astropy 5.2's detection with the devcontainer's setup outlived the fix that dropped it): the detector's code
    is read once, when the module loads, never again at each call."""
    from environments import service

    before = service.detection_key("a" * 40, None, "1.0")

    def no_reading(_self):
        raise AssertionError("the detector's files were read again")

    monkeypatch.setattr(Path, "read_bytes", no_reading)
    assert service.detection_key("a" * 40, None, "1.0") == before
    assert service.detection_key("b" * 40, None, "1.0") != before
    assert "standins.py" in service.DETECTOR_FILES  # (detection reads the test files for the stand-ins too)


def test_every_module_detection_uses_is_part_of_the_detectors_code():
    """A remembered detection is keyed by the detector's code: every environments module detect.py imports (and
    theirs, among environments/) must be in it, or a changed rule would keep answering with what the old one found."""
    import ast

    from environments import service
    here = Path(service.__file__).parent
    seen, todo = set(), ["detect"]
    while todo:
        name = todo.pop()
        if name in seen or not (here / f"{name}.py").is_file():
            continue
        seen.add(name)
        tree = ast.parse((here / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("environments"):
                todo += [node.module.split(".", 1)[1]] if "." in node.module else [a.name for a in node.names]
    assert {f"{n}.py" for n in seen} <= set(service.DETECTOR_FILES), sorted(
        {f"{n}.py" for n in seen} - set(service.DETECTOR_FILES))
