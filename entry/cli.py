"""The `bosun` command line. Every command is documented in the README (`bosun COMMAND --help` too)."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from pathlib import Path

from pydantic import SecretStr

from infra.errors import BosunError
from infra.safetext import SafeStream
from infra.settings import Settings, load_settings

EPILOG = "Settings come from BOSUN_* environment variables; `bosun settings` shows them."


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bosun", description="Durable, sandboxed, multi-agent coding workflows.",
                                epilog=EPILOG)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    sub.add_parser("up", help="start the embedded stack (Temporal, NATS, worker); idempotent")
    sub.add_parser("down", help="stop what `bosun up` started")
    stp = sub.add_parser("status", help="show each part of the stack with its address and health, and each "
                                        "external engine (Temporal, NATS) with its health and cluster")
    stp.add_argument("--json", action="store_true", help="print the same as one JSON object")
    sub.add_parser("worker", help="run a worker in the foreground (the stack runs one for you)")
    sub.add_parser("settings", help="print the settings in force (secrets redacted)")

    r = sub.add_parser("run", help="start a task on a repository")
    r.add_argument("task", help="what to do, in plain words")
    r.add_argument("--repo", required=True, help="path of the git repository to work on")
    r.add_argument("--model", help="model spec (default: BOSUN_DEFAULT_MODEL), e.g. anthropic:claude-sonnet-4-5, "
                                   "openai:gpt-5-codex, openai-compatible:http://host:port/v1#model, "
                                   "scripted:PATH (the test double: replays a recorded trajectory), or auto "
                                   "(the router picks per role; BOSUN_ROUTER_CONFIG)")
    r.add_argument("--ref", default="HEAD", help="git ref to start from (default HEAD)")
    r.add_argument("--id", help="workflow id (default: generated)")
    r.add_argument("--max-turns", type=int, help="model turns each agent may take (default BOSUN_MAX_TURNS)")
    r.add_argument("--mode", choices=["team", "solo"], default="team",
                   help="team (default): planner, parallel fast-edit agents, stitching, debugger; solo: one agent")
    r.add_argument("--max-parallel", type=int, default=4, help="fast-edit agents at once (team mode, default 4)")
    r.add_argument("--budget-usd", type=float, help="task budget in USD (team mode: fan-out and debugger rounds "
                                                    "start only what fits)")
    r.add_argument("--budget-tokens", type=int, help="task budget in tokens (as --budget-usd)")
    r.add_argument("--harness", type=Path, metavar="SETTINGS.json",
                   help="harness settings for every agent of the task: a JSON object with edit_tool, "
                        "prompt_variant, compact_at, keep_recent_turns, router (README: 'Harness settings')")
    r.add_argument("--wait", action="store_true", help="wait for the result and print it")
    r.add_argument("--json", action="store_true", help="with --wait: print the result as JSON")

    h = sub.add_parser("history", help="print a run's steps read back from Temporal")
    h.add_argument("id", help="workflow id printed by `bosun run`")
    h.add_argument("--json", action="store_true", help="print the steps as JSON")

    st = sub.add_parser("steer", help="send a message to the agents of a running task")
    st.add_argument("id", help="workflow id of the task (or of one agent: TASK/agent-name)")
    st.add_argument("message", help="what to tell the agents")
    mo = sub.add_parser("model", help="switch a running task's agents (or one agent) to another model")
    mo.add_argument("id", help="workflow id of the task, or of one agent (TASK/agent-name)")
    mo.add_argument("spec", help="the model spec to use from the next turn on (as for bosun run --model)")
    mo.add_argument("--reason", default="", help="why (recorded in history)")
    mo.add_argument("--by", default="", help="who asks (recorded in history); default: $USER")
    ca = sub.add_parser("cancel", help="cancel a running task; its agents stop and release their sandboxes")
    ca.add_argument("id", help="workflow id of the task")
    ap = sub.add_parser("approve", help="approve (or --deny) an agent's request to run a command outside the sandbox")
    ap.add_argument("request", help="request id, as `bosun inspect TASK/AGENT` shows it (AGENT_WORKFLOW_ID#CALL_ID)")
    ap.add_argument("--deny", action="store_true", help="deny the request instead")
    ap.add_argument("--by", default="", help="who decides (recorded in history); default: $USER")
    ins = sub.add_parser("inspect", help="a running task's phase, plan and agents (Temporal queries)")
    ins.add_argument("id", help="workflow id of the task")

    tr = sub.add_parser("trace", help="a run's span tree: durations, errors, the slowest path (OpenTelemetry)")
    tr.add_argument("id", help="workflow id of the task (or of one agent)")
    tr.add_argument("--json", action="store_true", help="print the spans as JSON")
    al = sub.add_parser("alerts", help="error-rate alerts per tool, model and error class")
    al.add_argument("--hours", type=float, default=24, help="how far back (default 24 hours)")
    al.add_argument("--json", action="store_true", help="print the alerts as JSON")
    ex = sub.add_parser("export", help="everything a run did (docs/TRAJECTORY.md); replay it with scripted:FILE")
    ex.add_argument("id", help="workflow id of the task (or of one agent)")
    ex.add_argument("--format", choices=["json", "jsonl"], default="json", help="one document (default) or JSON lines")
    ex.add_argument("--out", help="write to this file (default: standard output)")
    kr = sub.add_parser("keep-rate", help="the share of the lines bosun's commits added still there N days later")
    kr.add_argument("--repo", required=True, help="the repository (with bosun's merged work on its default branch)")
    kr.add_argument("--days", type=float, default=30, help="N: measured this many days after each commit (30)")
    kr.add_argument("--branch", help="the default branch (default: origin's HEAD, else the checked-out branch)")
    kr.add_argument("--json", action="store_true", help="print the figures as JSON")

    sub.add_parser("ui", help="serve the web view in the foreground (the stack runs one: BOSUN_UI_PORT)")
    cl = sub.add_parser("cluster", help="a cluster on this machine: bosun cluster up [--hosts N] [--tls] | down | "
                                        "status", add_help=False)
    cl.add_argument("rest", nargs=argparse.REMAINDER)

    sb = sub.add_parser("sandbox", help="sandbox tools")
    sbs = sb.add_subparsers(dest="sandbox_cmd", required=True, metavar="SUBCOMMAND")
    sbs.add_parser("exec", help="run one command in a fresh sandbox", add_help=False)
    se = sub.add_parser("search", help="code search: bosun search files --repo DIR --query TEXT --json",
                        add_help=False)
    se.add_argument("rest", nargs=argparse.REMAINDER)
    ev = sub.add_parser("eval", help="evaluations: bosun eval swebench, run, sources (bosun eval --help), edits",
                        add_help=False)
    ev.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _settings(s: Settings) -> int:
    for name in Settings.model_fields:
        value = getattr(s, name)
        if isinstance(value, SecretStr) or (isinstance(value, str) and "key" in name):
            value = "***"
        elif name == "nats_url" and value:
            value = s.nats_display  # credentials written into a URL are not shown
        print(f"BOSUN_{name.upper()}={value}")
    return 0


# Subcommands are loaded when used: `bosun --help` or `bosun settings` take 0.3 s instead of 1.2 s, because
# temporalio, tree-sitter and the docker SDK load only for the commands that need them.
PASS_THROUGH = {("sandbox", "exec"): "entry.cli_sandbox:exec_main",
                ("env",): "entry.cli_env:env_main",
                ("search",): "entry.cli_search:search_main",
                ("eval",): "entry.cli_eval:eval_main",
                ("ui",): "entry.ui:main",
                ("cluster",): "entry.cluster:cluster_main"}
"""Commands with their own argument parsing: the rest of the command line goes to them as it is."""
COMMANDS = {"up": "entry.stack:up", "down": "entry.stack:down", "status": "entry.stack:status"}
"""Stack commands: called with the settings."""
RUN_COMMANDS = ("run", "history", "steer", "model", "cancel", "approve", "inspect")
"""Temporal commands (entry/cli_runs.py): called with the arguments and the settings."""
OBSERVE_COMMANDS = {"trace": "trace", "alerts": "alerts", "export": "export", "keep-rate": "keep_rate"}
"""Commands that look back at runs (entry/cli_observe.py): called with the arguments and the settings."""


def _load(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    for prefix, target in PASS_THROUGH.items():
        if tuple(argv[:len(prefix)]) == prefix:
            return _load(target)(argv[len(prefix):])
    args = _parser().parse_args(argv)
    try:
        s = load_settings()
        if args.cmd == "status":
            return _load(COMMANDS["status"])(s, as_json=args.json)
        if args.cmd in COMMANDS:
            return _load(COMMANDS[args.cmd])(s)
        if args.cmd == "worker":
            _load("entry.worker:main")()
            return 0
        if args.cmd == "settings":
            return _settings(s)
        if args.cmd in RUN_COMMANDS:
            return asyncio.run(_load(f"entry.cli_runs:{args.cmd}")(args, s))
        if args.cmd in OBSERVE_COMMANDS:
            return asyncio.run(_load(f"entry.cli_observe:{OBSERVE_COMMANDS[args.cmd]}")(args, s))
    except BosunError as e:
        print(f"bosun: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


def entry() -> None:
    """Console-script entry point. Exits with os._exit after flushing: the Temporal client's native runtime can
    crash the interpreter's finalisation (a known SDK issue), which must not turn a clean result into a signal."""
    sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)  # type: ignore[assignment]
    try:
        rc = main()
    except SystemExit as e:  # argparse errors and --help
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
    except BrokenPipeError:  # the reader went away (`bosun history ID | head`): nothing more to say
        os._exit(0)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(rc)


if __name__ == "__main__":
    entry()
