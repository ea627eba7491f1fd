import json

import pytest

from agents.plan import Plan, PlanError, normalize_scope, parse_plan, plan_from_data, scopes_outside, topological_waves
from infra.errors import InvalidArguments


def sub(id, deps=(), files=("src/a.py",), **kw):
    return {"id": id, "goal": f"do {id}", "files": list(files), "depends_on": list(deps),
            "acceptance": kw.get("acceptance", {"tests": [f"tests/test_{id}.py::test_it"]})}


def test_waves_group_independent_subtasks_in_plan_order():
    plan = plan_from_data({"subtasks": [sub("api", files=["api.py"]), sub("db", files=["db.py"]),
                                        sub("cli", ["api"], files=["cli.py"]),
                                        sub("docs", ["cli", "db"], files=["README.md"]),
                                        sub("ui", ["api"], files=["ui.py"])],
                           "notes": "n"})
    assert topological_waves(plan) == [["api", "db"], ["cli", "ui"], ["docs"]]
    assert plan.notes == "n" and plan.get("cli").depends_on == ["api"]


def test_parse_from_fenced_json_in_prose():
    text = "Here is my plan.\n```json\n" + json.dumps({"subtasks": [sub("a")]}) + "\n```\nDone."
    assert [s.id for s in parse_plan(text).subtasks] == ["a"]
    bare = "Plan: " + json.dumps({"subtasks": [sub("b")]}) + " -- end"
    assert parse_plan(bare).subtasks[0].id == "b"
    assert parse_plan(json.dumps([sub("c")])).subtasks[0].id == "c"  # a bare list of subtasks
    assert parse_plan(json.dumps({"plan": {"subtasks": [sub("d")]}})).subtasks[0].id == "d"


def test_errors_are_listed_for_the_model():
    data = {"subtasks": [sub("a", files=["/etc/passwd"]), sub("a", acceptance={}),
                         {"id": "bad id!", "goal": "", "files": [], "acceptance": {"tests": ["t"]}, "extra": 1}]}
    with pytest.raises(PlanError) as e:
        plan_from_data(data)
    text = str(e.value)
    assert isinstance(e.value, InvalidArguments)
    assert "subtasks[0] (id 'a').files" in text and "absolute" in text
    assert "subtasks[1] (id 'a').acceptance" in text and "'command' or at least one test id" in text
    assert "subtasks[2] (id 'bad id!').id" in text
    assert "subtasks[2] (id 'bad id!').extra: unknown field" in text
    assert "subtasks[2] (id 'bad id!').files" in text
    assert text.endswith("submit the whole plan again.")
    assert len(e.value.problems) >= 5


@pytest.mark.parametrize("subtasks,problem", [
    ([sub("a"), sub("a")], "subtask id 'a' is used more than once"),
    ([sub("a", ["zz"])], "subtask 'a' depends on 'zz', which is not a subtask id (ids: a)"),
    ([sub("a", ["a"])], "subtask 'a' depends on itself"),
    ([sub("a", ["c"]), sub("b", ["a"]), sub("c", ["b"])], "dependency cycle: a -> c -> b -> a"),
])
def test_consistency(subtasks, problem):
    with pytest.raises(PlanError) as e:
        plan_from_data({"subtasks": subtasks})
    assert any(problem in p for p in e.value.problems), e.value.problems


@pytest.mark.parametrize("text,message", [
    ("I could not make a plan.", "contains no JSON object"),
    ('{"subtasks": [ {"id": "a", }]}', "not valid JSON"),
    ("[1, 2]", "subtasks[0]"),
    ('"just a string"', "must be a JSON object"),
    ('{"subtasks": []}', "subtasks"),
])
def test_unparseable(text, message):
    with pytest.raises(PlanError, match=message.replace("[", r"\[")):
        parse_plan(text)


@pytest.mark.parametrize("scope,norm", [("src/a.py", "src/a.py"), ("./src//b/", "src/b"), ("a/../b.py", "b.py"),
                                        (".", ".")])
def test_scope_normalised(scope, norm):
    assert normalize_scope(scope) == norm


@pytest.mark.parametrize("scope,message", [("", "empty"), ("/abs", "absolute"), ("~/x", "absolute"),
                                           ("C:/x", "absolute"), ("../up", "outside"), ("a/../../up", "outside"),
                                           (".git/config", ".git"), ("a\\b", "backslashes")])
def test_scope_rejected(scope, message):
    with pytest.raises(ValueError, match=message):
        normalize_scope(scope)


def test_overlapping_scopes_in_the_same_wave(tmp_path):
    plan = plan_from_data({"subtasks": [sub("a", files=["src"]), sub("b", files=["src/x.py"]),
                                        sub("c", ["a"], files=["src/x.py"])]})
    assert plan.parallel_overlaps() == [("a", "b", ["src"])]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link").symlink_to("/etc")
    escaping = plan_from_data({"subtasks": [sub("a", files=["src/link/passwd", "src/ok.py"])]})
    assert scopes_outside(escaping, tmp_path) == [
        "subtask 'a': file scope 'src/link/passwd' resolves outside the repository (symlink)"]


def test_schema_has_field_descriptions_for_the_model():
    schema = Plan.model_json_schema()
    subtask = schema["$defs"]["Subtask"]["properties"]
    assert "File scope" in subtask["files"]["description"]
    assert "must be finished" in subtask["depends_on"]["description"]
