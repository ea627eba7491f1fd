"""What one agent's workspace can do to a whole task, through `bosun run` on both sandbox backends.

File names that are not UTF-8: a repository that tracks one (a test fixture), agents that make more
(``touch "$(printf '\\377\\376bin')"``), read, edit and list them with every tool, two agents that conflict over
one, a FIFO named so. The task goes on and delivers them: the commit holds their bytes, and the CLI, the history
and the web view show them quoted as git quotes them (infra/names.py).

Files written to cost a parser far more than their size: the worker's tools say they were not parsed, and the
worker itself spends no more than its bounds on them (sandbox/bounded.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from infra.settings import Settings
from sandbox.hostrepo import task_key
from tests.conftest import Stack, wait_for
from tests.sandbox.envfixtures import make_repo

FILES = {
    "pyproject.toml": '[project]\nname = "names"\nversion = "0.1.0"\nrequires-python = ">=3.9"\n\n'
                      '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n',
    "names/__init__.py": "def greet(who):\n    return 'hello ' + who\n",
    "tests/test_names.py": "from names import greet\n\n\ndef test_greet():\n    assert greet('you') == 'hello you'\n",
}
FIXTURE = b"tests/fixtures/latin-\xe9.txt"
LEGACY = b"names/legacy\xe9.py"


@pytest.fixture(scope="module", params=["docker", "bwrap"])
def backend_stack(request, tmp_path_factory):
    st = Stack(tmp_path_factory.mktemp(f"hostile-{request.param}"))
    st.env["BOSUN_SANDBOX_BACKEND"] = request.param
    try:
        st.up()
        yield request.param, st
    finally:
        st.down()


def names_repo(dest: Path) -> Path:
    """A small project whose tests pass and which tracks a file whose name is not UTF-8."""
    repo = make_repo(dest, FILES)
    (repo / "tests" / "fixtures").mkdir()
    (repo / os.fsdecode(FIXTURE)).write_text("fixture\n")
    (repo / os.fsdecode(LEGACY)).write_text("def old_greeting():\n    return 'hi'\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "files whose names are Latin-1"], check=True)
    return repo


def call(tool: str, **arguments) -> dict:
    return {"name": tool, "arguments": arguments}


def sh(command: str) -> dict:
    return call("run_command", command=command)


def trajectory() -> list[dict]:
    planner = [
        {"content": "Looking around.", "tool_calls": [
            call("list_dir", path="tests/fixtures"), call("glob", pattern="**/*.txt"),
            call("search_code", query="old greeting"), call("repo_map", query="old greeting"),
            call("find_symbol", name="old_greeting"), call("read_file", path='"tests/fixtures/latin-\\351.txt"')]},
        {"expect": [{"tool": "list_dir", "contains": '"latin-\\351.txt"'},
                    {"tool": "glob", "contains": '"tests/fixtures/latin-\\351.txt"'},
                    {"tool": "search_code", "contains": '"names/legacy\\351.py"'},
                    {"tool": "repo_map", "contains": '"names/legacy\\351.py"'},
                    {"tool": "find_symbol", "contains": '"names/legacy\\351.py":1: [function]'},
                    {"tool": "read_file", "contains": "fixture"}],
         "content": "Two subtasks.", "tool_calls": [call("submit_plan", subtasks=[
             {"id": "a", "goal": "Add the module.", "files": ["names/"], "depends_on": [],
              "acceptance": {"tests": ["tests/test_names.py"]}},
             {"id": "b", "goal": "Change the fixture.", "files": ["tests/fixtures/"], "depends_on": [],
              "acceptance": {"tests": ["tests/test_names.py"]}}], notes="two at once")]},
        {"content": "Planned."},
    ]
    a = [
        {"content": "Making files.", "tool_calls": [sh(
            "touch \"$(printf '\\377\\376bin')\" && printf 'VALUE = 1\\n' > \"$(printf 'names/mod\\351.py')\" && "
            "printf 'from a\\n' > \"$(printf 'both\\377.txt')\"")]},
        {"content": "Looking at them.", "tool_calls": [
            call("list_dir", path="."), call("glob", pattern="**/*"), call("grep", pattern="VALUE"),
            call("git_status"), call("search_code", query="VALUE module"), call("find_symbol", name="VALUE"),
            call("read_file", path='"names/mod\\351.py"'), call("check")]},
        {"expect": [{"tool": "list_dir", "contains": '"\\377\\376bin"'},
                    {"tool": "glob", "contains": '"names/mod\\351.py"'},
                    {"tool": "grep", "contains": '"names/mod\\351.py"'},
                    {"tool": "git_status", "contains": '"\\377\\376bin"'},
                    {"tool": "search_code", "contains": '"names/mod\\351.py"'},
                    {"tool": "find_symbol", "contains": '"names/mod\\351.py"'},
                    {"tool": "read_file", "contains": "VALUE = 1"},
                    {"tool": "check", "contains": "checked 1 file(s): 0 problem(s)"}],
         "content": "Editing them.", "tool_calls": [
             call("str_replace", path='"names/mod\\351.py"', old_str="VALUE = 1", new_str="VALUE = 2"),
             call("write_file", path='"new\\377.py"', content="X = 1\n"),
             call("write_file", path="raw\udcff.py", content="Y = 1\n"),  # a lone surrogate in the model's JSON
             call("git_diff", paths=['"names/mod\\351.py"'])]},
        {"expect": [{"tool": "str_replace", "contains": "edited"}, {"tool": "write_file", "contains": "new"}],
         "content": "Done."},
    ]
    change_b = ("printf 'changed\\n' > \"$(printf 'tests/fixtures/latin-\\351.txt')\" && "
                "mkfifo \"$(printf 'fifo\\377')\" && printf 'from b\\n' > \"$(printf 'both\\377.txt')\"")
    b = [{"content": "Changing the fixture.", "tool_calls": [sh(change_b)]}, {"content": "Done."}]
    again = sh(change_b.replace("from b", "from a and b"))
    b_again = [{"content": "Again, on the merged tree.", "tool_calls": [again]}, {"content": "Done."}]
    return ([dict(t, agent="planner") for t in planner] + [dict(t, agent="fast_edit:a") for t in a]
            + [dict(t, agent="fast_edit:b") for t in b] + [dict(t, agent="fast_edit:b#2") for t in b_again])


def tree_names(git_dir: Path, commit: str) -> dict[bytes, bytes]:
    """Every file of ``commit``: its name's bytes -> its content."""
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only", commit],
                             capture_output=True, check=True).stdout
    return {name: subprocess.run([b"git", b"--git-dir=" + bytes(git_dir), b"cat-file", b"blob",
                                  commit.encode() + b":" + name], capture_output=True, check=True).stdout
            for name in listing.split(b"\0") if name}


def test_names_that_are_not_utf8_go_through_a_team_task(backend_stack, tmp_path):
    backend, st = backend_stack
    repo = names_repo(tmp_path / "names")
    traj = tmp_path / "names.jsonl"
    traj.write_text("".join(json.dumps(t) + "\n" for t in trajectory()))
    wf = f"names-{backend}"
    proc = st.bosun("run", "--repo", str(repo), "--model", f"scripted:{traj}", "--id", wf, "--wait", "--json",
                    "--mode", "team", "work with odd names", timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "succeeded", result["problems"]
    assert [(s["id"], s["status"], s["attempts"]) for s in result["subtasks"]] == [("a", "merged", 1),
                                                                                   ("b", "merged", 2)]
    shown = {'"\\377\\376bin"', '"both\\377.txt"', '"names/mod\\351.py"', '"new\\377.py"', '"raw\\377.py"',
             '"tests/fixtures/latin-\\351.txt"'}
    assert set(result["files_changed"]) == shown
    assert '"a/both\\377.txt"' in result["diff"]  # git's own quoting in the diff
    # the commit holds the names' bytes and the agents' contents
    files = tree_names(Settings(data_dir=st.data_dir).workspaces_dir / f"{task_key(wf)}.git", result["commit"])
    assert files[b"\xff\xfebin"] == b"" and files[b"new\xff.py"] == b"X = 1\n"
    assert files[b"names/mod\xe9.py"] == b"VALUE = 2\n" and files[b"both\xff.txt"] == b"from a and b\n"
    assert files[FIXTURE] == b"changed\n" and b"fifo\xff" not in files
    # the conflict over one of them reached the second agent by its shown name
    hist = json.loads(st.bosun("history", wf, "--json").stdout)
    merges = [c for c in hist["children"] if c["name"] == "merge_agent_work"]
    assert ['"both\\377.txt"'] in [m["result"]["conflicts"] for m in merges]
    collects = [c["result"] for c in hist["children"] if c["name"] == "collect_agent_work"]
    assert any('"fifo\\377": a FIFO, not imported' in n for c in collects for n in c["notes"])
    text = st.bosun("history", wf).stdout
    assert '"\\377\\376bin"' in text and '"both\\377.txt"' in text
    # the web view shows them as the CLI does
    ui = f"http://127.0.0.1:{st.env['BOSUN_UI_PORT']}"
    wait_for(lambda: httpx.get(f"{ui}/healthz").status_code == 200, 30, 0.5, "the web view")
    page = httpx.get(f"{ui}/run", params={"id": wf}, timeout=60)
    assert page.status_code == 200 and "both\\377.txt" in page.text and "names/mod\\351.py" in page.text
    assert "raw\\377.py" in page.text  # the model's lone surrogate, shown
    assert httpx.get(f"{ui}/run/export", params={"id": wf}, timeout=60).json()["task"]["result"]["files_changed"]
    exported = st.bosun("export", wf)
    assert exported.returncode == 0, exported.stderr
    assert '"raw\\377.py"' in json.loads(exported.stdout)["task"]["result"]["files_changed"]


def worker_cpu(st: Stack) -> float:
    """CPU seconds the stack's worker process has spent itself (not its children: sandboxes, parse helpers)."""
    fields = Path(f"/proc/{st.state()['components']['worker']['pid']}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


COSTLY = """import random
def nest(opening, closing, depth, inner=""):
    return "".join(opening.format(i=i) + "\\n" for i in range(depth)) + inner + closing * depth + "\\n"
open("deep.rs", "w").write(nest("mod m{i}{{", "}", 900, "fn f(){}\\n"))
open("deep.js", "w").write(nest("function f{i}(){{", "}", 900))
open("Deep.java", "w").write(nest("class C{i}{{", "}", 900))
rng = random.Random(1)
open("noise.py", "w").write("".join(rng.choice("(){}[]:;,.=+-*/ \\n\\tdefclassifelse'") for _ in range(3_000_000)))
"""
"""Three files of 900 nested definitions (10-16 KB: extracting their symbols without a bound took over 30 s of CPU
each) and 3 MB of noise a Python grammar's error recovery chews on for seconds."""


def test_a_file_too_costly_to_parse_costs_the_host_its_bound(backend_stack, tmp_path):
    backend, st = backend_stack
    repo = names_repo(tmp_path / "names")
    expect_skipped = [{"tool": tool, "contains": "deep.rs (parsing it took more than 1.5 s of CPU)"}
                      for tool in ("search_code", "find_symbol", "repo_map")]
    turns = [
        {"content": "Writing costly files.", "tool_calls": [sh(f"python3 - <<'EOF'\n{COSTLY}EOF")]},
        {"content": "Searching.", "tool_calls": [  # twice each: one expectation per result
            *[call("search_code", query="greet who"), call("find_symbol", name="greet")] * 2,
            call("repo_map", query="greet"), call("check", paths=["noise.py", "names/__init__.py"], ruff=False)]},
        {"expect": [*expect_skipped, {"tool": "search_code", "contains": "1. names/__init__.py"},
                    {"tool": "find_symbol", "contains": "names/__init__.py:1: [function]"},
                    {"tool": "check", "contains": "noise.py (parsing it took more than 1.5 s of CPU"}],
         "content": "Done."},
    ]
    traj = tmp_path / "costly.jsonl"
    traj.write_text("".join(json.dumps(t) + "\n" for t in turns))
    wf = f"costly-{backend}"
    before = worker_cpu(st)
    proc = st.bosun("run", "--repo", str(repo), "--model", f"scripted:{traj}", "--id", wf, "--wait", "--json",
                    "--mode", "solo", "write costly files", timeout=600)
    spent = worker_cpu(st) - before
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "succeeded" and result["agent"]["status"] == "done", result["problems"]
    assert {"deep.rs", "deep.js", "Deep.java", "noise.py"} <= set(result["files_changed"])
    # parsing them in the worker would have cost it minutes; the helpers spent their bounds, the worker little
    assert spent < 20, f"the worker spent {spent:.1f} s of CPU on the task"
