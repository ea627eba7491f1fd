"""Web view benchmark (prints JSON): how long a run page with 16 parallel agents and ~300 tool calls takes.

Starts its own embedded stack (private data dir, free ports), runs a team task whose plan has 16 subtasks (the
scripted model, the test double), each agent reading files over 18 tool calls and making one edit (16 x 19 = 304
tool calls), then measures ``GET /run?id=...`` on the stack's web view (server: history, artifacts, rendering),
and, when Debian's chromium is installed, the page's load in a headless browser (navigation start to load end).

Goal (issue 18): the page renders in <= 1 s on this machine.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.privatestack import private_stack_env  # noqa: E402

AGENTS, READS = 16, 18


def bosun(env: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "bosun"), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout)


def make_run(env: dict, work: Path) -> str:
    repo = work / "repo"
    repo.mkdir(parents=True)
    for i in range(AGENTS):
        (repo / f"mod{i:02d}.py").write_text(f"VALUE_{i} = 0\n" + "".join(f"# line {j}\n" for j in range(40)))
    g = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(g + cmd, cwd=repo, check=True)
    plan = {"subtasks": [{"id": f"s{i:02d}", "goal": f"set VALUE_{i} to {i + 1}", "files": [f"mod{i:02d}.py"],
                          "acceptance": {"command": "true"}} for i in range(AGENTS)]}
    turns = [{"agent": "planner", "content": json.dumps(plan)}]
    for i in range(AGENTS):
        key = f"fast_edit:s{i:02d}"
        turns.append({"agent": key, "content": "reading around", "tool_calls": [
            {"name": "read_file", "arguments": {"path": f"mod{(i + j) % AGENTS:02d}.py"}} for j in range(READS)]})
        turns.append({"agent": key, "content": "edit", "tool_calls": [{"name": "str_replace", "arguments": {
            "path": f"mod{i:02d}.py", "old_str": f"VALUE_{i} = 0", "new_str": f"VALUE_{i} = {i + 1}"}}]})
        turns.append({"agent": key, "content": "done"})
    traj = work / "fan.jsonl"
    traj.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    wf_id = f"bench-ui-{int(time.time())}"
    proc = bosun(env, "run", "--repo", str(repo), "--model", f"scripted:{traj}", "--id", wf_id, "--max-parallel",
                 str(AGENTS), "--wait", "--json", "set every value")
    if proc.returncode not in (0, 1):
        raise RuntimeError(proc.stderr[-2000:])
    return wf_id


def browser_load_s(url: str, runs: int = 3) -> list[float] | None:
    if not Path("/usr/bin/chromium").exists():
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")
    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="bosun-bench-chromium-")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        out = []
        for _ in range(runs):
            driver.get(url)
            timing = driver.execute_script("const t = performance.getEntriesByType('navigation')[0];"
                                           "return [t.startTime, t.responseStart, t.loadEventEnd];")
            out.append(round((timing[2] - timing[0]) / 1000, 3))
        return out
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bosun-bench-ui-"))
    env = private_stack_env(work / "data", worker_id=f"bench-ui-{os.getpid()}")
    up = bosun(env, "up", timeout=120)
    if up.returncode != 0:
        print(json.dumps({"error": f"bosun up failed: {up.stderr}"}))
        return
    try:
        wf_id = make_run(env, work)
        url = f"http://127.0.0.1:{env['BOSUN_UI_PORT']}/run?id={wf_id}"
        times, size, calls = [], 0, 0
        with httpx.Client(timeout=60) as http:
            for _ in range(6):
                t = time.perf_counter()
                r = http.get(url)
                times.append(time.perf_counter() - t)
                size, calls = len(r.content), r.text.count('class="tool ')
        server = times[1:]  # the first request warms the web view's Temporal connection
        load = browser_load_s(url)
        p50 = statistics.median(server)
        print(json.dumps({"agents": AGENTS, "tool_calls_on_page": calls, "page_bytes": size,
                          "server_s_p50": round(p50, 3), "server_s_max": round(max(server), 3),
                          "browser_load_s": load,
                          "goal_le_1s": p50 <= 1.0 and (load is None or statistics.median(load) <= 1.0)}, indent=2))
    finally:
        bosun(env, "down", timeout=120)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
