"""The built-in tools and the tool sets per model family. Every file and command operation goes through the agent
run's sandbox (code search alone reads the workspace from the host, safely: see ``hostview``)."""

from __future__ import annotations

from typing import Literal

from agents.tools.code import (
    FindSymbolArgs,
    FindSymbolResult,
    RepoMapArgs,
    RepoMapResult,
    SearchCodeArgs,
    SearchCodeResult,
    find_symbol,
    repo_map,
    search_code,
)
from agents.tools.commands import (
    PYTEST,
    TEST_ENV,
    CheckArgs,
    CheckResult,
    CommandResult,
    GitDiffArgs,
    GitDiffResult,
    GitStatusArgs,
    GitStatusResult,
    RunCommandArgs,
    RunTestsArgs,
    TestRunResult,
    check,
    git_diff,
    git_status,
    run_command,
    run_tests,
)
from agents.tools.edit import (
    ApplyPatchArgs,
    ApplyPatchResult,
    EditResult,
    StrReplaceArgs,
    apply_patch,
    patch_write_key,
    str_replace,
)
from agents.tools.escalation import ESCALATION_TOOL
from agents.tools.files import (
    READ_CHAR_CAP,
    READ_LINE_CAP,
    GlobArgs,
    GrepArgs,
    ListDirArgs,
    ReadFileArgs,
    ReadFileResult,
    ReadOutputArgs,
    ReadOutputResult,
    WriteFileArgs,
    WriteResult,
    glob,
    grep,
    list_dir,
    read_file,
    read_output,
    write_file,
)
from agents.tools.registry import Registry, Tool
from agents.tools.subagents import SPAWN_TOOL
from agents.tools.todo import TodoArgs, TodoResult, todo
from sandbox.base import GlobResult, GrepResult
from sandbox.base import Listing as ListDirResult

__all__ = ["BUILTIN_TOOLS", "PYTEST", "READ_CHAR_CAP", "READ_LINE_CAP", "TEST_ENV", "EditShape", "default_registry",
           "shape_for_model", "tools_for_shape"]

EditShape = Literal["apply_patch", "str_replace"]


def _todo_key(arguments: dict) -> str:
    return ":todo"  # serializes checklist updates with each other, never with file writes


BUILTIN_TOOLS = [
    Tool("read_file", "Read a text file with line numbers (optionally a line range).", ReadFileArgs, read_file,
         result=ReadFileResult),
    Tool("read_output", "Read the full text of an earlier tool output that was replaced by a summary to save context "
         "(the summary names its sha256 ref), optionally a line range.", ReadOutputArgs, read_output,
         result=ReadOutputResult),
    Tool("list_dir", "List a directory of the repository ('/' marks directories, '@' symlinks).", ListDirArgs,
         list_dir, result=ListDirResult),
    Tool("glob", "Find files by name pattern ('**/*.py').", GlobArgs, glob, result=GlobResult),
    Tool("grep", "Search file contents with a regular expression (ripgrep).", GrepArgs, grep, result=GrepResult),
    Tool("search_code", "Rank the repository's files for a task, error message or identifiers (BM25, symbols, "
         "paths and stack frames); shows the best-matching lines.", SearchCodeArgs, search_code,
         result=SearchCodeResult),
    Tool("find_symbol", "Find where a function, class or method is defined and where it is used (tree-sitter).",
         FindSymbolArgs, find_symbol, result=FindSymbolResult),
    Tool("repo_map", "Outline of the repository: the most relevant files and their definitions, within a token "
         "budget.", RepoMapArgs, repo_map, result=RepoMapResult),
    Tool("git_diff", "Show the current uncommitted changes as a unified diff.", GitDiffArgs, git_diff,
         result=GitDiffResult),
    Tool("git_status", "Show changed and untracked files.", GitStatusArgs, git_status, result=GitStatusResult),
    Tool("check", "Check files for syntax errors (tree-sitter, many languages) and lint them with ruff (Python, "
         "when installed). Default: the changed files.", CheckArgs, check, result=CheckResult),
    Tool("todo", "Keep your own checklist for this task: set the whole list, add items, update their status.",
         TodoArgs, todo, read_only=False, result=TodoResult, key=_todo_key),
    Tool("write_file", "Create or overwrite a whole file.", WriteFileArgs, write_file, read_only=False,
         result=WriteResult),
    Tool("str_replace", "Replace one exact, unique snippet of a file with new text.", StrReplaceArgs, str_replace,
         read_only=False, result=EditResult),
    Tool("apply_patch", "Edit files with a patch in the '*** Begin Patch' format: add, delete, update and move files; "
         "all operations apply or none.", ApplyPatchArgs, apply_patch, read_only=False, result=ApplyPatchResult,
         key=patch_write_key),
    Tool("run_command", "Run a bash command in the repository (bash -c, sandboxed, no network).", RunCommandArgs,
         run_command, read_only=False, result=CommandResult),
    Tool("run_tests", "Run the test suite (pytest) and report passed and failed tests with failure messages.",
         RunTestsArgs, run_tests, read_only=False, result=TestRunResult),
]

_LOOK = ["read_file", "read_output", "list_dir", "glob", "grep", "search_code", "find_symbol", "repo_map",
         "git_status", "git_diff", "check", "todo"]
_RUN = ["run_command", "run_tests"]
TOOL_SETS: dict[str, list[str]] = {
    "apply_patch": [*_LOOK, "apply_patch", *_RUN],
    "str_replace": [*_LOOK, "str_replace", "write_file", *_RUN],
}


def tools_for_shape(shape: EditShape) -> list[str]:
    """Tool names for a model family's edit shape: OpenAI GPT/Codex -> apply_patch, Anthropic Claude -> str_replace."""
    if shape not in TOOL_SETS:
        raise ValueError(f"unknown edit shape {shape!r}; expected one of {', '.join(TOOL_SETS)}")
    return list(TOOL_SETS[shape])


def shape_for_model(model: str) -> EditShape:
    """The edit shape for a model spec such as ``openai:gpt-5-codex`` or ``anthropic:claude-sonnet-4-5``.

    OpenAI GPT, o-series and Codex models get apply_patch (what they are trained on); everything else, Anthropic
    Claude first, gets str_replace.
    """
    provider, _, name = model.partition(":")
    name = (name or provider).lower()
    if provider.lower() in ("openai", "azure", "codex") or name.startswith(("gpt", "o1", "o3", "o4", "codex")) \
            or "codex" in name:
        return "apply_patch"
    return "str_replace"


def default_registry() -> Registry:
    return Registry([*BUILTIN_TOOLS, ESCALATION_TOOL, SPAWN_TOOL])
