"""The corpus generator on two small source trees: schema, independent expected results, premises, scoring."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bench.editcases.corpus import (
    FORMATS,
    Change,
    block_starts,
    cascade_target,
    changes,
    generate,
    read_tree,
    text_of,
    uniform_shift_matches,
    write_jsonl,
)
from bench.editcases.eval import Case, evaluate, load_cases, parse_cases

OLD_A = '''"""A module with enough structure for every variant."""

import os


class Store:
    """Keeps values by key."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.values: dict[str, str] = {}

    def get(self, key: str) -> str:
        if key not in self.values:
            raise KeyError(f"no value for '{key}'")
        return self.values[key]

    def put(self, key: str, value: str) -> None:
        if not key:
            raise ValueError("empty key")
        self.values[key] = value

    def path(self, key: str) -> str:
        return os.path.join(self.root, key)


    def check(self, store: "Store | None") -> None:
        if store is None:
            raise ValueError("no store given")


def load(store: Store, names: list[str]) -> dict[str, str]:
    if store is None:
        raise ValueError("no store given")
    result = {}
    for name in names:
        result[name] = store.get(name)
    return result


def save(store: Store, items: dict[str, str]) -> None:
    if store is None:
        raise ValueError("no store given")
    for name, value in items.items():
        store.put(name, value)


def describe(store: Store) -> str:
    lines = ["store at " + store.root]
    for key in sorted(store.values):
        lines.append(f"  {key} = {store.values[key]!r}")
    return "\\n".join(lines)


def twice(store: Store, names: list[str]) -> None:
    if not names:
        raise ValueError("empty key")
    for name in names:
        store.put(name, store.get(name) * 2)


def main() -> None:
    store = Store(os.getcwd())
    save(store, {"a": "1", "b": "2"})
    print(describe(store))
'''

NEW_A = (OLD_A
         .replace('            raise KeyError(f"no value for \'{key}\'")\n',
                  '            raise KeyError(f"no value for \'{key}\' in {self.root}")\n')
         .replace("    result = {}\n    for name in names:\n        result[name] = store.get(name)\n"
                  "    return result\n",
                  "    return {name: store.get(name) for name in names}\n")
         .replace('    lines = ["store at " + store.root]\n',
                  '    lines = ["store at " + store.root]\n    if not store.values:\n'
                  '        return lines[0] + " (empty)"\n')
         .replace("    print(describe(store))\n", "    print(describe(store))\n    print(load(store, [\"a\"]))\n"))

OTHER = '''def unrelated_helper(value):
    """Something from another file."""
    cleaned = value.strip().lower()
    if cleaned.startswith("x"):
        return cleaned[1:]
    return cleaned
'''


def trees() -> list[tuple[str, dict[str, str], dict[str, str]]]:
    return [("demo-1..2", {"pkg/a.py": OLD_A, "pkg/other.py": OTHER}, {"pkg/a.py": NEW_A, "pkg/other.py": OTHER})]


def as_cases(raw: list[dict]) -> list[Case]:
    return parse_cases([json.dumps(c) for c in raw], "generated")


def test_generated_cases_are_valid_and_varied(tmp_path):
    raw = generate(trees())
    cases = as_cases(raw)
    assert len(cases) >= 150
    assert {c.format for c in cases} == set(FORMATS)
    categories = Counter(c.category for c in cases)
    for must in ("exact", "indent_shift", "trailing_ws", "file_trailing_ws", "tabs_file_spaces_edit", "crlf_file",
                 "crlf_edit", "smart_quotes", "edge_blank_extra", "wrong_line_numbers", "elision", "code_fence",
                 "line_numbers", "already_applied", "multi_hunk", "combined", "hallucinated_identifier",
                 "stale_file", "other_file", "one_sided_elision", "ambiguous", "ambiguous_fuzzy",
                 "ambiguous_resolved", "replace_all", "missing_middle_line", "duplicated_line"):
        assert categories[must], f"no {must} case"
    assert any(c.expected is None for c in cases) and any(c.expected is not None for c in cases)
    path = tmp_path / "corpus.jsonl.gz"
    write_jsonl(raw, path)
    assert [c.id for c in load_cases(path)] == [c.id for c in cases]


def test_expected_results_come_from_the_real_versions():
    cases = as_cases(generate(trees()))
    old_lines, new_lines = OLD_A.split("\n")[:-1], NEW_A.split("\n")[:-1]
    for case in cases:
        if case.category == "multi_hunk":
            assert case.expected == NEW_A
        if case.category in ("stale_file",):
            assert case.original == NEW_A and case.expected is None
    # one hunk spliced into the old version, computed here by hand for the first change
    first = changes(old_lines, new_lines)[0]
    spliced = text_of(old_lines[: first.start] + [t for k, t in first.script if k != "-"] + old_lines[first.end:])
    exact = [c for c in cases if c.category == "exact" and c.id.split(":")[2] == "h0"]
    assert exact and all(c.expected == spliced for c in exact)


def test_premise_helpers():
    lines = ["def f():", "    x = 1", "", "class C:", "    def f():", "        x = 1"]
    assert block_starts(lines, ["def f():", "    x = 1"]) == [0]
    assert block_starts(lines, ["def f():", "x = 1"], "strip") == [0, 4]
    assert uniform_shift_matches(lines, ["  def f():", "      x = 1"]) == [0, 4]
    assert cascade_target(lines, ["  def f():", "      x = 1"]) is None, "ambiguous after re-indentation"
    assert cascade_target(lines, ["  class C:", "      def f():"]) == 3
    assert cascade_target(lines, ["class C:", "  def f():"]) is None, "not a uniform shift"
    assert cascade_target(lines, ["", "class C:", ""]) == 3, "blank edge lines are dropped at a later level"
    assert Change(1, [(" ", "a"), ("-", "b"), ("+", "c")]).expected(["z", "a", "b", "y"]) == ["z", "a", "c", "y"]


def test_scores_engine_against_baselines():
    cases = as_cases(generate(trees()))
    bosun = evaluate(cases, "bosun")
    assert bosun.silent_misapply == 0, dict(bosun.failures)
    assert bosun.correct_apply == bosun.should_apply, dict(bosun.failures)
    assert bosun.correct_refusal == bosun.should_refuse, dict(bosun.failures)
    first = evaluate(cases, "first-match")
    assert first.correct_apply < bosun.correct_apply and first.silent_misapply > 0


def test_read_tree(tmp_path: Path):
    root = tmp_path / "demo-1.0"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("x = 1\n")
    (root / "pkg" / "crlf.py").write_bytes(b"x = 1\r\n")
    (root / "pkg" / "noeol.py").write_text("x = 1")
    (root / "pkg" / "data.txt").write_text("text\n")
    (root / "pkg" / "link.py").symlink_to(root / "pkg" / "a.py")
    assert read_tree(tmp_path) == {"demo-1.0/pkg/a.py".split("/", 1)[1]: "x = 1\n"}
