"""The built-in tools. Every file and command operation goes through the agent run's sandbox."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agents.tools.pytest_report import parse_pytest_output
from agents.tools.registry import Registry, Tool, ToolContext, ToolOutput
from infra.errors import ToolFailed

READ_LINE_CAP = 2000
READ_CHAR_CAP = 100_000
TEST_ENV = {"PYTHONDONTWRITEBYTECODE": "1"}
PYTEST = ["python3", "-m", "pytest", "-rA", "--tb=short", "-q", "-p", "no:cacheprovider"]


class ReadFileArgs(BaseModel):
    path: str = Field(description="File path, relative to the repository root.")
    start_line: int = Field(1, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to show (inclusive); default: to the end.")


async def read_file(ctx: ToolContext, a: ReadFileArgs) -> ToolOutput:
    res = await ctx.sandbox.request("read", {"path": a.path})
    lines = res["text"].splitlines()
    end = min(a.end_line or len(lines), len(lines), a.start_line + READ_LINE_CAP - 1)
    shown = lines[a.start_line - 1:end]
    out, size = [], 0
    for i, line in enumerate(shown, a.start_line):
        row = f"{i:6d}\t{line}"
        size += len(row) + 1
        if size > READ_CHAR_CAP:
            end = i - 1
            break
        out.append(row)
    text = "\n".join(out)
    if end < len(lines):
        text += (f"\n[showing lines {a.start_line}-{end} of {len(lines)}; "
                 f"call read_file with start_line={end + 1} for more]")
    return ToolOutput(text=text or "(empty file)", summary=f"{a.path}: lines {a.start_line}-{end} of {len(lines)}")


class ListDirArgs(BaseModel):
    path: str = Field(".", description="Directory, relative to the repository root.")


async def list_dir(ctx: ToolContext, a: ListDirArgs) -> ToolOutput:
    res = await ctx.sandbox.request("list", {"path": a.path})
    rows = [f"{e['name']}{'/' if e['type'] == 'dir' else ''}" for e in res["entries"]]
    return ToolOutput(text="\n".join(rows) or "(empty directory)", summary=f"{a.path}: {len(rows)} entries")


class GrepArgs(BaseModel):
    pattern: str = Field(description="Regular expression (ripgrep syntax).")
    path: str = Field(".", description="Directory or file to search.")
    glob: str | None = Field(None, description="Only files matching this glob, e.g. '*.py'.")
    ignore_case: bool = False
    max_results: int = Field(200, ge=1, le=2000)


async def grep(ctx: ToolContext, a: GrepArgs) -> ToolOutput:
    res = await ctx.sandbox.request("grep", a.model_dump())
    rows = [f"{m['path']}:{m['line']}:{m['text']}" for m in res["matches"]]
    text = "\n".join(rows) or "(no matches)"
    if res.get("truncated"):
        text += f"\n[stopped at {a.max_results} matches; narrow the pattern or path]"
    return ToolOutput(text=text, summary=f"{len(rows)} matches for {a.pattern!r}")


class WriteFileArgs(BaseModel):
    path: str = Field(description="File path, relative to the repository root. Parent directories are created.")
    content: str = Field(description="The complete new content of the file.")


async def write_file(ctx: ToolContext, a: WriteFileArgs) -> ToolOutput:
    res = await ctx.sandbox.request("write", {"path": a.path, "text": a.content, "create_dirs": True})
    return ToolOutput(text=f"wrote {a.path} ({res.get('size', len(a.content))} bytes)", summary=f"wrote {a.path}")


class StrReplaceArgs(BaseModel):
    path: str = Field(description="File to edit, relative to the repository root.")
    old_str: str = Field(description="Text to replace; it must match exactly one place in the file.")
    new_str: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every exact occurrence instead of requiring one.")


async def str_replace(ctx: ToolContext, a: StrReplaceArgs) -> ToolOutput:
    from agents.edits import EditRefused, apply_str_replace, check_edit_syntax

    before = (await ctx.sandbox.request("read", {"path": a.path}))["text"]
    try:
        outcome = apply_str_replace(before, a.old_str, a.new_str, replace_all=a.replace_all)
        if outcome.status == "applied":
            check_edit_syntax(a.path, before, outcome.text)
    except EditRefused as e:
        raise ToolFailed(f"edit of {a.path} refused: {e.message}") from None
    if outcome.status == "already_applied":
        return ToolOutput(text=f"{a.path}: {outcome.message}", summary=f"{a.path}: already applied")
    await ctx.sandbox.request("write", {"path": a.path, "text": outcome.text})
    return ToolOutput(text=f"edited {a.path} ({outcome.message})", summary=f"edited {a.path} [{outcome.level}]")


class RunCommandArgs(BaseModel):
    command: str = Field(description="Shell command, run with /bin/sh -c in the repository root, no network.")
    timeout_s: float = Field(120, gt=0, le=3600, description="Seconds before the whole process tree is killed.")


def _format_exec(res) -> str:
    parts = [f"exit code: {res.exit_code if not res.timed_out else 'killed (timeout)'}"]
    if res.stdout:
        parts.append("stdout:\n" + res.stdout)
    if res.stderr:
        parts.append("stderr:\n" + res.stderr)
    return "\n".join(parts)


async def run_command(ctx: ToolContext, a: RunCommandArgs) -> ToolOutput:
    res = await ctx.sandbox.exec(a.command, timeout_s=min(a.timeout_s, ctx.command_timeout_s),
                                 output_cap=ctx.output_cap, env=TEST_ENV)
    state = "timed out" if res.timed_out else f"exit {res.exit_code}"
    return ToolOutput(text=_format_exec(res), summary=f"{a.command[:80]!r}: {state} in {res.duration_s:.1f}s",
                      data={"exit_code": res.exit_code, "timed_out": res.timed_out})


class RunTestsArgs(BaseModel):
    args: list[str] = Field(default_factory=list, description="Extra pytest arguments, e.g. test ids or -k EXPR.")
    timeout_s: float = Field(600, gt=0, le=3600)


async def run_tests(ctx: ToolContext, a: RunTestsArgs) -> ToolOutput:
    res = await ctx.sandbox.exec(PYTEST + a.args, timeout_s=min(a.timeout_s, ctx.command_timeout_s),
                                 output_cap=ctx.output_cap, env=TEST_ENV)
    report = parse_pytest_output(res.stdout + "\n" + res.stderr, None if res.timed_out else res.exit_code)
    head = f"pytest: {report.headline()}"
    if report.failed:
        head += "\nfailed: " + ", ".join(report.failed)
    tail = (res.stdout + ("\n" + res.stderr if res.stderr else ""))[-12_000:]
    return ToolOutput(text=f"{head}\n\n{tail}", summary=head.splitlines()[0],
                      data=report.model_dump(include={"exit_code", "passed", "failed", "summary"}))


class GitDiffArgs(BaseModel):
    staged: bool = False


async def git_diff(ctx: ToolContext, a: GitDiffArgs) -> ToolOutput:
    cmd = ["git", "diff", "--no-color"] + (["--cached"] if a.staged else [])
    res = await ctx.sandbox.exec(cmd, timeout_s=60, output_cap=ctx.output_cap)
    if res.exit_code != 0:
        raise ToolFailed(f"git diff failed: {res.stderr.strip()[:500]}")
    return ToolOutput(text=res.stdout or "(no changes)", summary=f"diff: {res.stdout.count(chr(10))} lines")


class GitStatusArgs(BaseModel):
    pass


async def git_status(ctx: ToolContext, a: GitStatusArgs) -> ToolOutput:
    res = await ctx.sandbox.exec(["git", "status", "--short"], timeout_s=60, output_cap=ctx.output_cap)
    if res.exit_code != 0:
        raise ToolFailed(f"git status failed: {res.stderr.strip()[:500]}")
    return ToolOutput(text=res.stdout or "(clean)", summary=f"{len(res.stdout.splitlines())} changed paths")


BUILTIN_TOOLS = [
    Tool("read_file", "Read a text file with line numbers (optionally a line range).", ReadFileArgs, read_file),
    Tool("list_dir", "List a directory of the repository.", ListDirArgs, list_dir),
    Tool("grep", "Search file contents with a regular expression (ripgrep).", GrepArgs, grep),
    Tool("git_diff", "Show the current uncommitted changes as a unified diff.", GitDiffArgs, git_diff),
    Tool("git_status", "Show changed and untracked files.", GitStatusArgs, git_status),
    Tool("write_file", "Create or overwrite a whole file.", WriteFileArgs, write_file, read_only=False),
    Tool("str_replace", "Replace one exact, unique snippet of a file with new text.", StrReplaceArgs, str_replace,
         read_only=False),
    Tool("run_command", "Run a shell command in the repository (sandboxed, no network).", RunCommandArgs,
         run_command, read_only=False),
    Tool("run_tests", "Run the test suite (pytest) and report passed and failed tests.", RunTestsArgs, run_tests,
         read_only=False),
]


def default_registry() -> Registry:
    return Registry(BUILTIN_TOOLS)
