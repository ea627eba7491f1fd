"""Static context: the facts an agent gets up front, built from values the caller gathered (no I/O here).

``build_static_context(...)`` renders the environment (OS, working directory, branch), ``git status``, a repo
map (e.g. from ``agents.search``) and the pinned instructions of the repository (AGENTS.md, CLAUDE.md,
CONTRIBUTING.md and the like, passed in as ``{name: content}``), each section held to a token budget. The
pinned block is also returned on its own (``StaticContext.pinned``) so compaction can re-inject it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agents.context.tokens import CHARS_PER_TOKEN, estimate_tokens
from sandbox.base import EnvironmentInfo

PINNED_FILES = ("AGENTS.md", "CLAUDE.md", "CONTRIBUTING.md", ".bosun/instructions.md",
                ".github/copilot-instructions.md", ".cursorrules")
"""The repository's instruction files pinned into every agent's context (re-injected after compaction), in this
order (others passed in follow, sorted by name)."""
PINNED_OPEN = "<pinned-instructions>"
PINNED_CLOSE = "</pinned-instructions>"


class StaticContext(BaseModel):
    """The rendered static context."""

    text: str
    """All sections, ready to append to the system prompt or to send as the first user message."""
    pinned: str = ""
    """The pinned-instructions block alone (empty when there are none), for ``compact(pinned=...)``."""
    tokens: int = 0
    """Estimated tokens of ``text``."""
    truncated: list[str] = Field(default_factory=list)
    """Sections cut to their budget (the agent can read the rest with its tools)."""


def clip(text: str, max_tokens: int, what: str) -> tuple[str, bool]:
    """``text`` held to ``max_tokens`` (whole lines), with a note saying what was cut."""
    text = text.strip("\n")
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text, False
    kept: list[str] = []
    size = 0
    for line in text.splitlines():
        if size + len(line) + 1 > limit:
            break
        kept.append(line)
        size += len(line) + 1
    rest = text.count("\n") + 1 - len(kept)
    return "\n".join(kept) + f"\n[... {what}: {rest} more lines not shown]", True


def pinned_instructions(files: dict[str, str], *, max_tokens: int = 4000) -> tuple[str, list[str]]:
    """The pinned block from instruction files' contents, and the names of those cut to fit."""
    order = [n for n in PINNED_FILES if n in files] + sorted(n for n in files if n not in PINNED_FILES)
    present = [n for n in order if files[n].strip()]
    if not present:
        return "", []
    share = max(200, max_tokens // len(present))
    parts, cut = [], []
    for name in present:
        body, was_cut = clip(files[name], share, f"rest of {name}")
        if was_cut:
            cut.append(name)
        parts.append(f"## {name}\n{body}")
    block = f"{PINNED_OPEN}\nInstructions from the repository's own files; follow them.\n\n" + "\n\n".join(parts) \
        + f"\n{PINNED_CLOSE}"
    return block, cut


def environment_facts(env: EnvironmentInfo | None) -> dict[str, str]:
    """The environment's facts for the static context: which interpreter, which test command (what run_tests
    runs). None (the plain sandbox image): the image's python3 and pytest."""
    if env is None:
        return {"Python": "the sandbox image's python3 (Debian), with pytest; the project's dependencies are not "
                          "installed", "Tests": "python3 -m pytest (run_tests)"}
    return {"Python": f"{env.python} in a virtualenv ({env.venv}, first on PATH) with the project installed "
                      "editable and its test dependencies; no network, so nothing more can be installed",
            "Tests": f"{env.test_command} (run_tests runs it; pass test ids to run some)"}


def build_static_context(*, os_name: str, workdir: str = "/workspace", branch: str | None = None,
                         git_status: str = "", repo_map: str = "", instructions: dict[str, str] | None = None,
                         extra: dict[str, str] | None = None, status_tokens: int = 500, map_tokens: int = 1024,
                         pinned_tokens: int = 4000) -> StaticContext:
    """Render the static context from facts gathered by the caller.

    ``os_name``: e.g. "Debian GNU/Linux 12 (sandbox, no network)". ``git_status``: ``git status --short`` text.
    ``repo_map``: a ranked map of the repository. ``instructions``: instruction files' contents by name.
    ``extra``: more facts as ``{label: value}`` (e.g. "Python": "3.11"). Budgets are in estimated tokens.
    """
    truncated: list[str] = []
    env = [f"- OS: {os_name}", f"- Repository root (your working directory): {workdir}"]
    if branch:
        env.append(f"- Branch: {branch}")
    env += [f"- {k}: {v}" for k, v in (extra or {}).items()]
    sections = ["# Environment\n" + "\n".join(env)]
    status, was_cut = clip(git_status, status_tokens, "git status")
    if was_cut:
        truncated.append("git_status")
    sections.append("# Git status\n" + (status or "(clean)"))
    if repo_map.strip():
        body, was_cut = clip(repo_map, map_tokens, "repo map")
        if was_cut:
            truncated.append("repo_map")
        sections.append("# Repository map\n" + body)
    pinned, cut_files = pinned_instructions(instructions or {}, max_tokens=pinned_tokens)
    truncated += [f"pinned:{n}" for n in cut_files]
    if pinned:
        sections.append(pinned)
    text = "\n\n".join(sections)
    return StaticContext(text=text, pinned=pinned, tokens=estimate_tokens(text), truncated=truncated)
