"""The corpus generator on two small source trees: schema, independent expected results, premises, scoring."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bench.editcases.corpus import (
    FORMATS,
    SOURCES,
    Change,
    FileChange,
    Source,
    _sdist,
    block_starts,
    cascade_target,
    changes,
    file_changes,
    generate,
    read_tree,
    text_of,
    uniform_shift_matches,
    write_jsonl,
)
from bench.editcases.eval import Case, evaluate, load_cases, parse_cases
from bench.editcases.mistakes import ELISION_MARKERS, _run_changes, looks_like_stub, window_hunks
from bench.editcases.render import ordered_targets, pinned_targets, skeleton_spans

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
                 "ambiguous_resolved", "replace_all", "missing_middle_line", "duplicated_line",
                 "elision_new_only", "indent_mismatch", "blank_line_missing", "blank_line_extra", "anchor_fuzzy",
                 "blank_line_missing_old", "blank_line_extra_old",
                 "multi_hunk_perturbed", "multi_hunk_span"):
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


MAKE_OLD = """import os


class Make:
    def __init__(self, srcdir):
        self.srcdir = srcdir
        self.makecmd = os.environ.get("MAKE", "make")
        self.builddir = os.path.join(srcdir, "_build")
        self.opts = []
        self.verbose = False
        self.done = False

    def build_latexpdf(self):
        if self.run_generic_build("latex") > 0:
            return 1

        if sys.platform == "win32":
            makecmd = os.environ.get("MAKE", "make.bat")
        else:
            makecmd = self.makecmd
        try:
            return subprocess.call([makecmd, "all-pdf"])
        except OSError:
            return 1

    def build_latexpdfja(self):
        if self.run_generic_build("latex") > 0:
            return 1

        if sys.platform == "win32":
            makecmd = os.environ.get("MAKE", "make.bat")
        else:
            makecmd = self.makecmd
        try:
            return subprocess.call([makecmd, "all-pdf"])
        except OSError:
            return 1

    def build_info(self):
        if self.run_generic_build("texinfo") > 0:
            return 1
        try:
            return subprocess.call([self.makecmd, "info"])
        except OSError:
            print("Error: Failed to run: %s" % self.makecmd)
            return 1
        finally:
            self.cleanup()
            self.report()
            self.done = True
            self.log("info")
            self.log("done")
            self.log(self.makecmd)
"""
MAKE_NEW = (MAKE_OLD.replace('        self.makecmd = os.environ.get("MAKE", "make")\n', "")
            .replace('        if sys.platform == "win32":\n            makecmd = os.environ.get("MAKE", "make.bat")\n'
                     "        else:\n            makecmd = self.makecmd\n",
                     '        makecmd = os.environ.get("MAKE", default_make())\n')
            .replace('[self.makecmd, "info"]', '[os.environ.get("MAKE", "make"), "info"]')
            .replace('            self.log(self.makecmd)\n', '            self.log(os.environ.get("MAKE"))\n'))


def test_multi_hunk_cases_from_hunks_unique_only_between_their_neighbours():
    raw = generate([("make-1..2", {"make_mode.py": MAKE_OLD}, {"make_mode.py": MAKE_NEW})])
    multi = [c for c in raw if c["hunks"] > 1]
    categories = Counter(c["category"] for c in multi)
    assert categories["multi_hunk_window"] >= 3 and categories["anchor_passed"] == 1
    window = next(c for c in multi if c["category"] == "multi_hunk_window" and c["format"] == "udiff")
    assert window["expected"] == MAKE_NEW and window["hunks"] == 5
    # as SEARCH/REPLACE blocks, the two copies are pinned by no block right above them (issue 38): no must-apply
    # case; the repeated hunk sent with another one far from both copies must be refused
    assert not [c for c in multi if c["format"] == "search_replace" and c["expected"] is not None]
    unpinned = [c for c in multi if c["category"] == "repeated_block_unpinned"]
    assert len(unpinned) == 2 and all(c["expected"] is None for c in unpinned)
    passed = next(c for c in multi if c["category"] == "anchor_passed")
    assert passed["edit"].count("@@     def build_info(self):") == 2  # the second chunk's scope was passed
    cases = as_cases(raw)
    bosun = evaluate(cases, "bosun")
    assert bosun.silent_misapply == 0 and bosun.correct_apply == bosun.should_apply, dict(bosun.failures)


def test_window_hunks_and_ordered_targets():
    a, b = MAKE_OLD.split("\n")[:-1], MAKE_NEW.split("\n")[:-1]
    raw = changes(a, b)
    same = [h for h in raw if any("default_make" in t for _, t in h.script)]
    assert len(same) == 2 and len(block_starts(a, [t for k, t in same[0].script if k != "+"])) == 2
    hunks = window_hunks(a, raw)
    assert hunks is not None and [h.start for h in hunks] == [h.start for h in raw]
    blocks = [[t for k, t in h.script if k != "+"] for h in hunks]
    firsts = ordered_targets(a, blocks)
    assert firsts is not None and len(firsts) == len(hunks)
    assert ordered_targets(a, [blocks[1], blocks[2]]) is not None  # the order tells the two copies apart
    assert ordered_targets(a, [blocks[1]]) is None  # alone, the copy is ambiguous


def test_issue_38_classes_from_real_changes():
    """Every class of issue 38 on the two small trees; expected results from the real versions, never the engine."""
    raw = generate(trees()) + generate([("make-1..2", {"make_mode.py": MAKE_OLD}, {"make_mode.py": MAKE_NEW})])
    categories = Counter(c["category"] for c in raw)
    for must in ("repeated_block_unpinned", "indent_shift_bare", "elision_marker_styles", "blank_line_omitted",
                 "already_applied_elision", "already_applied"):
        assert categories[must], f"no {must} case"
    for case in raw:
        if case["category"] in ("repeated_block_unpinned", "indent_mismatch_bare", "trailing_ws_two_places",
                                "elision_marker_styles", "blank_line_omitted_ambiguous"):
            assert case["expected"] is None
        if case["category"].startswith("already_applied"):
            assert case["expected"] == case["original"]
    bosun = evaluate(as_cases(raw), "bosun")
    assert bosun.silent_misapply == 0 and bosun.correct_refusal == bosun.should_refuse, dict(bosun.failures)
    assert bosun.correct_apply == bosun.should_apply, dict(bosun.failures)


def test_pinned_targets_take_a_repeated_block_only_right_below_the_one_before():
    a, b = MAKE_OLD.split("\n")[:-1], MAKE_NEW.split("\n")[:-1]
    raw = changes(a, b)
    same = next(h for h in raw if any("default_make" in t for _, t in h.script))
    block = [t for k, t in same.script if k != "+"]
    first = next(i for i, t in enumerate(a) if t.strip() == "def build_latexpdf(self):")
    above = a[first - 1 : block_starts(a, block)[0]]  # from the blank line before the method up to the block
    assert pinned_targets(a, [above, block]) == [first, block_starts(a, block)[0]]
    assert pinned_targets(a, [block]) is None  # nothing pins it down
    assert pinned_targets(a, [a[1:3], block]) is None  # the block above ends lines before it


def test_blank_run_premises():
    lines = ["def f():", "    x = 1", "", "", "    return x", "def g():", "    x = 1", "    return x"]
    assert skeleton_spans(lines, ["    x = 1", "    return x"]) == [(1, 5), (6, 8)]
    assert skeleton_spans(lines, ["def f():", "    x = 1", "", "    return x"]) == [(0, 5)]
    assert cascade_target(lines, ["def f():", "    x = 1", "    return x"]) is None
    assert cascade_target(lines, ["def f():", "    x = 1", "    return x"], blank_runs=True) == 0


def test_old_side_blank_cases_skip_runs_whose_count_the_change_changes():
    # dropping a kept blank line of a run the change shrinks gives the texts of a both-omitted case: not made
    script = [(" ", "import x"), (" ", ""), ("-", ""), ("+", "import y"), (" ", "def f():")]
    assert _run_changes(script, 1)
    kept = [(" ", "import x"), (" ", ""), (" ", ""), ("+", "import y"), (" ", "def f():")]
    assert not _run_changes(kept, 1) and not _run_changes(kept, 2)


def test_stub_premise_and_markers():
    assert "..." in ELISION_MARKERS and "# ... existing code ..." in ELISION_MARKERS
    assert looks_like_stub(["def f(self):", "    ..."], 1)
    assert not looks_like_stub(["def f(self):", "    ...", "    return 1"], 1)
    assert not looks_like_stub(["x = 1", "..."], 1)


def test_sources_limit_files_and_find_sdists(tmp_path):
    old = {f"m{i}.py": f"x = {i}\n" for i in range(10)}
    new = {f"m{i}.py": f"x = {i + 1}\n" for i in range(10)}
    assert len(file_changes("p", old, new)) == 10
    picked = file_changes("p", old, new, max_files=4)
    assert [fc.path for fc in picked] == ["m0.py", "m2.py", "m5.py", "m7.py"]
    assert all(isinstance(fc, FileChange) for fc in picked)
    assert SOURCES["releases"].max_files is None and SOURCES["projects"].max_lines > SOURCES["releases"].max_lines
    assert {p for p, _, _ in SOURCES["projects"].packages} == {
        "requests", "flask", "seaborn", "xarray", "pylint", "pytest", "astropy", "sphinx", "sympy"}
    # the held-out corpus shares no project with the two the engine is tuned on
    tuned = {p for name in ("releases", "projects") for p, _, _ in SOURCES[name].packages}
    assert not tuned & {p for p, _, _ in SOURCES["heldout"].packages}
    assert Source(()).max_hunks == SOURCES["releases"].max_hunks
    for name in ("Flask-2.2.5.tar.gz", "sympy-1.12.tar.gz", "zope_interface-6.0.zip"):
        (tmp_path / name).write_bytes(b"")
    assert _sdist(tmp_path, "flask", "2.2.5").name == "Flask-2.2.5.tar.gz"
    assert _sdist(tmp_path, "sympy", "1.12").name == "sympy-1.12.tar.gz"
    assert _sdist(tmp_path, "zope.interface", "6.0").name == "zope_interface-6.0.zip"
    assert _sdist(tmp_path, "sympy", "1.12.1") is None


def test_no_indentation_style_case_for_a_file_without_indented_lines():
    # pluggy 1.3.0 -> 1.4.0 _version.py: no indented line, so the file does not say whether it indents with tabs
    old = ("# file generated by setuptools_scm\n# don't change, don't track in version control\n"
           "__version__ = version = '1.3.0'\n__version_tuple__ = version_tuple = (1, 3, 0)\n")
    new = old.replace("'1.3.0'", "'1.4.0'").replace("(1, 3, 0)", "(1, 4, 0)").replace(
        "__version__ =", "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from typing import Tuple\n\n__version__ =")
    raw = generate([("pluggy-1.3.0..1.4.0", {"_version.py": old}, {"_version.py": new})])
    assert raw and not [c for c in raw if c["category"].startswith("tabs_") and "unindented_old" in c["category"]]
