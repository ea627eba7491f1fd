"""apply_str_replace: every matching level, every refusal rule, byte preservation."""

from __future__ import annotations

import pytest

from agents.edits import EditRefused, apply_str_replace

PY = """\
import os


def alpha(x):
    total = 0
    for i in range(x):
        total += i
    return total


def beta(y):
    return y * 2
"""


def refused(original: str, old: str, new: str, **kw) -> EditRefused:
    with pytest.raises(EditRefused) as info:
        apply_str_replace(original, old, new, **kw)
    return info.value


# ---------------------------------------------------------------- exact


def test_exact_unique_substring():
    out = apply_str_replace(PY, "return y * 2", "return y * 3")
    assert out.status == "applied" and out.level == "exact"
    assert out.text == PY.replace("return y * 2", "return y * 3")
    assert "line 12" in out.message


def test_exact_partial_line_and_deletion():
    out = apply_str_replace(PY, "    return y * 2\n", "")
    assert out.text == PY.replace("    return y * 2\n", "")


def test_exact_ambiguous_is_refused_with_lines():
    err = refused(PY, "total", "sum_")
    assert err.reason == "ambiguous" and err.level == "exact"
    assert err.lines == [5, 7, 8]
    assert "replace_all" in err.message


def test_overlapping_occurrences_count_as_ambiguous():
    err = refused("aaa\n", "aa", "b")
    assert err.reason == "ambiguous"


def test_replace_all_replaces_every_exact_match():
    out = apply_str_replace(PY, "total", "acc", replace_all=True)
    assert out.text == PY.replace("total", "acc")
    assert "3 exact occurrence" in out.message


def test_replace_all_never_uses_fuzzy_levels():
    text = "x = 1   \ny = 2\n"
    err = refused(text, "x = 1\ny = 2\n", "z\n", replace_all=True)
    assert err.reason == "no_match" and "replace_all only uses exact matching" in err.message


# ---------------------------------------------------------------- trailing whitespace


def test_trailing_whitespace_level():
    text = "a = 1   \nb = 2\t\nc = 3\n"
    out = apply_str_replace(text, "a = 1\nb = 2\n", "a = 10\nb = 20\n")
    assert out.level == "trailing_ws"
    assert out.text == "a = 10\nb = 20\nc = 3\n"


def test_trailing_whitespace_in_snippet():
    text = "a = 1\nb = 2\n"
    out = apply_str_replace(text, "a = 1  \nb = 2  \n", "a = 1\nb = 3\n")
    assert out.level == "trailing_ws" and out.text == "a = 1\nb = 3\n"


def test_trailing_ws_ambiguity_refused():
    text = "a = 1 \nb\na = 1\t\nb\n"
    err = refused(text, "a = 1\nb\n", "c\n")
    assert err.reason == "ambiguous" and err.level == "trailing_ws"
    assert err.lines == [1, 3]


# ---------------------------------------------------------------- indentation offset


def test_indent_offset_snippet_dedented():
    old = "total = 0\nfor i in range(x):\n    total += i\n"
    new = "total = 1\nfor i in range(x):\n    total *= i\n    print(i)\n"
    out = apply_str_replace(PY, old, new)
    assert out.level == "indent_offset"
    assert "    total = 1\n    for i in range(x):\n        total *= i\n        print(i)\n" in out.text
    assert out.text.count("\n") == PY.count("\n") + 1


def test_indent_offset_snippet_over_indented():
    text = "def f():\n    a = 1\n    b = 2\n"
    out = apply_str_replace(text, "        a = 1\n        b = 2\n", "        a = 1\n        if a:\n            b = 3\n")
    assert out.level == "indent_offset"
    assert out.text == "def f():\n    a = 1\n    if a:\n        b = 3\n"


def test_indent_offset_keeps_tabs():
    text = "class A:\n\tdef f(self):\n\t\tx = 1\n\t\ty = 2\n"
    out = apply_str_replace(text, "x = 1\ny = 2\n", "x = 1\nif x:\n    y = 3\n")
    assert out.level == "indent_offset"
    assert out.text == "class A:\n\tdef f(self):\n\t\tx = 1\n\t\tif x:\n\t\t\ty = 3\n"
    assert "    " not in out.text


def test_spaces_snippet_matches_tab_file():
    text = "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n"
    old = "    if x {\n        return 1\n    }\n"
    new = "    if x {\n        return 2\n    }\n"
    out = apply_str_replace(text, old, new)
    assert out.level == "indent_offset"
    assert out.text == "func f() {\n\tif x {\n\t\treturn 2\n\t}\n}\n"


def test_non_uniform_indentation_does_not_match():
    text = "def f():\n    a = 1\n        b = 2\n"
    err = refused(text, "a = 1\nb = 2\n", "c\n")
    assert err.reason == "no_match"
    assert "indent_offset 0" in err.message


def test_indent_offset_ambiguity_refused():
    text = "def f():\n    x = 1\n    y = 2\n\ndef g():\n        x = 1\n        y = 2\n"
    err = refused(text, "x = 1\ny = 2\n", "z = 3\n")
    assert err.reason == "ambiguous" and err.level == "indent_offset"
    assert err.lines == [2, 6]


def test_indent_conflict_refused():
    text = "def f():\n        a = 1\n        b = 2\n"
    err = refused(text, "            a = 1\n            b = 2\n", "a = 1\n")
    assert err.reason == "indent_conflict"


def test_stricter_level_ambiguity_is_never_resolved_by_a_looser_level():
    # Exact substring finds two places (one inside a longer line); the whole-line levels would find one.
    text = "xfoo = 1\nfoo = 1\n"
    err = refused(text, "foo = 1", "bar = 1")
    assert err.reason == "ambiguous" and err.level == "exact"
    # trailing_ws finds two; edge_blank_lines (looser) is never consulted.
    text = "a\n\nfoo  \nbar\nfoo\t\nbar\n"
    err = refused(text, "foo\nbar\n", "baz\n")
    assert err.reason == "ambiguous" and err.level == "trailing_ws"


# ---------------------------------------------------------------- edge blank lines


def test_edge_blank_lines_extra_in_snippet():
    text = "a = 1\nb = 2\nc = 3\n"
    out = apply_str_replace(text, "\n\nb = 2\n\n", "\n\nb = 20\n\n")
    assert out.level == "edge_blank_lines"
    assert out.text == "a = 1\nb = 20\nc = 3\n"


def test_edge_blank_lines_missing_in_snippet_matches_directly():
    text = "a = 1\n\nb = 2\n\nc = 3\n"
    out = apply_str_replace(text, "b = 2", "b = 3")
    assert out.text == "a = 1\n\nb = 3\n\nc = 3\n"


def test_edge_blank_lines_ambiguity_refused():
    text = "x\nfoo\ny\nfoo\n"
    err = refused(text, "\n\nfoo\n", "bar\n")
    assert err.reason == "ambiguous" and err.level == "edge_blank_lines"


# ---------------------------------------------------------------- unicode


def test_unicode_level_writes_file_characters():
    text = "msg = \u201chello\u201d  # it\u2019s \u2013 fine\nother = 1\n"
    old = 'msg = "hello"  # it\'s - fine\n'
    new = 'msg = "hello world"  # it\'s - fine\n'
    out = apply_str_replace(text, old, new)
    assert out.level == "unicode"
    assert out.text == "msg = \u201chello world\u201d  # it\u2019s \u2013 fine\nother = 1\n"


def test_unicode_nbsp():
    text = "a\u00a0=\u00a01\nb = 2\n"
    out = apply_str_replace(text, "a = 1\nb = 2\n", "a = 1\nb = 3\n")
    assert out.level == "unicode"
    assert out.text == "a\u00a0=\u00a01\nb = 3\n"


def test_unicode_ambiguity_refused():
    text = "s = \u201cx\u201d\ns = \u2018x\u2019\n".replace("\u2018x\u2019", "\u201cx\u201d")
    err = refused(text, 's = "x"\n', 's = "y"\n')
    assert err.reason == "ambiguous" and err.level == "unicode"


# ---------------------------------------------------------------- elision


ELIDED_FILE = """\
def handler(event):
    validate(event)
    log("start")
    step_one()
    step_two()
    log("end")
    return ok()
"""


def test_elision_keeps_elided_lines():
    old = "def handler(event):\n    validate(event)\n    ...\n    return ok()\n"
    new = "def handler(event):\n    validate(event, strict=True)\n    ...\n    return ok(event)\n"
    out = apply_str_replace(ELIDED_FILE, old, new)
    assert out.level == "elision"
    assert out.text == ELIDED_FILE.replace("validate(event)", "validate(event, strict=True)").replace(
        "return ok()", "return ok(event)"
    )


def test_elision_comment_marker():
    old = 'def handler(event):\n    # ... existing code ...\n    log("end")\n'
    new = 'def handler(event):\n    # ... existing code ...\n    log("done")\n'
    out = apply_str_replace(ELIDED_FILE, old, new)
    assert out.level == "elision" and 'log("done")' in out.text and "step_two()" in out.text


def test_elision_structure_mismatch_refused():
    old = "def handler(event):\n    ...\n    return ok()\n"
    err = refused(ELIDED_FILE, old, "def handler(event):\n    return ok()\n")
    assert err.reason == "elision_mismatch"


def test_elision_piece_must_be_unique():
    text = "a()\nx = 1\nb()\nx = 1\nc()\n"
    err = refused(text, "a()\n...\nx = 1\n", "a2()\n...\nx = 2\n")
    assert err.reason == "ambiguous" and err.level == "elision"


def test_elision_pieces_must_be_in_order():
    err = refused(ELIDED_FILE, "    return ok()\n...\ndef handler(event):\n", "    return 1\n...\ndef h(event):\n")
    assert err.reason == "no_match" and "order" in err.message


def test_elision_cannot_insert_into_empty_piece():
    err = refused(ELIDED_FILE, "...\n    return ok()\n", "new_line()\n...\n    return ok()\n")
    assert err.reason == "elision_mismatch"


# ---------------------------------------------------------------- normalisation


def test_crlf_file_lf_snippet_keeps_crlf():
    text = "a = 1\r\nb = 2\r\nc = 3\r\n"
    out = apply_str_replace(text, "a = 1\nb = 2\n", "a = 1\nb = 20\nb2 = 21\n")
    assert out.text == "a = 1\r\nb = 20\r\nb2 = 21\r\nc = 3\r\n"


def test_crlf_snippet_on_lf_file():
    out = apply_str_replace("a\nb\n", "a\r\nb\r\n", "x\r\ny\r\n")
    assert out.text == "x\ny\n"


def test_mixed_line_endings_only_change_inside_region():
    text = "a\r\nb\nc\r\nd\n"
    out = apply_str_replace(text, "c\nd", "C\nD\nE")
    assert out.text == "a\r\nb\nC\r\nD\r\nE\n"
    out = apply_str_replace(text, "a\n", "A\n")
    assert out.text == "A\r\nb\nc\r\nd\n"


def test_bom_is_kept():
    text = "\ufeffa = 1\nb = 2\n"
    out = apply_str_replace(text, "a = 1", "a = 3")
    assert out.text == "\ufeffa = 3\nb = 2\n"
    out = apply_str_replace(text, "\ufeffa = 1", "a = 4")
    assert out.text == "\ufeffa = 4\nb = 2\n"


def test_final_newline_state_is_kept():
    text = "a\nb"  # no final newline
    out = apply_str_replace(text, "a\nb\n", "x\ny\n")
    assert out.text == "x\ny"
    text = "a\nb\n"
    out = apply_str_replace(text, "b", "c")
    assert out.text == "a\nc\n"


def test_tabs_are_never_expanded_elsewhere():
    text = "\tkeep\there\nx = 1\n\tother\t\n"
    out = apply_str_replace(text, "x = 1", "x = 2")
    assert out.text == "\tkeep\there\nx = 2\n\tother\t\n"


def test_code_fence_is_stripped():
    old = "```python\ndef beta(y):\n    return y * 2\n```\n"
    out = apply_str_replace(PY, old, "```python\ndef beta(y):\n    return y\n```")
    assert "    return y\n" in out.text and "```" not in out.text
    assert "code fence" in out.message


def test_fence_kept_when_file_contains_it():
    text = "# Doc\n```python\nprint(1)\n```\n"
    out = apply_str_replace(text, "```python\nprint(1)\n```", "```python\nprint(2)\n```")
    assert out.text == "# Doc\n```python\nprint(2)\n```\n"


@pytest.mark.parametrize(
    "old,new",
    [
        ("    11\tdef beta(y):\n    12\t    return y * 2\n", "    11\tdef beta(y):\n    12\t    return y + 2\n"),
        ("11: def beta(y):\n12:     return y * 2\n", "11: def beta(y):\n12:     return y + 2\n"),
        ("    11\u2192def beta(y):\n    12\u2192    return y * 2\n", "def beta(y):\n    return y + 2\n"),
        ("    11\tdef beta(y):\n    12\t    return y * 2\n", "    11\tdef beta(y):\n    13\t    return y + 2\n"),
    ],
)
def test_line_number_prefixes_stripped(old, new):
    out = apply_str_replace(PY, old, new)
    assert out.text == PY.replace("return y * 2", "return y + 2")
    assert "line-number" in out.message


def test_inconsistent_line_numbers_not_stripped():
    old = "11: def beta(y):\n14:     return y * 2\n"
    err = refused(PY, old, "x\n")
    assert err.reason == "no_match"


def test_colon_prefix_kept_when_file_has_it():
    text = "1: one\n2: two\n"
    out = apply_str_replace(text, "1: one\n2: two\n", "1: uno\n2: two\n")
    assert out.text == "1: uno\n2: two\n"


# ---------------------------------------------------------------- refusals and already-applied


def test_noop_refused():
    assert refused(PY, "beta", "beta").reason == "noop"
    assert refused(PY, "a\r\nb", "a\nb").reason == "noop"


def test_empty_old_refused():
    assert refused(PY, "", "x").reason == "empty_old"


def test_already_applied():
    out = apply_str_replace(PY, "return y * 7", "return y * 2")
    assert out.status == "already_applied" and out.text == PY
    assert "line 12" in out.message


def test_already_applied_not_claimed_when_new_is_ambiguous():
    err = refused(PY, "total = 99", "total")
    assert err.reason == "no_match"


def test_deletion_already_done_is_already_applied_but_not_from_part_of_a_line():
    # the old text is nowhere and the lines it keeps are there, once, as whole lines: the deletion is done
    out = apply_str_replace(PY, "import os\nimport sys\n", "import os\n")
    assert out.status == "already_applied" and out.text == PY and "nothing changed" in out.message
    # a new text that is part of a line, or found several times, says nothing
    assert refused(PY, "import os, sys", "import os").reason == "no_match"


def test_match_that_changes_nothing_is_already_applied():
    text = "a = 1\nb = 2\n"
    out = apply_str_replace(text, "a = 1  \nb = 2\n", "a = 1\nb = 2\n")
    assert out.status == "already_applied" and out.text == text


def test_no_match_message_has_levels_and_closest_region():
    err = refused(PY, "def beta(z):\n    return z * 2\n", "x\n")
    assert err.reason == "no_match"
    for level in ("exact 0", "trailing_ws 0", "indent_offset 0", "unicode", "elision"):
        assert level in err.message
    assert "Closest region" in err.message and "lines 11-12" in err.message
    assert "    11\tdef beta(y):" in err.message


def test_no_similar_region():
    err = refused(PY, "completely unrelated text here\nand more\n", "x\n")
    assert "No region of the file is similar" in err.message


def test_empty_file():
    err = refused("", "a", "b")
    assert err.reason == "no_match"


def test_placeholder_in_new_text_only_is_refused():
    old = "def beta(y):\n    return y * 2\n"
    new = "def beta(y):\n    # ... existing code ...\n    return y * 3\n"
    err = refused(PY, old, new)
    assert err.reason == "elision_mismatch" and "placeholder" in err.message
    # A real comment that merely mentions "rest" is fine.
    out = apply_str_replace(PY, old, "def beta(y):\n    # rest is computed below\n    return y * 3\n")
    assert out.status == "applied"
    out = apply_str_replace(PY, old, "def beta(y):\n    # other stuff here\n    return y * 3\n")
    assert out.status == "applied"
    err = refused(PY, old, "def beta(y):\n    // ... rest of the function unchanged\n")
    assert err.reason == "elision_mismatch"


def test_line_level_deletion_leaves_no_blank_line():
    text = "a = 1\n    b = 2   \nc = 3\n"
    out = apply_str_replace(text, "b = 2\n", "")
    assert out.level == "indent_offset" and out.text == "a = 1\nc = 3\n"
    out = apply_str_replace("a\nb  ", "b", "")  # exact substring: only the characters go
    assert out.text == "a\n  "
    out = apply_str_replace("a\nb  ", "b\n", "")  # whole-line deletion of the last line
    assert out.text == "a"


def test_mixed_endings_with_fuzzy_level():
    text = "x\r\n    a = 1  \r\n    b = 2\nz\n"
    out = apply_str_replace(text, "a = 1\nb = 2\n", "a = 10\nb = 20\nc = 30\n")
    assert out.level == "indent_offset"
    assert out.text == "x\r\n    a = 10\r\n    b = 20\r\n    c = 30\nz\n"


def test_tab_file_spaces_snippet_deeper_new_lines_become_tabs():
    text = "func f() {\n\tx := 1\n}\n"
    out = apply_str_replace(text, "x := 1\n", "if ok {\n    x := 2\n}\n")
    # exact substring match: written as given (the exact level never re-indents)
    assert out.level == "exact"
    out = apply_str_replace(text, "  x := 1\n}\n", "  if ok {\n    x := 2\n  }\n}\n")  # 2-column view of tabs
    assert out.level == "indent_offset"
    assert out.text == "func f() {\n\tif ok {\n\t\tx := 2\n\t}\n}\n"
    out = apply_str_replace(text, "    x := 1\n}\n", "    if ok {\n        x := 2\n    }\n}\n")  # 4 columns
    assert out.text == "func f() {\n\tif ok {\n\t\tx := 2\n\t}\n}\n"


def test_elision_in_snippet_with_fuzzy_pieces():
    text = "class A:\n\tdef f(self):\n\t\ta()\n\t\tb()\n\t\tc()\n"
    old = "    def f(self):\n        ...\n        c()\n"
    new = "    def f(self, x):\n        ...\n        c(x)\n"
    out = apply_str_replace(text, old, new)
    assert out.level == "elision"
    assert out.text == "class A:\n\tdef f(self, x):\n\t\ta()\n\t\tb()\n\t\tc(x)\n"


# ---------------------------------------------------------------- indentation style without an indentation map
# The old text has no indented line, so it matches at the exact (or trailing_ws) level and there is no indentation
# map to learn the file's style from: new indented lines are re-rendered in the file's own style.

TAB_FILE = "import a\n\n\nclass A:\n\tdef f(self):\n\t\treturn 1\n"
SPACE_FILE = "import a\n\n\nclass A:\n    def f(self):\n        return 1\n"


def test_unindented_old_spaces_new_lines_become_tabs_in_tab_file():
    new = "import a\n\nif CHECK:\n    import b\n    if DEEP:\n        import c\n      # aligned\n"
    out = apply_str_replace(TAB_FILE, "import a\n", new)
    assert out.status == "applied" and out.level == "exact"
    expected = "import a\n\nif CHECK:\n\timport b\n\tif DEEP:\n\t\timport c\n\t  # aligned\n"
    assert out.text == TAB_FILE.replace("import a\n", expected, 1)
    assert "tabs" in out.message


def test_unindented_old_tab_new_lines_become_spaces_in_space_file():
    new = "if CHECK:\n\timport a\nelse:\n\timport b as a\n\t\t# deeper\n"
    out = apply_str_replace(SPACE_FILE, "import a\n", new)
    assert out.text == SPACE_FILE.replace(
        "import a\n", "if CHECK:\n    import a\nelse:\n    import b as a\n        # deeper\n", 1
    )
    two = "x = 1\n\n\ndef f():\n  return 1\n"  # the file's unit is 2 columns
    out = apply_str_replace(two, "x = 1\n", "if y:\n\tx = 1\n")
    assert out.text == "if y:\n  x = 1\n\n\ndef f():\n  return 1\n"


def test_restyle_only_touches_leading_whitespace_and_keeps_copied_lines():
    text = "a = 1\nb = 2\n\ndef f():\n\treturn a\n"
    out = apply_str_replace(text, "a = 1\nb = 2\n", "a = 1\nif a:\n    s = 'x    y\\t'\n    t = '\t'\nb = 2\n")
    assert out.text == "a = 1\nif a:\n\ts = 'x    y\\t'\n\tt = '\t'\nb = 2\n\ndef f():\n\treturn a\n"


def test_restyle_at_trailing_ws_level():
    text = "x = 1   \ny = 2\n\ndef f():\n\treturn x\n"
    out = apply_str_replace(text, "x = 1\ny = 2\n", "x = 1\nif y:\n    y = 2\n")
    assert out.level == "trailing_ws"
    assert out.text == "x = 1   \nif y:\n\ty = 2\n\ndef f():\n\treturn x\n"


def test_mixed_style_file_or_new_text_is_written_as_given():
    mixed = "x = 1\n\ndef f():\n\treturn 1\n\ndef g():\n    return 2\n"
    out = apply_str_replace(mixed, "x = 1\n", "if x:\n    y = 1\n")
    assert out.text == mixed.replace("x = 1\n", "if x:\n    y = 1\n", 1)
    # the new text mixes both styles itself: nothing to learn a conversion from
    out = apply_str_replace(TAB_FILE, "import a\n", "if a:\n    import b\n\timport c\n")
    assert "if a:\n    import b\n\timport c\n" in out.text
    # no indented line in the file at all: no style to convert to
    out = apply_str_replace("a = 1\nb = 2\n", "a = 1\n", "if b:\n\ta = 1\n")
    assert out.text == "if b:\n\ta = 1\nb = 2\n"
    # a space-indented file that has tabs elsewhere (alignment, data): its tabs may be deliberate
    aligned = "x = 1\t# one\n\ndef f():\n    return 1\n"
    out = apply_str_replace(aligned, "x = 1\t# one\n", "if y:\n\tx = 1\n")
    assert out.text.startswith("if y:\n\tx = 1\n\ndef f():")
    # the file's style already: unchanged
    out = apply_str_replace(TAB_FILE, "import a\n", "if a:\n\timport b\n")
    assert out.text.startswith("if a:\n\timport b\n")


def test_restyle_mid_line_substring_is_written_as_given():
    # the match starts inside a line: the snippet's columns are not the file's, so nothing is converted
    text = "func f() {\n\tx := 1\n}\n"
    out = apply_str_replace(text, "x := 1\n", "if ok {\n    x := 2\n}\n")
    assert out.text == "func f() {\n\tif ok {\n    x := 2\n}\n}\n"


# ---------------------------------------------------------------- elision markers must be the same kind


def test_one_sided_comment_elision_with_python_ellipsis_body_is_refused():
    old = "def handler(event):\n    # ... existing code ...\n    return ok()\n"
    new = (
        "def handler(event):\n    validate(event)\n    step_one()\n    return ok()\n\n\n"
        "class P(Protocol):\n    def f(self) -> int:\n        ...\n"
    )
    err = refused(ELIDED_FILE, old, new)
    assert err.reason == "elision_mismatch" and err.level == "elision"
    assert "# ... existing code ..." in err.message


def test_elision_markers_must_be_identical_on_both_sides():
    old = "def handler(event):\n    # ... existing code ...\n    return ok()\n"
    err = refused(ELIDED_FILE, old, "def handler(event):\n    ...\n    return ok(1)\n")
    assert err.reason == "elision_mismatch"
    err = refused(
        ELIDED_FILE,
        "def handler(event):\n    ...\n    return ok()\n",
        "def handler(event):\n    # ... existing code ...\n    return ok(1)\n",
    )
    assert err.reason == "elision_mismatch"
    # the same marker text with a different indentation is the same marker
    new = "def handler(event):\n        # ... existing code ...\n    return ok(1)\n"
    out = apply_str_replace(ELIDED_FILE, old, new)
    assert out.level == "elision" and out.text == ELIDED_FILE.replace("return ok()", "return ok(1)")


def test_bare_ellipsis_marker_pairs_with_bare_ellipsis_only():
    # a bare '...' old marker plus a Python '...' body in the new text: two markers against one
    old = "def handler(event):\n    ...\n    return ok()\n"
    new = "def handler(event):\n    ...\n    return ok()\n\n\ndef stub():\n    ...\n"
    err = refused(ELIDED_FILE, old, new)
    assert err.reason == "elision_mismatch"
    # a Python '...' body next to a comment marker on both sides is content, not a marker
    old = "def handler(event):\n    # ... existing code ...\n    return ok()\n"
    new = "def handler(event):\n    # ... existing code ...\n    return ok()\n\n\ndef stub():\n    ...\n"
    out = apply_str_replace(ELIDED_FILE, old, new)
    assert out.level == "elision" and out.text == ELIDED_FILE + "\n\ndef stub():\n    ...\n"
