"""`bosun env` and `bosun sandbox exec --env`: the contract an external benchmark calls (names, flags, JSON keys,
exit codes), and bad input refused with a clear, specific error that changes nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import bosun
from tests.sandbox.conftest import chown_tree
from tests.sandbox.envfixtures import TINY, make_repo

BUILD_KEYS = {"env_id", "python", "cached", "build_s", "test_command", "backend_refs", "log", "warnings",
              "seed_unignored"}


def test_show_explains_without_building(tmp_path: Path):
    repo = make_repo(tmp_path / "tiny", TINY)
    proc = bosun("env", "show", "--repo", str(repo))
    assert proc.returncode == 0, proc.stderr
    assert "python                 3.13" in proc.stdout and "test command           python -m pytest" in proc.stdout
    assert "why:" in proc.stdout and "requires-python" in proc.stdout
    data = json.loads(bosun("env", "show", "--repo", str(repo), "--json").stdout)
    assert data["spec"]["python"] == "3.13" and data["env_id"].startswith("env-")


@pytest.mark.docker
def test_build_json_and_exec_in_the_environment(tmp_path: Path):
    repo = make_repo(tmp_path / "tiny", TINY)
    shown = json.loads(bosun("env", "show", "--repo", str(repo), "--json").stdout)
    if shown["built"]:  # (built here before: what a build prints is checked below; 5 s)
        assert bosun("env", "rm", shown["env_id"]).returncode == 0
    first = bosun("env", "build", "--repo", str(repo), "--json", timeout=1800)
    assert first.returncode == 0, first.stderr
    built = json.loads(first.stdout)
    assert set(built) == BUILD_KEYS and set(built["backend_refs"]) == {"docker", "bwrap"}
    assert built["python"].startswith("3.13") and built["test_command"] == "python -m pytest"
    assert Path(built["log"]).is_file() and built["warnings"] == []
    # setuptools' egg-info, which TINY's .gitignore does not name: into workspaces, out of diffs
    assert built["seed_unignored"] == ["tinypkg.egg-info/"]
    second = bosun("env", "build", "--repo", str(repo), "--ref", "main", "--json")
    again = json.loads(second.stdout)
    assert again["cached"] is True and again["env_id"] == built["env_id"] and again["build_s"] < 1.0
    text = bosun("env", "build", "--repo", str(repo)).stdout
    assert "left out of diffs: 1 path(s) the build made that .gitignore does not name: tinypkg.egg-info/" in text
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
    listed = json.loads(bosun("env", "list", "--json").stdout)
    assert built["env_id"] in [row["env_id"] for row in listed]


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

