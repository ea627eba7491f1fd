"""`make demo`: the main job on the embedded stack, offline.

Copies the bundled example repository (examples/calc, a real failing test) into the data dir as a fresh git
repository, starts the stack, runs a task on it with the scripted model (THE TEST DOUBLE: it replays
examples/calc/team.jsonl, no language model is involved), then prints the diff, the test result before and
after, and the run's history read back from Temporal.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from entry.cli import main as bosun
from entry.stack import ui_url
from infra.settings import load_settings

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "calc"


def make_repo(dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("*.jsonl", "__pycache__", ".pytest_cache"))
    git = ["git", "-c", "user.name=bosun demo", "-c", "user.email=demo@localhost", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "calc: example with a bug"]):
        subprocess.run(git + cmd, cwd=dest, check=True)
    return dest


def main() -> int:
    s = load_settings()
    repo = make_repo(s.data_dir / "demo" / "calc")
    print(f"demo: example repository at {repo} (3 of its 7 tests fail: median and percent are buggy)")
    if bosun(["up"]) != 0:
        return 1
    wf_id = f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    trajectory = EXAMPLE / "team.jsonl"
    print(f"demo: running the task in team mode (planner, two fast-edit agents in parallel, stitching, verify, "
          f"debugger) with the scripted model: the test double, replaying {trajectory}")
    rc = bosun(["run", "--repo", str(repo), "--model", f"scripted:{trajectory}", "--id", wf_id, "--wait",
                "fix the failing tests"])
    print("\ndemo: the run's history, read back from Temporal:")
    bosun(["history", wf_id])
    page = f"{ui_url(s, local=True)}run?id={wf_id}"
    me = command()
    print(f"\ndemo: {'SUCCESS' if rc == 0 else 'FAILED'}. The stack keeps running: `{me} status`, `{me} down`.")
    print(f"demo: the run's page: {page}")
    print(f"demo: Temporal Web UI: http://{s.host}:{s.temporal_ui_port}/namespaces/{s.temporal_namespace}/workflows/"
          f"{wf_id}")
    print(f"demo: its trace: {me} trace {wf_id}; the recent runs: {me} runs")
    print(f"demo: on your own repository: {me} run --repo PATH \"what to do\" --model SPEC --wait (README: "
          "'Your repository with a real model')")
    return rc


def command() -> str:
    """How to call bosun from the user's shell: ``bosun`` when the PATH finds this checkout's, else its full path."""
    mine = Path(sys.executable).with_name("bosun")
    found = shutil.which("bosun")
    if found and Path(found).resolve() == mine.resolve():
        return "bosun"
    return str(mine)


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    __import__("os")._exit(rc)  # see entry.cli.entry
