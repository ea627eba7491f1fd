"""The web view's values: links only to plain http(s) URLs, triggers from the memo, agents in lanes by time."""

from __future__ import annotations

from infra.runview import AgentView, _diff_files, _lanes, safe_url, trigger_of


def test_only_plain_http_urls_become_links():
    assert safe_url("https://github.com/acme/calc/issues/7") == "https://github.com/acme/calc/issues/7"
    for bad in ("javascript:alert(1)", "data:text/html,<script>", "https://x.org/\"onmouseover=alert(1)",
                "http://a b", "//evil.example/x", "https://x.org/<script>", 42, None):
        assert safe_url(bad) is None, bad


def test_triggers_from_the_memo():
    assert trigger_of(None).kind == "cli" and trigger_of({}).label == "command line"
    gh = trigger_of({"origin": {"source": "github", "repo": "acme/calc", "number": 7}, "event": "github.issues"})
    assert (gh.kind, gh.label, gh.url) == ("github", "GitHub acme/calc#7 (issues)",
                                          "https://github.com/acme/calc/issues/7")
    hostile = trigger_of({"origin": {"source": "github", "repo": "a/b\"><script>", "number": 7,
                                     "url": "javascript:alert(1)"}})
    assert hostile.url is None and hostile.label == "GitHub"
    lin = trigger_of({"origin": {"source": "linear", "issue_identifier": "ENG-42",
                                 "url": "https://linear.app/acme/issue/ENG-42"}})
    assert (lin.label, lin.url) == ("Linear ENG-42", "https://linear.app/acme/issue/ENG-42")


def agent(name: str, start: float, end: float) -> AgentView:
    return AgentView(agent_id=f"t/{name}", name=name, role="fast_edit", status="done", reason="", model="m",
                     start=start, end=end, turns=[], switches=[], cost_usd=0.0, depth=0)


def test_agents_that_overlap_get_separate_lanes():
    agents = [agent("planner", 0, 5), agent("a", 6, 20), agent("b", 6.5, 18), agent("c", 7, 9), agent("dbg", 21, 30)]
    assert _lanes(agents) == 3
    lanes = {a.name: a.lane for a in agents}
    assert lanes["planner"] == lanes["a"] == lanes["dbg"] == 0 and len({lanes["a"], lanes["b"], lanes["c"]}) == 3


def test_the_diff_is_split_by_file_whatever_git_quoted():
    diff = ('diff --git "a/\\377\\376bin" "b/\\377\\376bin"\nnew file mode 100644\n'
            "diff --git a/calc/x.py b/calc/x.py\n+1\n"
            'diff --git "a/d\\303\\251j\\303\\240.py" "b/d\\303\\251j\\303\\240.py"\n+2\n')
    assert [name for name, _ in _diff_files(diff)] == ['"\\377\\376bin"', "calc/x.py", "déjà.py"]
