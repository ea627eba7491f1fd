"""The `bosun` command line. Every command's reference is its `--help` (docs/cli.md is generated from the same
text: ``python -m entry.docgen``)."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from infra.cliargs import CommandParser, Page, add_command
from infra.errors import BosunError
from infra.events.config import SHARED, env_name, load_events_config
from infra.fielddocs import field_docs
from infra.safetext import SafeStream
from infra.settings import Settings, load_settings, redact_url

EPILOG = "Settings come from BOSUN_* environment variables; `bosun settings --describe` explains them."
WID = "task-20250314-101500-3f9a2c"
"""A workflow id as `bosun run` makes them, for the examples."""

NEEDS_STACK = "Needs the stack: `bosun up` (or `make demo`) on this machine, or the settings of a cluster."
TEMPORAL_2 = "bad input, or Temporal cannot be reached (start the stack with `bosun up`)"

ROOT = Page(
    description="Durable, sandboxed, multi-agent coding workflows. A task runs as a Temporal workflow whose agents "
                "work in sandboxes on clones of your repository; its history survives crashes and restarts. Most "
                "commands need the stack: `bosun up` starts it on this machine (`make demo` starts it and runs a "
                "task offline, with the scripted test double instead of a model). `bosun COMMAND --help` tells "
                "what a command does, needs and exits with.",
    exit_codes={0: "the command did what it was asked",
                1: "the work failed: the command's page says how (e.g. `run --wait`: the task did not succeed)",
                2: "bad usage or input, a wrong setting, or the stack cannot be reached: one line says what to do",
                3: "the command's own meaning (e.g. `status`: the stack is not running; `env build`: this host "
                   "cannot build)",
                130: "interrupted (Ctrl-C)"},
    examples=("bosun up",
              'bosun run --repo . "make the failing test in tests/test_stats.py pass" '
              "--model anthropic:claude-sonnet-4-5 --wait",
              "bosun settings --describe"),
    notes=EPILOG)


def _stack_commands(sub) -> None:
    """up, down, status, worker, settings: the stack and its worker."""
    add_command(sub, "up", help="start the embedded stack (Temporal, NATS, worker, web view); idempotent",
                description="Start the embedded stack as supervised child processes: the Temporal dev server (SQLite "
                            "persistence, Web UI on BOSUN_TEMPORAL_UI_PORT) unless BOSUN_TEMPORAL_ADDRESS names "
                            "one, nats-server with JetStream unless BOSUN_NATS_URL does, the bosun worker, the web "
                            "view (BOSUN_UI_PORT) and, when a webhook secret is set, the webhook ingress and (with a "
                            "model) the event starter; then wait until every part is healthy and print the status. "
                            "Running it again is harmless (a stack started from other code is restarted, "
                            "and its runs resume). Everything lives in BOSUN_DATA_DIR. Needs the temporal and "
                            "nats-server binaries (`make bootstrap` installs them).",
                exit_codes={0: "the stack is up and healthy",
                            1: "the stack is up but a part of it (or an external engine) is not healthy",
                            2: "a port is in use (the message names it and the setting that moves it), a setting "
                               "is wrong, or the stack did not become healthy within 90 s (see the logs named)"},
                examples=("bosun up", "BOSUN_UI_PORT=8791 BOSUN_TEMPORAL_UI_PORT=8234 bosun up"))
    add_command(sub, "down", help="stop what `bosun up` started",
                description="Stop the processes `bosun up` started (their pid and command line checked; nothing "
                            "else is touched). The data stays in BOSUN_DATA_DIR: runs resume at the next `bosun up`.",
                exit_codes={0: "stopped (or nothing was running)", 2: "a setting is wrong"},
                examples=("bosun down",))
    stp = add_command(sub, "status", help="show each part of the stack with its address and health, and each "
                                          "external engine (Temporal, NATS) with its health and cluster",
                      description="Each part of the stack with its pid, address and health (on a host that runs "
                                  "`bosun worker` by itself: its worker, sandbox backend and slots), and each "
                                  "external engine (BOSUN_TEMPORAL_ADDRESS, BOSUN_NATS_URL) with its health and "
                                  "cluster; a refused engine gets a one-line reason naming the setting.",
                      exit_codes={0: "everything is healthy", 1: "a part of the stack or an engine is not healthy",
                                  2: "a setting is wrong", 3: "the stack is not running (`bosun up` starts it)"},
                      examples=("bosun status", "bosun status --json"))
    stp.add_argument("--json", action="store_true", help="print the same as one JSON object")
    add_command(sub, "worker", help="run a worker in the foreground (the stack runs one for you)",
                description="Run a bosun worker in the foreground until SIGTERM or Ctrl-C: it polls the task queues, "
                            "runs agents in sandboxes and tool calls on this host. The stack (`bosun up`) runs one "
                            "already; run this on the other hosts of a cluster, pointed at the shared Temporal and "
                            "NATS (BOSUN_TEMPORAL_ADDRESS, BOSUN_NATS_URL, BOSUN_ARTIFACT_STORE=nats).",
                exit_codes={0: "stopped by SIGTERM or Ctrl-C",
                            2: "a setting is wrong, or Temporal or NATS cannot be reached"},
                examples=("bosun worker",
                          "BOSUN_TEMPORAL_ADDRESS=temporal.internal:7233 BOSUN_NATS_URL=nats://nats.internal:4222 "
                          "BOSUN_ARTIFACT_STORE=nats bosun worker"))
    se = add_command(sub, "settings", help="print the settings in force (secrets redacted)",
                     description="Print every setting in force as BOSUN_NAME=VALUE, read from the environment (every "
                                 "key, token, password and secret shown as ***, credentials in a URL as ***@). "
                                 "--describe prints each setting with its meaning, grouped: bosun's settings, then "
                                 "the events settings (BOSUN_EVENTS_*); docs/settings.md lists the same.",
                     exit_codes={0: "printed", 2: "a setting is wrong (with --describe: an events setting too; the "
                                                  "message names the variable and what is expected)"},
                     examples=("bosun settings", "bosun settings --describe"))
    se.add_argument("--describe", action="store_true",
                    help="print each setting with its meaning and its current value, grouped")


def _run_commands(sub) -> None:
    """run, runs: start a task, list the runs."""
    r = add_command(sub, "run", help="start a task on a repository",
                    description="Start a task on a git repository. team (default): a planner splits the task, "
                                "fast-edit agents work in parallel, each on its own clone, their commits are merged, "
                                "the tests verify and a debugger fixes what is still red; solo: one agent. Prints "
                                "the workflow id (and the Web UI link) and returns; --wait waits and prints the diff, "
                                "the tests before and after, the plan and the status. "
                                f"{NEEDS_STACK} Needs a model: --model or BOSUN_DEFAULT_MODEL, with its API key "
                                "(BOSUN_ANTHROPIC_API_KEY, BOSUN_OPENAI_API_KEY...).",
                    exit_codes={0: "the task was started (its id printed); with --wait: it succeeded",
                                1: "with --wait: the task did not succeed (its status is printed: partial, failed, "
                                   "no_changes...) or its workflow failed",
                                2: "bad input (an empty task, not a git repository, no model or no API key, a bad "
                                   "--harness file or budget), or Temporal cannot be reached (`bosun up`)"},
                    examples=('bosun run --repo . "make the failing test in tests/test_stats.py pass" '
                              "--model anthropic:claude-sonnet-4-5 --wait",
                              'bosun run --repo ~/src/calc "fix median for lists of even length" --mode solo '
                              "--model openai-compatible:http://127.0.0.1:8000/v1#qwen3-coder --context-window 32768",
                              'bosun run --repo . "add a --verbose flag" --budget-usd 2 --max-parallel 2 --no-branch'))
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
                        "prompt_variant, compact_at, keep_recent_turns, context_window, router (docs/models.md: "
                        "'Harness settings')")
    r.add_argument("--context-window", type=int, dest="context_window", metavar="TOKENS",
                   help="the model's context window in tokens, for a local server started with less than the "
                        "model's native window (vLLM --max-model-len, Ollama num_ctx, llama.cpp -c); default: the "
                        "model's profile")
    r.add_argument("--no-branch", action="store_true", dest="no_branch",
                   help="do not create the branch bosun/<id> in your repository when the task ends (by default the "
                        "result is delivered there as a ref; your working tree, index and checked-out branch are "
                        "never touched)")
    r.add_argument("--wait", action="store_true", help="wait for the result and print it")
    r.add_argument("--json", action="store_true", help="with --wait: print the result as JSON")

    rs = add_command(sub, "runs", help="recent runs, newest first, with id, status, trigger, repository, start and "
                                       "duration",
                     description="List the recent runs (tasks started by `bosun run`, a webhook or an evaluation), "
                                 "newest first, with their id, status, trigger, repository, start and duration. "
                                 + NEEDS_STACK,
                     exit_codes={0: "listed (maybe none)",
                                 2: "a bad --status or --limit, or Temporal cannot be reached (`bosun up`)"},
                     examples=("bosun runs", "bosun runs --status failed --limit 5", "bosun runs --json"))
    rs.add_argument("--json", action="store_true", help="print the runs as a JSON list")
    rs.add_argument("--status", metavar="STATUS",
                    help="only the runs with this status: running, succeeded, partial, failed, no_changes, cancelled, "
                         "environment_failed, terminated, timed_out")
    rs.add_argument("--limit", type=int, default=20, metavar="N", help="at most N runs (default 20)")


def _control_commands(sub) -> None:
    """history, steer, model, cancel, approve, inspect: a run, as it goes."""
    h = add_command(sub, "history", help="print a run's steps read back from Temporal",
                    description="Print a run's steps read back from Temporal: model turns (model, tokens, text, tool "
                                "calls), tool calls with their arguments and short results, the plan, clones, "
                                "merges, test runs, durations and retries, for the task and every agent. "
                                + NEEDS_STACK,
                    exit_codes={0: "printed", 2: "no such run, or " + TEMPORAL_2},
                    examples=(f"bosun history {WID}", f"bosun history {WID} --json"))
    h.add_argument("id", help="workflow id printed by `bosun run`")
    h.add_argument("--json", action="store_true", help="print the steps as JSON")

    st = add_command(sub, "steer", help="send a message to the agents of a running task",
                     description="Send a message to the running agents of a task (or to one agent: TASK/NAME); they "
                                 "see it with their next model call. A message sent while no agent runs waits for "
                                 "the next agent that starts (`bosun inspect` shows where each went). " + NEEDS_STACK,
                     exit_codes={0: "sent", 2: "an empty message, no such run, a run that is not running, or "
                                               + TEMPORAL_2},
                     examples=(f'bosun steer {WID} "keep the public API of calc/stats.py unchanged"',
                               f'bosun steer {WID}/planner "split the parser change from the docs"'))
    st.add_argument("id", help="workflow id of the task (or of one agent: TASK/agent-name)")
    st.add_argument("message", help="what to tell the agents")
    mo = add_command(sub, "model", help="switch a running task's agents (or one agent) to another model",
                     description="Switch a running task's agents (or one agent: TASK/NAME) to another model from "
                                 "their next turn on; agents the task starts afterwards use it too. Recorded in "
                                 "history with who and why. " + NEEDS_STACK,
                     exit_codes={0: "the switch was sent",
                                 2: "a bad spec (or a scripted: one, or no API key for it), no such run, a run that "
                                    "is not running, or " + TEMPORAL_2},
                     examples=(f'bosun model {WID} anthropic:claude-opus-4-1 --reason "stuck on the parser"',
                               f"bosun model {WID}/debugger-1 openai:gpt-5-codex --by alice"))
    mo.add_argument("id", help="workflow id of the task, or of one agent (TASK/agent-name)")
    mo.add_argument("spec", help="the model spec to use from the next turn on (as for bosun run --model)")
    mo.add_argument("--reason", default="", help="why (recorded in history)")
    mo.add_argument("--by", default="", help="who asks (recorded in history); default: $USER")
    ca = add_command(sub, "cancel", help="cancel a running task; its agents stop and release their sandboxes",
                     description="Cancel a running task: its agents stop and release their sandboxes; its history "
                                 "stays (`bosun history`). " + NEEDS_STACK,
                     exit_codes={0: "cancellation requested", 2: "no such run, a run that is not running, or "
                                                                 + TEMPORAL_2},
                     examples=(f"bosun cancel {WID}",))
    ca.add_argument("id", help="workflow id of the task")
    ap = add_command(sub, "approve", help="approve (or --deny) an agent's request to run a command outside the "
                                          "sandbox",
                     description="Decide on an agent's request to run one exact command outside the sandbox "
                                 "(request_escalation): nothing runs before a person approves, and no decision "
                                 "within an hour is a denial. `bosun inspect TASK/AGENT` lists the pending request "
                                 "ids. " + NEEDS_STACK,
                     exit_codes={0: "decided", 2: "a request id not of the form AGENT_WORKFLOW_ID#CALL_ID, no such "
                                                  "pending request, an agent that is not running, or " + TEMPORAL_2},
                     examples=(f"bosun approve {WID}/debugger-1#toolu_01XFDUDYJgAACzvnptvVoYEL",
                               f"bosun approve {WID}/debugger-1#toolu_01XFDUDYJgAACzvnptvVoYEL --deny --by alice"))
    ap.add_argument("request", help="request id, as `bosun inspect TASK/AGENT` shows it (AGENT_WORKFLOW_ID#CALL_ID)")
    ap.add_argument("--deny", action="store_true", help="deny the request instead")
    ap.add_argument("--by", default="", help="who decides (recorded in history); default: $USER")
    ins = add_command(sub, "inspect", help="a running task's phase, plan and agents (Temporal queries)",
                      description="A running task's phase, plan, agents and messages (Temporal queries); for an agent "
                                  "id (TASK/NAME): its turn, model, error counts, last steps and pending requests. "
                                  "An ended run says so (`bosun history` shows its steps). " + NEEDS_STACK,
                      exit_codes={0: "printed", 2: "no such run, or " + TEMPORAL_2},
                      examples=(f"bosun inspect {WID}", f"bosun inspect {WID}/planner"))
    ins.add_argument("id", help="workflow id of the task")


def _record_commands(sub) -> None:
    """trace, alerts, export, keep-rate: what runs left behind."""
    tr = add_command(sub, "trace", help="a run's span tree: durations, errors, the slowest path (OpenTelemetry)",
                     description="A run's span tree from the OpenTelemetry spans kept in BOSUN_DATA_DIR/telemetry: "
                                 "every workflow, agent, model call, tool call and sandbox step with its duration and "
                                 "errors, the slowest path marked ». Needs BOSUN_TELEMETRY (on by default), not the "
                                 "stack.",
                     exit_codes={0: "printed", 2: "no spans of that run (telemetry off, or none recorded yet)"},
                     examples=(f"bosun trace {WID}", f"bosun trace {WID} --json"))
    tr.add_argument("id", help="workflow id of the task (or of one agent)")
    tr.add_argument("--json", action="store_true", help="print the spans as JSON")
    al = add_command(sub, "alerts", help="error-rate alerts per tool, model and error class",
                     description="The error-rate alerts fired per tool, model and error class: a window's error rate "
                                 "far above its rolling baseline (BOSUN_ALERT_*), read from BOSUN_DATA_DIR/telemetry.",
                     exit_codes={0: "printed (maybe none)", 2: "a setting is wrong"},
                     examples=("bosun alerts", "bosun alerts --hours 2 --json"))
    al.add_argument("--hours", type=float, default=24, help="how far back (default 24 hours)")
    al.add_argument("--json", action="store_true", help="print the alerts as JSON")
    ex = add_command(sub, "export", help="everything a run did (docs/TRAJECTORY.md); replay it with scripted:FILE",
                     description="Everything a run did (every message, tool call with full arguments and results, "
                                 "timings, usage, cost, model switches, compactions) in the schema "
                                 "bosun.trajectory/1 (docs/TRAJECTORY.md). `bosun run --model scripted:FILE` replays "
                                 "an export to the same diff. " + NEEDS_STACK,
                     exit_codes={0: "exported", 2: "no such run, --out is a directory, or " + TEMPORAL_2},
                     examples=(f"bosun export {WID} --out run.json",
                               f"bosun export {WID} --format jsonl --out run.jsonl",
                               'bosun run --repo . "fix the test" --model scripted:run.json --wait'))
    ex.add_argument("id", help="workflow id of the task (or of one agent)")
    ex.add_argument("--format", choices=["json", "jsonl"], default="json", help="one document (default) or JSON lines")
    ex.add_argument("--out", help="write to this file (default: standard output)")
    kr = add_command(sub, "keep-rate", help="the share of the lines bosun's commits added still there N days later",
                     description="Keep Rate: of the lines bosun's commits (committer bosun@localhost) added, the share "
                                 "still on the default branch N days later (git blame), per task (the Bosun-Task: "
                                 "trailer) and overall. Reads the repository only; needs no stack.",
                     exit_codes={0: "printed (maybe: no commits of bosun)",
                                 2: "not a git repository, a --branch that is not there, or a negative --days"},
                     examples=("bosun keep-rate --repo .", "bosun keep-rate --repo ~/src/calc --days 7 --json"))
    kr.add_argument("--repo", required=True, help="the repository (with bosun's merged work on its default branch)")
    kr.add_argument("--days", type=float, default=30, help="N: measured this many days after each commit (30)")
    kr.add_argument("--branch", help="the default branch (default: origin's HEAD, else the checked-out branch)")
    kr.add_argument("--json", action="store_true", help="print the figures as JSON")


def _parser() -> argparse.ArgumentParser:
    p = CommandParser(prog="bosun", page=ROOT)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for commands in (_stack_commands, _run_commands, _control_commands, _record_commands):
        commands(sub)

    # Commands with their own parser (PASS_THROUGH): listed here, parsed (and their --help printed) by their module.
    for name, text in (("ui", "serve the web view in the foreground (the stack runs one: BOSUN_UI_PORT)"),
                       ("cluster", "a cluster on this machine: bosun cluster up [--hosts N] [--tls] | down | status"),
                       ("env", "environments per repository and revision: bosun env build, show, list, rm, prune, "
                               "bases"),
                       ("search", "code search: bosun search files --repo DIR --query TEXT --json"),
                       ("eval", "evaluations: bosun eval swebench, run, sources, edits")):
        sub.add_parser(name, help=text, add_help=False).add_argument("rest", nargs=argparse.REMAINDER)

    sb = add_command(sub, "sandbox", help="sandbox tools: bosun sandbox exec",
                     description="Sandbox tools: `bosun sandbox exec` runs one command in a fresh sandbox (docker or "
                                 "bwrap), as agents' tool calls run. `bosun sandbox exec --help` tells more.",
                     exit_codes={0: "done (the subcommand's own exit codes: `bosun sandbox exec --help`)",
                                 2: "no subcommand, or an unknown one (the closest is suggested)"},
                     examples=("bosun sandbox exec --json -- python3 -c 'print(1)'",))
    sbs = sb.add_subparsers(dest="sandbox_cmd", required=True, metavar="SUBCOMMAND")
    sbs.add_parser("exec", help="run one command in a fresh sandbox", add_help=False)
    return p


def _shown(value: Any, name: str, s: Settings) -> Any:
    """A setting's value as `bosun settings` prints it: secrets as ***, credentials in a NATS URL as ***@."""
    if isinstance(value, SecretStr) or (isinstance(value, str) and "key" in name):
        return "***"
    if name == "nats_url" and value:
        return s.nats_display  # credentials written into a URL are not shown
    return value


def _settings(s: Settings) -> int:
    for name in Settings.model_fields:
        print(f"BOSUN_{name.upper()}={_shown(getattr(s, name), name, s)}")
    return 0


def _wrapped(text: str, indent: str = "    ") -> str:
    return textwrap.fill(" ".join(text.split()), 100, initial_indent=indent, subsequent_indent=indent)


def _events_value(value: Any) -> str:
    """An events setting's value as JSON-ish text, credentials in URLs replaced by ***@."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")

    def redact(v: Any) -> Any:
        if isinstance(v, str) and "://" in v:
            return redact_url(v)
        if isinstance(v, dict):
            return {k: redact(x) for k, x in v.items()}
        if isinstance(v, list):
            return [redact(x) for x in v]
        return v
    value = redact(value)
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _describe(s: Settings) -> int:
    """``bosun settings --describe``: every setting with its meaning and its value, bosun's then the events'."""
    cfg = load_events_config(s)  # (a bad events setting is refused before anything is printed)
    print("bosun's settings (infra/settings.py; docs/settings.md)\n")
    for name in Settings.model_fields:
        print(f"BOSUN_{name.upper()}")
        print(_wrapped(field_docs(Settings).get(name) or "(no description)"))
        print(f"    value: {_shown(getattr(s, name), name, s)}\n")
    print("events settings (infra/events/config.py): the webhook ingress and the event starter; also read from the\n"
          "JSON file BOSUN_EVENTS_CONFIG names (dicts and lists as JSON)\n")
    for name in type(cfg).model_fields:
        if name == "settings" or name in SHARED:
            continue
        print(env_name(name))
        print(_wrapped(field_docs(type(cfg)).get(name) or "(no description)"))
        value = getattr(cfg, name)
        if isinstance(value, BaseModel):
            for sub_name in type(value).model_fields:
                print(f"    {sub_name}: {_events_value(getattr(value, sub_name))}")
                print(_wrapped(field_docs(type(value)).get(sub_name) or "(no description)", "        "))
            print()
            continue
        print(f"    value: {_events_value(value)}\n")
    return 0


# Subcommands are loaded when used: `bosun --help` or `bosun settings` take 0.3 s instead of 1.2 s, because
# temporalio, tree-sitter and the docker SDK load only for the commands that need them.
PASS_THROUGH = {("sandbox", "exec"): "entry.cli_sandbox:exec_main",
                ("env",): "entry.cli_env:env_main",
                ("search",): "entry.cli_search:search_main",
                ("eval",): "entry.cli_eval:eval_main",
                ("ui",): "entry.ui:main",
                ("cluster",): "entry.cli_cluster:cluster_main"}
"""Commands with their own argument parsing: the rest of the command line goes to them as it is."""
PARSERS = {("sandbox", "exec"): "entry.cli_sandbox:parser", ("env",): "entry.cli_env:parser",
           ("search",): "entry.cli_search:parser", ("eval",): "entry.cli_eval_args:parser", ("ui",): "entry.ui:parser",
           ("cluster",): "entry.cli_cluster:parser"}
"""The parser of each PASS_THROUGH command (its --help; docs/cli.md)."""
COMMANDS = {"up": "entry.stack:up", "down": "entry.stack:down", "status": "entry.stack:status"}
"""Stack commands: called with the settings."""
RUN_COMMANDS = {"run": "entry.cli_run", "model": "entry.cli_run", "runs": "entry.cli_runs",
                "history": "entry.cli_runs", "steer": "entry.cli_runs", "cancel": "entry.cli_runs",
                "approve": "entry.cli_runs", "inspect": "entry.cli_runs"}
"""Temporal commands, by module (entry/cli_run.py: those that take a model spec): called with the arguments and the
settings."""
LOCAL_COMMANDS = ("worker", "settings")
"""Commands main runs itself."""
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
            return _describe(s) if args.describe else _settings(s)
        if args.cmd in RUN_COMMANDS:
            return asyncio.run(_load(f"{RUN_COMMANDS[args.cmd]}:{args.cmd}")(args, s))
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
