"""SEARCH/REPLACE blocks, unified diffs and Codex apply_patch."""

from __future__ import annotations

import pytest

from agents.edits import (
    AddFile,
    DeleteFile,
    EditRefused,
    UpdateFile,
    apply_patch_detailed,
    apply_patch_to_files,
    apply_search_replace,
    apply_udiff,
    parse_apply_patch,
)

SRC = """\
import os


def first():
    value = 1
    return value


def second():
    value = 2
    return value


def third():
    value = 3
    return value
"""


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


# ---------------------------------------------------------------- SEARCH/REPLACE


def test_search_replace_fenced_with_filename():
    text = (
        "Here is the change.\n\nsrc/mod.py\n```python\n"
        + block("def second():\n    value = 2\n", "def second():\n    value = 22\n")
        + "```\n"
    )
    out = apply_search_replace(SRC, text)
    assert out.status == "applied" and out.text == SRC.replace("value = 2\n", "value = 22\n")


def test_search_replace_several_blocks_in_order():
    text = block("    value = 1\n", "    value = 10\n") + block("    value = 3\n", "    value = 30\n")
    out = apply_search_replace(SRC, text)
    assert "value = 10" in out.text and "value = 30" in out.text


def test_search_replace_whole_lines_only_at_exact_level():
    # "value = 1" occurs once as a line, but the exact level compares whole lines.
    out = apply_search_replace("x_value = 1\nvalue = 1\n", block("value = 1\n", "value = 2\n"))
    assert out.text == "x_value = 1\nvalue = 2\n"


def test_search_replace_all_or_nothing():
    text = block("    value = 1\n", "    value = 10\n") + block("    missing = 9\n", "    x\n")
    with pytest.raises(EditRefused) as info:
        apply_search_replace(SRC, text)
    assert info.value.reason == "no_match"
    assert "block 2 of 2" in info.value.message and "all or nothing" in info.value.message


def test_search_replace_ambiguous():
    with pytest.raises(EditRefused) as info:
        apply_search_replace(SRC, block("    return value\n", "    return -value\n"))
    assert info.value.reason == "ambiguous" and info.value.lines == [6, 11, 16]


def test_search_replace_empty_search():
    out = apply_search_replace("", block("", "print(1)\n"))
    assert out.text == "print(1)\n"
    with pytest.raises(EditRefused) as info:
        apply_search_replace(SRC, block("", "print(1)\n"))
    assert info.value.reason == "empty_old"


def test_search_replace_malformed():
    for bad in ("no blocks at all", "<<<<<<< SEARCH\nx\n", "<<<<<<< SEARCH\nx\n=======\ny\n", "=======\n"):
        with pytest.raises(EditRefused) as info:
            apply_search_replace(SRC, bad)
        assert info.value.reason == "invalid_patch"


def test_search_replace_several_files_refused():
    text = "a.py\n" + block("x\n", "y\n") + "b.py\n" + block("x\n", "z\n")
    with pytest.raises(EditRefused) as info:
        apply_search_replace("x\n", text)
    assert info.value.reason == "unsupported"


def test_search_replace_already_applied_and_crlf():
    crlf = SRC.replace("\n", "\r\n")
    out = apply_search_replace(crlf, block("    value = 7\n", "    value = 2\n"))
    assert out.status == "already_applied" and out.text == crlf
    out = apply_search_replace(crlf, block("value = 2\n", "value = 5\n"))  # indent_offset
    assert out.level == "indent_offset" and out.text == crlf.replace("value = 2", "value = 5")


# ---------------------------------------------------------------- unified diff


def test_udiff_with_headers_and_correct_numbers():
    diff = (
        "diff --git a/m.py b/m.py\nindex 1..2 100644\n--- a/m.py\n+++ b/m.py\n"
        "@@ -9,3 +9,3 @@\n def second():\n-    value = 2\n+    value = 20\n     return value\n"
    )
    out = apply_udiff(SRC, diff)
    assert out.text == SRC.replace("value = 2\n", "value = 20\n")


def test_udiff_wrong_line_numbers_still_apply_when_unique():
    diff = (
        "--- a/m.py\n+++ b/m.py\n@@ -500,3 +500,4 @@\n def third():\n-    value = 3\n+    value = 33\n+    extra = 1\n"
    )
    out = apply_udiff(SRC, diff)
    assert "    value = 33\n    extra = 1\n    return value\n" in out.text


def test_udiff_line_numbers_break_ties_only_when_exact():
    diff_ok = "@@ -10,2 +10,2 @@\n-    value = 2\n+    value = 9\n     return value\n"
    out = apply_udiff(SRC.replace("value = 1", "value = 2").replace("value = 3", "value = 2"), diff_ok)
    assert out.text.count("value = 9") == 1 and "line number picked" in out.message
    diff_off = diff_ok.replace("-10,2", "-11,2")
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC.replace("value = 1", "value = 2"), diff_off)
    assert info.value.reason == "ambiguous" and "says line 11" in info.value.message


def test_udiff_ambiguous_without_numbers():
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, "@@ @@\n-    return value\n+    return None\n")
    assert info.value.reason == "ambiguous"


def test_udiff_forward_cursor_multiple_hunks():
    diff = (
        "@@ -4,3 +4,3 @@\n def first():\n-    value = 1\n+    value = 100\n"
        "@@ -14,3 +14,3 @@\n def third():\n-    value = 3\n+    value = 300\n"
    )
    out = apply_udiff(SRC, diff)
    assert "value = 100" in out.text and "value = 300" in out.text and "value = 2\n" in out.text


def test_udiff_hunks_out_of_order_refused():
    diff = (
        "@@ -14,3 +14,3 @@\n def third():\n-    value = 3\n+    value = 300\n"
        "@@ -4,3 +4,3 @@\n def first():\n-    value = 1\n+    value = 100\n"
    )
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, diff)
    assert info.value.reason == "no_match" and "file order" in info.value.message


def test_udiff_all_or_nothing():
    diff = (
        "@@ -4,3 +4,3 @@\n def first():\n-    value = 1\n+    value = 100\n"
        "@@ -14,3 +14,3 @@\n def nope():\n-    value = 3\n+    value = 300\n"
    )
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, diff)
    assert info.value.reason == "no_match" and "Closest region" in info.value.message


def test_udiff_fuzzy_levels_and_blank_context_without_space():
    tabbed = SRC.replace("    ", "\t")
    diff = "```diff\n@@ -9,4 +9,4 @@\n def second():\n-    value = 2\n+    value = 2.5\n     return value\n\n\n```"
    out = apply_udiff(tabbed, diff)
    assert out.level == "indent_offset" and "\tvalue = 2.5\n" in out.text


def test_udiff_already_applied_and_noop():
    diff = "@@ -9,3 +9,3 @@\n def second():\n-    value = 0\n+    value = 2\n"
    out = apply_udiff(SRC, diff)
    assert out.status == "already_applied" and out.text == SRC
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, "@@ -1 +1 @@\n import os\n")
    assert info.value.reason == "noop"


def test_udiff_new_file_and_invalid():
    out = apply_udiff("", "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n")
    assert out.text == "a = 1\nb = 2\n"
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+a = 1\n")
    assert info.value.reason == "file_exists"
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, "@@ -1 +1 @@\n-import os\nimport sys\n")
    assert info.value.reason == "invalid_patch"
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, "just text")
    assert info.value.reason == "invalid_patch"


def test_udiff_pure_insertion_needs_context():
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, "@@ -3,0 +4,1 @@\n+import sys\n")
    assert info.value.reason == "no_match" and "context" in info.value.message


def test_udiff_keeps_crlf_and_missing_final_newline():
    text = "a\r\nb\r\nc"
    out = apply_udiff(text, "@@ -2,2 +2,2 @@\n b\n-c\n+C\n\\ No newline at end of file\n")
    assert out.text == "a\r\nb\r\nC"


# ---------------------------------------------------------------- apply_patch


def reader(files: dict[str, str]):
    return lambda path: files.get(path)


def test_parse_apply_patch_ops():
    patch = """apply_patch <<'EOF'
*** Begin Patch
*** Add File: new.py
+print("hi")
*** Delete File: old.py
*** Update File: m.py
*** Move to: n.py
@@ class A:
@@     def f(self):
-        return 1
+        return 2
*** End of File
*** End Patch
EOF"""
    ops = parse_apply_patch(patch)
    assert isinstance(ops[0], AddFile) and ops[0].content == 'print("hi")\n'
    assert isinstance(ops[1], DeleteFile) and ops[1].path == "old.py"
    up = ops[2]
    assert isinstance(up, UpdateFile) and up.move_to == "n.py"
    assert up.chunks[0].anchors == ["class A:", "    def f(self):"] and up.chunks[0].at_eof
    assert up.chunks[0].lines == [("-", "        return 1"), ("+", "        return 2")]


def test_apply_patch_add_delete_update_move():
    files = {"m.py": SRC, "gone.py": "x\n"}
    patch = """*** Begin Patch
*** Add File: pkg/new.py
+a = 1
+
+b = 2
*** Delete File: gone.py
*** Update File: m.py
*** Move to: pkg/m.py
@@ def second():
-    value = 2
+    value = 200
@@ def third():
     value = 3
-    return value
+    return -value
*** End of File
*** End Patch"""
    out = apply_patch_to_files(patch, reader(files))
    assert out["pkg/new.py"] == "a = 1\n\nb = 2\n"
    assert out["gone.py"] is None and out["m.py"] is None
    assert out["pkg/m.py"] == SRC.replace("value = 2\n", "value = 200\n").replace(
        "    value = 3\n    return value\n", "    value = 3\n    return -value\n"
    )


def test_apply_patch_anchor_narrows_search():
    patch = "*** Begin Patch\n*** Update File: m.py\n@@ def third():\n-    return value\n+    return 0\n*** End Patch"
    out = apply_patch_to_files(patch, reader({"m.py": SRC}))
    assert out["m.py"].endswith("    value = 3\n    return 0\n")
    no_anchor = patch.replace("@@ def third():", "@@")
    with pytest.raises(EditRefused) as info:
        apply_patch_to_files(no_anchor, reader({"m.py": SRC}))
    assert info.value.reason == "ambiguous"


def test_apply_patch_all_or_nothing():
    files = {"a.py": "x = 1\n", "b.py": "y = 1\n"}
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n-x = 1\n+x = 2\n*** Update File: b.py\n-y = 5\n+y = 6\n*** End Patch"
    )
    with pytest.raises(EditRefused) as info:
        apply_patch_to_files(patch, reader(files))
    assert info.value.reason == "no_match"
    assert "operation 2 of 2" in info.value.message and "all or nothing" in info.value.message
    assert files == {"a.py": "x = 1\n", "b.py": "y = 1\n"}


@pytest.mark.parametrize(
    "patch,reason",
    [
        ("*** Add File: a.py\n+x\n*** End Patch", "invalid_patch"),
        ("*** Begin Patch\n*** Add File: a.py\n+x\n", "invalid_patch"),
        ("*** Begin Patch\n*** Add File: a.py\nx\n*** End Patch", "invalid_patch"),
        ("*** Begin Patch\n*** Frobnicate: a.py\n*** End Patch", "invalid_patch"),
        ("*** Begin Patch\n*** Update File: a.py\n context only\n*** End Patch", "invalid_patch"),
        ("*** Begin Patch\n*** Add File: exists.py\n+x\n*** End Patch", "file_exists"),
        ("*** Begin Patch\n*** Delete File: missing.py\n*** End Patch", "no_such_file"),
        ("*** Begin Patch\n*** Update File: missing.py\n-a\n+b\n*** End Patch", "no_such_file"),
        ("*** Begin Patch\n*** Update File: a.py\n*** Move to: exists.py\n-a\n+b\n*** End Patch", "file_exists"),
        ("*** Begin Patch\n*** End Patch", "invalid_patch"),
    ],
)
def test_apply_patch_refusals(patch, reason):
    with pytest.raises(EditRefused) as info:
        apply_patch_to_files(patch, reader({"a.py": "a\n", "exists.py": "e\n"}))
    assert info.value.reason == reason


def test_apply_patch_sequential_ops_on_same_file_and_crlf():
    files = {"w.txt": "one\r\ntwo\r\nthree\r\n"}
    patch = (
        "*** Begin Patch\n*** Update File: w.txt\n-two\n+TWO\n"
        "*** Update File: w.txt\n TWO\n-three\n+THREE\n*** End Patch"
    )
    out = apply_patch_to_files(patch, reader(files))
    assert out == {"w.txt": "one\r\nTWO\r\nTHREE\r\n"}


def test_apply_patch_unicode_level_and_messages():
    files = {"t.py": "s = \u201cquoted\u201d\nother = 1\n"}
    patch = '*** Begin Patch\n*** Update File: t.py\n-s = "quoted"\n+s = "quoted!"\n other = 1\n*** End Patch'
    result = apply_patch_detailed(patch, reader(files))
    assert result.files["t.py"] == "s = \u201cquoted!\u201d\nother = 1\n"
    assert "unicode" in result.messages[0]


def test_apply_patch_end_of_file_constraint():
    text = "x\nend\nx\nend\n"
    patch = "*** Begin Patch\n*** Update File: f\n x\n-end\n+END\n*** End of File\n*** End Patch"
    out = apply_patch_to_files(patch, reader({"f": text}))
    assert out["f"] == "x\nend\nx\nEND\n"
    append = "*** Begin Patch\n*** Update File: f\n+tail\n*** End of File\n*** End Patch"
    assert apply_patch_to_files(append, reader({"f": text}))["f"] == text + "tail\n"


def test_hunk_adding_a_placeholder_is_refused():
    diff = "@@ -9,3 +9,2 @@\n def second():\n-    value = 2\n-    return value\n+    # ... existing code ...\n"
    with pytest.raises(EditRefused) as info:
        apply_udiff(SRC, diff)
    assert info.value.reason == "elision_mismatch"


def test_udiff_partially_applied_hunks():
    diff = (
        "@@ -4,3 +4,3 @@\n def first():\n-    value = 0\n+    value = 1\n"  # already in the file
        "@@ -14,3 +14,3 @@\n def third():\n-    value = 3\n+    value = 30\n"
    )
    out = apply_udiff(SRC, diff)
    assert out.status == "applied" and "already applied" in out.message
    assert out.text == SRC.replace("value = 3\n", "value = 30\n")


def test_apply_patch_anchor_not_found_and_fuzzy_anchor():
    files = {"m.py": SRC}
    patch = "*** Begin Patch\n*** Update File: m.py\n@@ def fourth():\n-    return value\n+    return 0\n*** End Patch"
    with pytest.raises(EditRefused) as info:
        apply_patch_to_files(patch, reader(files))
    assert info.value.reason == "no_match" and "def fourth()" in info.value.message
    fuzzy = patch.replace("def fourth():", "def third():   ")
    assert apply_patch_to_files(fuzzy, reader(files))["m.py"].endswith("    return 0\n")


def test_search_replace_with_elision_and_line_numbers():
    old = "    4\tdef first():\n    5\t    ...\n    6\t    return value\n    7\t\n    8\t\n    9\tdef second():\n"
    new = "    4\tdef first():\n    5\t    ...\n    6\t    return value + 1\n    7\t\n    8\t\n    9\tdef second():\n"
    out = apply_search_replace(SRC, block(old, new))
    assert out.level == "elision"
    assert out.text == SRC.replace("    return value\n\n\ndef second", "    return value + 1\n\n\ndef second")
    with pytest.raises(EditRefused) as info:  # the second piece alone is not unique
        apply_search_replace(SRC, block("def first():\n...\n    return value\n", "def first():\n...\n    return 1\n"))
    assert info.value.reason == "ambiguous" and info.value.lines == [6, 11, 16]


def test_apply_patch_add_file_blank_lines_without_plus():
    patch = "*** Begin Patch\n*** Add File: n.py\n+a = 1\n\n+b = 2\n\n*** End Patch\n"
    assert apply_patch_to_files(patch, reader({})) == {"n.py": "a = 1\n\nb = 2\n"}


# ---- the file's indentation style when the old text has no indented line (no indentation map)

TABS = "import os\n\nfrom . import b\n\n\ndef f():\n\treturn os\n"


def test_udiff_unindented_context_tab_file_gets_tabs():
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,6 @@\n import os\n \n from . import b\n+\n+if CHECK:\n+    import c\n"
    out = apply_udiff(TABS, diff)
    assert out.level == "exact"
    assert out.text == TABS.replace("from . import b\n", "from . import b\n\nif CHECK:\n\timport c\n")


def test_search_replace_and_apply_patch_tab_new_lines_in_space_file():
    spaces = TABS.replace("\t", "    ")
    out = apply_search_replace(spaces, block("from . import b\n", "if CHECK:\n\tfrom . import b\n"))
    assert out.text == spaces.replace("from . import b\n", "if CHECK:\n    from . import b\n")
    patch = "*** Begin Patch\n*** Update File: m.py\n-from . import b\n+if CHECK:\n+\tfrom . import b\n*** End Patch"
    assert apply_patch_to_files(patch, reader({"m.py": spaces}))["m.py"] == out.text
    tab_patch = patch.replace("\t", "    ")
    assert apply_patch_to_files(tab_patch, reader({"m.py": TABS}))["m.py"] == TABS.replace(
        "from . import b\n", "if CHECK:\n\tfrom . import b\n"
    )
