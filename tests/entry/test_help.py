"""Every command's reference is its --help: a description, the exit codes and one to three examples that parse; the
top-level list names every command main dispatches; a typo gets the choice it meant; `bosun ui --help` prints help,
and `bosun ui` on a taken port says which and what to set."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys

import pytest

from entry import cli, docgen
from infra.cliargs import EXAMPLES, EXIT_CODES, UsageError
from infra.events.config import EventsConfig, TriggerRules, env_name
from infra.fielddocs import field_docs
from infra.settings import Settings
from tests.conftest import BOSUN, ROOT, bosun, free_port

PAGES = docgen.commands()
BY_NAME = {c.name: c for c in PAGES}


def _flat(text: str) -> str:
    """``text`` without any whitespace (argparse wraps lines, and may break a word at a hyphen)."""
    return "".join(text.split())


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What `bosun ARGV --help` prints, in-process (main hands pass-through commands their words, as `bosun` does)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--help"])
    out, err = capsys.readouterr()
    assert exit_.value.code == 0, err
    return out


def _dispatched() -> set[str]:
    return ({prefix[0] for prefix in cli.PASS_THROUGH} | set(cli.COMMANDS) | set(cli.RUN_COMMANDS)
            | set(cli.OBSERVE_COMMANDS) | set(cli.LOCAL_COMMANDS))


def test_every_dispatched_command_is_listed_in_the_help_and_the_invalid_choice_list(tmp_path):
    env = {"BOSUN_DATA_DIR": str(tmp_path)}
    listed = bosun("--help", env=env)
    assert listed.returncode == 0, listed.stderr
    names = set(re.findall(r"^ {4}(\S+)", listed.stdout.split("positional arguments:")[1].split("options:")[0],
                           re.M))
    assert names == _dispatched(), f"listed but not dispatched: {names - _dispatched()}; " \
                                   f"dispatched but not listed: {_dispatched() - names}"
    wrong = bosun("no-such-command", env=env)
    assert wrong.returncode == 2 and "did you mean" not in wrong.stderr
    choices = wrong.stderr.split("(choose from ")[1].rstrip().rstrip(")").split(", ")
    assert set(choices) == _dispatched()


def test_every_pass_through_command_has_its_parser():
    assert set(cli.PARSERS) == set(cli.PASS_THROUGH)


def test_the_pages_cover_every_command_and_subcommand():
    names = set(BY_NAME)
    for name in ("bosun run", "bosun runs", "bosun env", "bosun env build", "bosun env show",
                 "bosun eval swebench", "bosun eval edits", "bosun cluster up", "bosun search files",
                 "bosun sandbox exec", "bosun ui", "bosun settings"):
        assert name in names
    assert len(PAGES) >= 40  # the root and 39 subcommand pages when this was written


@pytest.mark.parametrize("name", list(BY_NAME))
def test_each_page_has_a_description_exit_codes_and_examples(name, capsys):
    page = BY_NAME[name].page
    assert page is not None, f"`{name} --help` has no page: declare it with infra.cliargs.add_command or page="
    assert len(page.text) > 40, f"`{name}`: say what the command does and what it needs"
    assert page.exit_codes and 0 in page.exit_codes and 2 in page.exit_codes, f"`{name}`: exit codes 0 and 2"
    assert 1 <= len(page.examples) <= 3, f"`{name}`: one to three examples"
    out = _help(name.split()[1:], capsys)
    assert out.startswith(f"usage: {name}"), out[:200]
    assert _flat(page.text.split("\n\n")[0]) in _flat(out)
    assert f"\n{EXIT_CODES}\n" in out and f"\n{EXAMPLES}\n" in out
    for code in page.exit_codes:
        assert re.search(rf"^  {code} +\S", out, re.M), f"exit code {code} missing from `{name} --help`"
    for example in page.examples:
        assert f"  {example}\n" in out + "\n"


def _example_argv(example: str) -> list[str]:
    """The words after `bosun` of an example (a pipe's bosun part, without VAR=value assignments)."""
    words = shlex.split(example, comments=True)
    if "|" in words:
        words = next(part for part in " ".join(words).split(" | ") if "bosun " in part).split()
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words.pop(0)
    assert words[:1] == ["bosun"], f"{example!r}: an example is a bosun command line"
    return words[1:]


@pytest.mark.parametrize("example", sorted({e for c in PAGES if c.page for e in c.page.examples}))
def test_every_example_parses(example, capsys):
    argv = _example_argv(example)
    depth = max(n for n in range(len(argv) + 1) if " ".join(["bosun", *argv[:n]]) in BY_NAME)
    parser = BY_NAME[" ".join(["bosun", *argv[:depth]])].parser
    try:
        parser.parse_args(argv[depth:])
    except UsageError as e:
        pytest.fail(f"{example!r}: {e}")
    except SystemExit as e:
        assert e.code == 0, f"{example!r}: {capsys.readouterr().err}"


def test_ui_help_prints_help_and_serves_nothing(tmp_path):
    port = free_port()
    proc = subprocess.run([BOSUN, "ui", "--help"], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL,
                          env={**os.environ, "BOSUN_DATA_DIR": str(tmp_path), "BOSUN_UI_PORT": str(port)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: bosun ui") and EXIT_CODES in proc.stdout
    assert "web view on" not in proc.stderr


def test_ui_on_a_taken_port_says_which_and_what_to_set(tmp_path):
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        proc = subprocess.run([BOSUN, "ui"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                              env={**os.environ, "BOSUN_DATA_DIR": str(tmp_path), "BOSUN_UI_PORT": str(port),
                                   "BOSUN_UI_HOST": "127.0.0.1"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"bosun ui: port {port} on 127.0.0.1 is in use (BOSUN_UI_PORT): stop what uses it "
                                   "(`bosun status` shows whether the stack's web view does) or set BOSUN_UI_PORT "
                                   "to a free port")


def test_ui_refuses_words_it_does_not_take(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["ui", "--port", "9000"])
    assert exit_.value.code == 2 and "unrecognized arguments: --port 9000" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "meant"), [(["rnu"], "run"), (["env", "shwo"], "show")])
def test_a_typo_gets_did_you_mean(argv, meant, tmp_path):
    proc = bosun(*argv, env={"BOSUN_DATA_DIR": str(tmp_path)})
    assert proc.returncode == 2
    assert f"invalid choice: {argv[-1]!r}; did you mean {meant!r}?" in proc.stderr


@pytest.mark.parametrize(("argv", "meant"), [
    (["cluster", "stauts"], "status"), (["sandbox", "exce"], "exec"), (["eval", "swebnech"], "swebench"),
    (["eval", "edist"], "edits"), (["search", "flies"], "files"),
    (["run", "--repo", ".", "x", "--mode", "sol"], "solo"), (["export", "ID", "--format", "jsnol"], "jsonl"),
    (["sandbox", "exec", "--backend", "bwarp", "--", "true"], "bwrap")])
def test_every_parser_suggests_the_choice_meant(argv, meant, capsys):
    try:
        code = cli.main(argv)  # the parsers that report (search, eval) return 2; the others exit 2
    except SystemExit as e:
        code = e.code
    assert code == 2
    assert f"did you mean {meant!r}?" in capsys.readouterr().err


def test_eval_help_lists_every_evaluation(capsys):
    out = _help(["eval"], capsys)
    for what in ("swebench", "run", "sources", "edits"):
        assert re.search(rf"^    {what} +\S", out, re.M), f"{what} missing from `bosun eval --help`"
    assert _help(["eval", "edits"], capsys).startswith("usage: bosun eval edits [-h] --cases CASES")


def test_eval_without_an_evaluation_is_a_usage_error(capsys):
    assert cli.main(["eval"]) == 2
    assert "bosun eval: the following arguments are required: WHAT" in capsys.readouterr().err


def test_run_and_runs_declare_their_new_flags():
    p = cli._parser()
    args = p.parse_args(["run", "--repo", ".", "fix it"])
    assert args.no_branch is False and args.context_window is None
    args = p.parse_args(["run", "--repo", ".", "fix it", "--no-branch", "--context-window", "32768"])
    assert args.no_branch is True and args.context_window == 32768
    args = p.parse_args(["runs"])
    assert (args.json, args.status, args.limit) == (False, None, 20)
    args = p.parse_args(["runs", "--json", "--status", "failed", "--limit", "5"])
    assert (args.json, args.status, args.limit) == (True, "failed", 5)
    assert "runs" in cli.RUN_COMMANDS


def test_settings_describe_says_what_each_setting_means(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("BOSUN_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BOSUN_GITHUB_TOKEN", "gh-s3cret")
    monkeypatch.setenv("BOSUN_NATS_URL", "nats://alice:pw-s3cret@nats.internal:4222")
    monkeypatch.setenv("BOSUN_EVENTS_REPOS", '{"acme/api": "https://bob:repo-s3cret@git.example/api"}')
    assert cli.main(["settings", "--describe"]) == 0
    out = capsys.readouterr().out
    assert "s3cret" not in out
    blocks = {block.split("\n", 1)[0]: block for block in out.split("\n\n")}
    for name in Settings.model_fields:
        assert _flat(field_docs(Settings)[name]) in _flat(blocks[f"BOSUN_{name.upper()}"])
    assert f"value: {tmp_path}" in blocks["BOSUN_DATA_DIR"] and "value: ***" in blocks["BOSUN_GITHUB_TOKEN"]
    assert "value: nats://***@nats.internal:4222" in blocks["BOSUN_NATS_URL"]
    assert 'value: {"acme/api": "https://***@git.example/api"}' in blocks["BOSUN_EVENTS_REPOS"]
    for name in EventsConfig.model_fields:
        if name != "settings":
            assert _flat(field_docs(EventsConfig)[name]) in _flat(blocks[env_name(name)])
    for name in TriggerRules.model_fields:
        assert f"\n    {name}: " in blocks["BOSUN_EVENTS_TRIGGERS"]
    assert out.index("BOSUN_ALERT_WEBHOOK_URL") < out.index("BOSUN_EVENTS_MAX_BODY_BYTES")


def test_plain_settings_prints_name_value_lines_only(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("BOSUN_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BOSUN_OPENAI_API_KEY", "sk-s3cret")
    assert cli.main(["settings"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("=", 1)[0] for line in lines] == [f"BOSUN_{n.upper()}" for n in Settings.model_fields]
    assert f"BOSUN_DATA_DIR={tmp_path}" in lines and "BOSUN_OPENAI_API_KEY=***" in lines


def test_the_top_level_help_stays_light():
    """`bosun --help` loads no heavy module: they load when a command runs."""
    code = ("import sys; from entry import cli; cli._parser().format_help(); "
            "print(sorted(m for m in ('temporalio', 'docker', 'tree_sitter', 'uvicorn', 'nats') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_run_and_the_gateway_start_the_task_workflow_by_its_registered_name():
    from temporalio import workflow

    from infra.temporal import TASK_WORKFLOW
    from workflows.task import TaskWorkflow

    assert TASK_WORKFLOW == workflow._Definition.must_from_class(TaskWorkflow).name


@pytest.mark.parametrize("module", ["entry.cli_runs", "entry.stack", "entry.cli_run"])
def test_a_command_loads_only_what_it_needs(module):
    """`bosun history`, `status`, `steer`... load neither the workflows nor the agents' tools; `bosun run` loads the
    agents' settings but not the workflows or the activities (each module is half a second a command)."""
    code = (f"import sys, {module}; heavy = ['workflows.task', 'activities.agent', 'entry.starter', "
            "'agents.tools.builtin', 'temporalio.contrib.opentelemetry']; "
            "print([m for m in heavy if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_run_starts_its_task_without_temporals_sdk_or_opentelemetry():
    """`bosun run` on the embedded stack starts through Temporal's HTTP API (infra/temporal_http.py) and writes its
    start span by hand: the SDK, OpenTelemetry and the NATS client are most of a second of imports."""
    code = ("import sys, entry.cli_run; heavy = ['temporalio.client', 'temporalio.service', 'opentelemetry.sdk.trace', "
            "'nats.aio.client', 'agents.providers.anthropic', 'agents.context.compaction']; "
            "print([m for m in heavy if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
