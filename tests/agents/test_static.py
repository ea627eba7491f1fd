from agents.context import build_static_context, estimate_tokens, message_tokens, pinned_instructions
from agents.context.static import PINNED_CLOSE, PINNED_OPEN
from agents.messages import Message, ToolCall


def test_static_context_sections_and_pinned_order():
    ctx = build_static_context(
        os_name="Debian GNU/Linux 12 (sandbox, no network)", branch="bosun/task-1",
        git_status=" M src/a.py\n?? notes.txt\n", repo_map="src/a.py:\n  def main()\n",
        instructions={"CONTRIBUTING.md": "Use conventional commits.", "AGENTS.md": "Run `make test`.",
                      "CLAUDE.md": "", "docs/STYLE.md": "Max line length 100."},
        extra={"Python": "3.11"})
    text = ctx.text
    assert text.index("# Environment") < text.index("# Git status") < text.index("# Repository map")
    assert "- OS: Debian GNU/Linux 12 (sandbox, no network)" in text and "- Branch: bosun/task-1" in text
    assert "- Python: 3.11" in text and " M src/a.py" in text and "def main()" in text
    pinned = ctx.pinned
    assert pinned.startswith(PINNED_OPEN) and pinned.endswith(PINNED_CLOSE) and pinned in text
    assert pinned.index("## AGENTS.md") < pinned.index("## CONTRIBUTING.md") < pinned.index("## docs/STYLE.md")
    assert "## CLAUDE.md" not in pinned  # empty files are not pinned
    assert ctx.tokens == estimate_tokens(text) and ctx.truncated == []


def test_budgets_cut_whole_lines_and_say_so():
    status = "\n".join(f" M src/file_{i}.py" for i in range(1000))
    big_map = "\n".join(f"src/m{i}.py: def f{i}()" for i in range(5000))
    ctx = build_static_context(os_name="Linux", git_status=status, repo_map=big_map,
                               instructions={"AGENTS.md": "rule\n" * 10_000}, status_tokens=100, map_tokens=200,
                               pinned_tokens=300)
    assert ctx.truncated == ["git_status", "repo_map", "pinned:AGENTS.md"]
    assert "[... git status:" in ctx.text and "[... repo map:" in ctx.text and "[... rest of AGENTS.md:" in ctx.text
    assert ctx.tokens < 100 + 200 + 300 + 200


def test_clean_tree_and_no_instructions():
    ctx = build_static_context(os_name="Linux")
    assert "# Git status\n(clean)" in ctx.text and ctx.pinned == "" and "Repository map" not in ctx.text
    assert pinned_instructions({}) == ("", [])


def test_token_heuristic():
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    m = Message(role="assistant", content="x" * 40, tool_calls=[ToolCall(id="1", name="grep",
                                                                          arguments={"pattern": "y" * 40})])
    assert message_tokens(m) == 10 + 4 + 1 + 14 + 4
