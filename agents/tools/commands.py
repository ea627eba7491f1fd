"""Command tools, all run inside the sandbox: run_command, run_tests, check, git_status, git_diff."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from typing import Literal

from pydantic import BaseModel, Field

from agents.edits import language_for, syntax_errors
from agents.tools.registry import Args, ToolContext, ToolOutput
from environments import standins
from environments.results import PART_MARK, TestReport, parse_output, parse_parts
from infra.errors import InvalidArguments, ToolFailed
from infra.names import name_bytes, os_name, shown
from sandbox import bounded
from sandbox.base import EnvironmentInfo

TEST_ENV = {"PYTHONDONTWRITEBYTECODE": "1"}
PYTEST_FLAGS = ["-rfEsxXp", "--tb=short", "-q", "-p", "no:cacheprovider"]
"""What bosun adds to every pytest run: a report line per test (parsed; ``-rfEsxXp`` is ``-rA`` without the
passed tests' output, and old pytests in an environment -- 3.x has no ``A`` -- understand it), short tracebacks,
no cache written."""
PYTEST = ["python3", "-m", "pytest", *PYTEST_FLAGS]
PYTEST_ENV = {**TEST_ENV, "COLUMNS": "240"}
"""A wide terminal, so pytest's short summary keeps the failure messages whole."""
CHECK_MAX_FILES = 300
_FIND_RUFF = ("if [ -x .venv/bin/ruff ]; then echo .venv/bin/ruff; "
              "elif command -v ruff >/dev/null 2>&1; then command -v ruff; fi")


# ---- run_command ------------------------------------------------------------------------------------------------


class RunCommandArgs(Args):
    command: str = Field(description="Bash command, run with /bin/bash -c (not a login shell) in the repository "
                                     "root, no network.")
    timeout_s: float = Field(120, gt=0, le=3600, description="Seconds before the whole process tree is killed.")


class CommandResult(BaseModel):
    exit_code: int | None
    timed_out: bool
    truncated: bool = False
    duration_s: float = 0.0


def _format_exec(res) -> str:
    parts = [f"exit code: {res.exit_code if not res.timed_out else 'killed (timeout)'}"]
    if res.stdout:
        parts.append("stdout:\n" + res.stdout)
    if res.stderr:
        parts.append("stderr:\n" + res.stderr)
    return "\n".join(parts)


async def run_command(ctx: ToolContext, a: RunCommandArgs) -> ToolOutput:
    """The model's command, in bash: models write bash (``[[ ]]``, arrays, ``set -o pipefail``, ``source``), which
    POSIX sh runs differently or not at all. bosun's own command strings (run_tests' runners, checks, the
    evaluation harness's scripts) stay POSIX sh."""
    res = await ctx.sandbox.exec(a.command, timeout_s=min(a.timeout_s, ctx.command_timeout_s),
                                 output_cap=ctx.output_cap, env=TEST_ENV, shell="bash")
    state = "timed out" if res.timed_out else f"exit {res.exit_code}"
    result = CommandResult(exit_code=res.exit_code, timed_out=res.timed_out, truncated=res.truncated,
                           duration_s=res.duration_s)
    return ToolOutput.of(_format_exec(res), result, f"{a.command[:80]!r}: {state} in {res.duration_s:.1f}s")


# ---- run_tests --------------------------------------------------------------------------------------------------


class RunTestsArgs(Args):
    args: list[str] = Field(default_factory=list, description="Extra pytest arguments, e.g. test ids or -k EXPR.")
    timeout_s: float = Field(600, gt=0, le=3600)


class TestRunResult(BaseModel):
    __test__ = False  # not a pytest test class

    exit_code: int | None
    passed: list[str]
    failed: list[str]
    """Failed and errored test ids."""
    messages: dict[str, str]
    """Failure message per failed test id."""
    summary: str
    counts: dict[str, int]
    timed_out: bool


def names_tests(args: list[str]) -> bool:
    """Whether pytest arguments name tests or paths (then the environment's default test paths are left out)."""
    return any(not a.startswith("-") and ("::" in a or "/" in a or a.endswith(".py")) for a in args)


def test_invocation(env: EnvironmentInfo | None, args: list[str]) -> tuple[list[str] | str, bool]:
    """(command, parsed as pytest) for a test run with ``args`` in a sandbox of ``env``: the environment's
    detected (or declared) test command, else pytest. A runner of the project's own (``bin/test``) gets the
    arguments as they are and runs through the shell."""
    if env is None:
        return [*PYTEST, *args], True
    if env.parts:
        return _with_parts(env, args)
    return _main_invocation(env, args)


def _main_invocation(env: EnvironmentInfo, args: list[str]) -> tuple[list[str] | str, bool]:
    if env.test_kind == "pytest":
        return [*env.test_argv, *PYTEST_FLAGS, *args, *([] if names_tests(args) else env.test_paths)], True
    return shlex.join([*env.test_argv, *(["--"] if args and env.test_separator else []), *args]), False


def _with_parts(env: EnvironmentInfo, args: list[str]) -> tuple[str, bool]:
    """A polyglot repository's test run: without arguments, the main ecosystem's tests and then each part's in its
    folder (each part's output after a ``PART_MARK`` line, stderr with stdout: read in order); with test ids all
    under one part's folder, that part's alone (the ids relative to it)."""
    named = [a for a in args if not a.startswith("-")]
    for part in env.parts:
        prefix = f"{part.root}/" if part.root else ""
        if named and prefix and all(a.startswith(prefix) for a in named):
            rest = [a.removeprefix(prefix) for a in args]
            cmd = f"{part.command} {'-- ' if part.test_separator else ''}{shlex.join(rest)}"
            return f"echo {shlex.quote(PART_MARK + part.root)}; cd {shlex.quote(part.root)} && {cmd} 2>&1", False
    main, is_pytest = _main_invocation(env, args)
    line = main if isinstance(main, str) else shlex.join(main)
    if args:
        return line, is_pytest
    script = f"({line}) 2>&1; s=$?"
    for part in env.parts:
        script += (f"; echo {shlex.quote(PART_MARK + part.root)}; (cd {shlex.quote(part.root or '.')} && "
                   f"{part.command}) 2>&1; t=$?; [ $t -eq 0 ] || s=$t")
    return script + "; exit $s", is_pytest


def read_report(env: EnvironmentInfo | None, output: str, exit_code: int | None) -> TestReport:
    """The results of a test run in a sandbox of ``env``, read as its runner writes them (environments/results.py);
    a polyglot repository's parts each by their own runner."""
    if env is not None and env.parts:
        return parse_parts(env.runner, {p.root: p.runner for p in env.parts}, output, exit_code)
    return parse_output(env.runner if env is not None else "", output, exit_code)


async def run_tests(ctx: ToolContext, a: RunTestsArgs) -> ToolOutput:
    env = getattr(ctx.sandbox, "environment", None)
    cmd, is_pytest = test_invocation(env, a.args)
    if env is not None and env.standins:
        cmd = standins.wrap(cmd, env.standins)
    res = await ctx.sandbox.exec(cmd, timeout_s=min(a.timeout_s, ctx.command_timeout_s),
                                 output_cap=ctx.output_cap, env=PYTEST_ENV)
    report = read_report(env, res.stdout + "\n" + res.stderr, None if res.timed_out else res.exit_code)
    head = f"{'pytest' if is_pytest else 'tests'}: {report.headline(is_pytest)}"
    if report.failed:
        head += "\nfailed: " + ", ".join(report.failed)
        for tid in report.failed:
            if tid in report.messages:
                head += f"\n  {tid}: {report.messages[tid][:300]}"
    tail = (res.stdout + ("\n" + res.stderr if res.stderr else ""))[-12_000:]
    result = TestRunResult(exit_code=report.exit_code, passed=report.passed, failed=report.failed,
                           messages=report.messages, summary=report.summary, counts=report.counts,
                           timed_out=res.timed_out)
    return ToolOutput.of(f"{head}\n\n{tail}", result, head.splitlines()[0])


# ---- check ------------------------------------------------------------------------------------------------------


class CheckArgs(Args):
    paths: list[str] = Field(default_factory=list, description=(
        "Files or directories to check; default: the files changed in the working tree (git status)."))
    ruff: bool = Field(True, description="Also run ruff on Python files when it is installed in the sandbox.")


class Problem(BaseModel):
    path: str
    line: int
    column: int = 0
    code: str
    """'syntax' for tree-sitter errors, the ruff rule code otherwise."""
    message: str


class CheckResult(BaseModel):
    files_checked: list[str]
    problems: list[Problem]
    ruff: Literal["ran", "not_installed", "skipped", "failed"]
    not_checked: list[str] = []
    """Files of languages without a syntax checker, past the limit of files, unreadable, or whose parse went past
    the host's bounds (with why)."""


async def _changed_files(ctx: ToolContext) -> list[str]:
    # Not -z: git quotes a name that is not UTF-8 (core.quotePath), and the command's output is text.
    res = await ctx.sandbox.exec(["git", "-c", "core.quotePath=true", "status", "--porcelain=v1",
                                  "--untracked-files=all"], timeout_s=60, output_cap=ctx.output_cap)
    if res.exit_code != 0:
        raise ToolFailed(f"check: no paths given and git status failed ({res.stderr.strip()[:200]}); "
                         "pass the files to check in `paths`")
    out: list[str] = []
    for entry in res.stdout.splitlines():
        if len(entry) < 4 or "D" in entry[:2]:
            continue
        path = porcelain_path(entry[3:], renamed=entry[0] in "RC")
        if path is not None:
            out.append(path)
    return out


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def porcelain_path(rest: str, *, renamed: bool = False) -> str | None:
    """The path of a ``git status --porcelain=v1`` entry (after ``XY ``; a rename's ``ORIG -> PATH``: PATH), in its
    shown form (``infra.names``); None when git's quoting of it is not valid."""
    if renamed:
        first = _QUOTED.match(rest) if rest.startswith('"') else None
        cut = first.end() if first else rest.find(" -> ")
        if cut >= 0 and rest.startswith(" -> ", cut):
            rest = rest[cut + 4:]
    try:
        return shown(name_bytes(rest))
    except ValueError:
        return None


async def _expand(ctx: ToolContext, paths: list[str]) -> list[str]:
    files: list[str] = []
    for path in paths:
        try:
            res = await ctx.sandbox.glob("**/*", path, max_results=5000)
        except ToolFailed as e:
            if "not a directory" in str(e):
                files.append(path)
                continue
            raise
        base = path.rstrip("/")
        files.extend(p for p in res.paths if not p.endswith("/") and p != base)
    return list(dict.fromkeys(files))


async def check(ctx: ToolContext, a: CheckArgs) -> ToolOutput:

    candidates = await _expand(ctx, a.paths) if a.paths else await _changed_files(ctx)
    checked: list[str] = []
    not_checked: list[str] = []
    problems: list[Problem] = []
    for path in candidates:
        if language_for(path) is None:
            if a.paths and path in a.paths:
                not_checked.append(path)
            continue
        if len(checked) >= CHECK_MAX_FILES:
            not_checked.append(path)
            continue
        try:
            text = (await ctx.sandbox.read(path)).text
        except ToolFailed as e:
            if path in a.paths and "is a directory" not in str(e):
                raise
            not_checked.append(f"{path} ({str(e).split(': ', 1)[-1][:80]})")
            continue
        try:
            found = await asyncio.to_thread(syntax_errors, path, text) or []
        except bounded.OverBound as e:
            not_checked.append(f"{path} (parsing it {e}: the host bounds what that may cost)")
            continue
        checked.append(path)
        problems.extend(Problem(path=path, line=line, code="syntax", message=desc) for line, desc in found)
    ruff_state, ruff_note = await _ruff(ctx, [p for p in checked if p.endswith((".py", ".pyi"))], a.ruff, problems)
    problems.sort(key=lambda p: (p.path, p.line, p.column))
    result = CheckResult(files_checked=checked, problems=problems, ruff=ruff_state, not_checked=not_checked)
    rows = [f"{p.path}:{p.line}:{p.column}: {p.code} {p.message}" for p in problems[:200]]
    if len(problems) > 200:
        rows.append(f"[... {len(problems) - 200} more problems ...]")
    head = (f"checked {len(checked)} file(s): {len(problems)} problem(s)" if checked
            else "no files to check (nothing changed, or no supported language)")
    text = "\n".join([head, *rows, ruff_note] if ruff_note else [head, *rows])
    if not_checked:
        text += f"\nnot checked: {', '.join(not_checked[:20])}"
    return ToolOutput.of(text, result, head)


async def _ruff(ctx: ToolContext, py_files: list[str], wanted: bool, problems: list[Problem]
                ) -> tuple[Literal["ran", "not_installed", "skipped", "failed"], str]:
    if not wanted or not py_files:
        return "skipped", ""
    found = await ctx.sandbox.exec(["sh", "-c", _FIND_RUFF], timeout_s=30, output_cap=10_000)
    ruff = found.stdout.strip().splitlines()[0] if found.stdout.strip() else ""
    if not ruff:
        return "not_installed", "ruff: not installed in the sandbox; only syntax was checked"
    res = await ctx.sandbox.exec([ruff, "check", "--no-cache", "--output-format=json", "--exit-zero", "--", *py_files],
                                 timeout_s=min(120.0, ctx.command_timeout_s), output_cap=ctx.output_cap)
    try:
        items = json.loads(res.stdout or "[]")
    except ValueError:
        return "failed", f"ruff failed (exit {res.exit_code}): {(res.stderr or res.stdout).strip()[:300]}"
    for item in items:
        name = str(item.get("filename", ""))
        for prefix in ("/workspace/", str(getattr(ctx.sandbox, "workspace", "")).rstrip("/") + "/"):
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        loc = item.get("location") or {}
        problems.append(Problem(path=name, line=int(loc.get("row") or 0), column=int(loc.get("column") or 0),
                                code=str(item.get("code") or "ruff"), message=str(item.get("message", ""))))
    return "ran", ""


# ---- git --------------------------------------------------------------------------------------------------------


class GitDiffArgs(Args):
    staged: bool = False
    paths: list[str] = Field(default_factory=list, description="Limit the diff to these paths.")
    stat: bool = Field(False, description="Show only a per-file summary (git diff --stat).")


class GitDiffResult(BaseModel):
    lines: int


async def git_diff(ctx: ToolContext, a: GitDiffArgs) -> ToolOutput:
    cmd = ["git", "diff", "--no-color"] + (["--cached"] if a.staged else []) + (["--stat"] if a.stat else [])
    if a.paths:
        try:
            cmd += ["--", *(os_name(p) for p in a.paths)]  # a name shown quoted: the file it stands for
        except ValueError as e:
            raise InvalidArguments(f"paths: {e}") from None
    res = await ctx.sandbox.exec(cmd, timeout_s=60, output_cap=ctx.output_cap)
    if res.exit_code != 0:
        raise ToolFailed(f"git diff failed: {res.stderr.strip()[:500]}")
    n = res.stdout.count("\n")
    return ToolOutput.of(res.stdout or "(no changes)", GitDiffResult(lines=n), f"diff: {n} lines")


class GitStatusArgs(Args):
    pass


class GitStatusResult(BaseModel):
    entries: list[str]


async def git_status(ctx: ToolContext, a: GitStatusArgs) -> ToolOutput:
    res = await ctx.sandbox.exec(["git", "status", "--short"], timeout_s=60, output_cap=ctx.output_cap)
    if res.exit_code != 0:
        raise ToolFailed(f"git status failed: {res.stderr.strip()[:500]}")
    entries = res.stdout.splitlines()
    return ToolOutput.of(res.stdout or "(clean)", GitStatusResult(entries=entries), f"{len(entries)} changed paths")
