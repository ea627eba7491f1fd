"""A pull request's conversation end to end (issue 51; prints JSON). Starts its own embedded stack (private data
dir, free ports) whose worker reports to a local GitHub fixture server (tests/infra/events/fakes.py, GitHub's
documented REST API), and runs the ingress and the starter in this process. The pull request is #12 of the
example repository (examples/calc) on its bosun branch; the model is the scripted test double (the example's
solo trajectory).

1. ``review``: a review requesting changes with 5 inline comments (GitHub's own example payloads,
   tests/infra/events/github/), each delivered twice; the stack's worker is SIGKILLed while the round's agent runs
   a slow command (the supervisor restarts it): how many rounds, commits on the pull request's branch, replies per
   thread, status comments, pull requests opened, and how long from the last delivery to the round's end;
2. ``again``: the same six events once more under new delivery ids (a proxy's resend): what changed (nothing);
3. ``ci``: a failed check on the round's commit, twice, plus a second check of that commit; then a person's push
   and a failure on it: CI rounds (1: once per head, none after the push).

Goals (issue 51): one round, one commit, exactly one reply per thread (also with the worker killed mid-round),
nothing changed by the same deliveries; CI at most once per head and none after a person's push.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REPO = "Codertocat/Hello-World"
BRANCH = "bosun/gh-codertocat-hello-world-issue-1"
NUMBER = 12


def git(*args: str, cwd: Path | None = None) -> str:
    base = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgsign=false"]
    return subprocess.run(base + list(args), cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_remote(tmp: Path) -> Path:
    """The repository as GitHub would hold it: the example on main, the pull request's branch at the same commit."""
    work = tmp / "calc"
    shutil.copytree(ROOT / "examples" / "calc", work, ignore=shutil.ignore_patterns("*.jsonl", "__pycache__"))
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-qm", "example", cwd=work)
    git("branch", BRANCH, cwd=work)
    remote = tmp / "remote.git"
    git("clone", "-q", "--bare", str(work), str(remote))
    return remote


def slow_trajectory(tmp: Path) -> Path:
    """The example's solo trajectory with a slow command as its third step (the worker is killed during it)."""
    turns = [json.loads(line) for line in (ROOT / "examples" / "calc" / "solo.jsonl").read_text().splitlines()]
    turns.insert(2, {"content": "Checking the environment.", "tool_calls": [
        {"name": "run_command", "arguments": {"command": "sleep 6 && echo slept"}}]})
    turns[3]["expect"] = [{"tool": "run_command", "contains": "slept"}]
    path = tmp / "slow.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def kill_worker_during_the_slow_step(data_dir: Path, agent: str, timeout: float = 300) -> int:
    """SIGKILL the stack's worker once the agent's slow command started; returns the killed pid."""
    journal = data_dir / "logs" / "activity-journal.jsonl"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = journal.read_text().splitlines() if journal.exists() else []
        starts = [e for e in map(json.loads, lines) if e.get("workflow_id") == agent and e.get("type") == "tool_call"
                  and e.get("event") == "start"]
        if len(starts) >= 2:
            time.sleep(1.0)  # (inside the 6 s command)
            pid = json.loads((data_dir / "stack.json").read_text())["components"]["worker"]["pid"]
            os.kill(pid, signal.SIGKILL)
            return pid
        time.sleep(0.1)
    raise TimeoutError("the round's agent did not reach its slow step")


def review_deliveries() -> list[tuple[str, dict]]:
    from tests.infra.events.test_conversation_triggers import example, on_bosuns_branch

    review = on_bosuns_branch(example("pull_request_review.submitted"))
    review["pull_request"]["number"] = NUMBER
    review["review"].update({"state": "changes_requested", "body": "The median is wrong for even lists."})
    out = []
    for i in range(5):
        c = on_bosuns_branch(example("pull_request_review_comment.created"))
        c["pull_request"]["number"] = NUMBER
        c["comment"].update({"id": 900 + i, "line": 10 + i, "path": "calc/stats.py",
                             "body": f"Point {i + 1}: handle the even case here."})
        out.append(("pull_request_review_comment", c))
    out.append(("pull_request_review", review))
    return out


def check_delivery(sha: str, name: str) -> tuple[str, dict]:
    from tests.infra.events.test_conversation_triggers import example

    payload = copy.deepcopy(example("check_run.completed"))
    run = payload["check_run"]
    run.update({"conclusion": "failure", "head_sha": sha, "name": name, "id": abs(hash((sha, name))) % 10**9})
    run["check_suite"]["head_branch"] = BRANCH
    run["pull_requests"] = [{"number": NUMBER, "head": {"ref": BRANCH, "sha": sha},
                             "base": {"ref": "main", "sha": "0" * 40}}]
    return "check_run", payload


def push_delivery(sha: str) -> tuple[str, dict]:
    from tests.infra.events.test_conversation_triggers import example, on_bosuns_branch

    payload = on_bosuns_branch(example("pull_request.synchronize"))
    payload["pull_request"]["number"] = NUMBER
    payload["after"] = sha
    payload["sender"] = {"login": "bob", "type": "User"}
    return "pull_request", payload


async def main(args: argparse.Namespace) -> dict:
    from temporalio.service import RPCError

    from infra.privatestack import private_stack_env
    from infra.settings import load_settings
    from infra.temporal import connect
    from tests.infra.events.conftest import make_cfg, running_ingress, running_starter
    from tests.infra.events.fakes import FakeGitHub, serve
    from tests.infra.events.samples import github_request
    from workflows.pull_request import PullRequestWorkflow

    tmp = Path(tempfile.mkdtemp(prefix="bosun-conv-"))
    fake = FakeGitHub()
    fake.review_comments[(REPO, NUMBER)] = [{"id": 900 + i, "body": f"Point {i + 1}", "path": "calc/stats.py",
                                             "user": {"login": "Codertocat", "type": "User"}} for i in range(5)]
    remote = make_remote(tmp)
    base = git("--git-dir", str(remote), "rev-parse", BRANCH)
    async with serve(fake.app()) as url:
        env = {**private_stack_env(tmp / "data"), "BOSUN_GITHUB_TOKEN": "ghs_test", "BOSUN_GITHUB_API_URL": url}
        os.environ.update(env)
        bosun = [str(Path(sys.executable).parent / "bosun")]
        up = await asyncio.to_thread(subprocess.run, bosun + ["up"], capture_output=True, text=True, timeout=300)
        if up.returncode != 0:
            return {"error": f"bosun up failed: {up.stderr[-400:]}"}
        try:
            settings = load_settings()
            cfg = make_cfg(settings, github_token="ghs_test", github_api_url=url, repos={REPO: str(remote)},
                           model=f"scripted:{slow_trajectory(tmp)}",
                           task_defaults={"mode": "solo"}, review_quiet_s=args.quiet, post_status=True)
            client = await connect(settings)
            wf_id = f"gh:{REPO}:conversation:{NUMBER}"
            async with running_ingress(settings, cfg) as ing, running_starter(settings, cfg):
                async def deliver(items, tag: str) -> None:
                    for k, (event, payload) in enumerate(items):
                        r = await ing.github(*github_request(event, payload, delivery=f"{tag}-{k}"))
                        assert r.status_code == 200, r.text

                async def state():
                    return await client.get_workflow_handle(wf_id).query(PullRequestWorkflow.conversation)

                async def rounds_done(n: int, timeout: float = 600) -> dict:
                    deadline = time.monotonic() + timeout
                    while time.monotonic() < deadline:
                        try:
                            s = await state()
                        except RPCError:  # not started yet
                            s = None
                        if s is not None and len(s.rounds) >= n and all(r.status != "running" for r in s.rounds):
                            return s
                        await asyncio.sleep(0.2)
                    raise TimeoutError(f"{n} round(s) not done in {timeout} s")

                reviews = review_deliveries()
                await deliver(reviews, "r")
                await deliver(reviews, "r")  # GitHub's redelivery: the same delivery ids
                sent = time.perf_counter()
                killed = await asyncio.to_thread(kill_worker_during_the_slow_step, tmp / "data",
                                                 f"{wf_id}/round-1/agent-1")
                s = await rounds_done(1)
                restarted = json.loads((tmp / "data" / "stack.json").read_text())["components"]["worker"]["pid"]
                round_s = time.perf_counter() - sent
                head = git("--git-dir", str(remote), "rev-parse", BRANCH)
                commits = int(git("--git-dir", str(remote), "rev-list", "--count", f"{base}..{BRANCH}"))
                threads = fake.review_comments[(REPO, NUMBER)]
                per_thread = {c["id"]: sum(1 for r in threads if r.get("in_reply_to_id") == c["id"])
                              for c in threads if not c.get("in_reply_to_id")}
                status_comments = sum(1 for c in fake.comments.get((REPO, NUMBER), []) if ":status -->" in c["body"])
                review = {"rounds": len(s.rounds), "round_status": s.rounds[0].status,
                          "commits_on_branch": commits, "replies_per_thread": sorted(per_thread.values()),
                          "status_comments": status_comments, "pull_requests_opened": len(fake.pulls.get(REPO, [])),
                          "round_wall_s": round(round_s, 2), "quiet_s": args.quiet,
                          "worker_killed_mid_round": bool(killed), "worker_restarted": restarted != killed}
                before = (len(threads), len(fake.comments.get((REPO, NUMBER), [])), head)
                await deliver(reviews, f"again-{uuid.uuid4().hex[:6]}")
                await asyncio.sleep(args.quiet + 3)
                s2 = await state()
                after = (len(fake.review_comments[(REPO, NUMBER)]), len(fake.comments.get((REPO, NUMBER), [])),
                         git("--git-dir", str(remote), "rev-parse", BRANCH))
                again = {"rounds": len(s2.rounds), "changed": before != after}
                await deliver([check_delivery(head, "tests"), check_delivery(head, "tests"),
                               check_delivery(head, "lint")], "ci1")
                s3 = await rounds_done(2)
                stranger = "c" * 40
                await deliver([push_delivery(stranger), check_delivery(stranger, "tests")], "ci2")
                await asyncio.sleep(args.quiet + 3)
                s4 = await state()
                ci = {"ci_rounds": sum(1 for r in s4.rounds if r.kind == "ci"),
                      "ci_round_status": [r.status for r in s3.rounds if r.kind == "ci"],
                      "paused_by": s4.ci_paused_by, "notes": s4.notes[-3:]}
        finally:
            await asyncio.to_thread(subprocess.run, bosun + ["down"], capture_output=True, timeout=120)
    shutil.rmtree(tmp, ignore_errors=True)
    goals = {"one_round": review["rounds"] == 1 and again["rounds"] == 1,
             "one_commit": review["commits_on_branch"] == 1,
             "one_reply_per_thread": review["replies_per_thread"] == [1] * 5,
             "no_second_pull_request": review["pull_requests_opened"] == 0,
             "same_deliveries_change_nothing": not again["changed"],
             "ci_once_per_head_none_after_a_push": ci["ci_rounds"] == 1 and ci["paused_by"] == "bob"}
    return {"review": review, "again": again, "ci": ci, "goals": goals}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", type=float, default=2.0, help="the review quiet period, seconds (default 2)")
    print(json.dumps(asyncio.run(main(parser.parse_args())), indent=2, default=str))
