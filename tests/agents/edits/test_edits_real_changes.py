"""Failure classes found on a corpus of real changes (issue 14), reproduced on excerpts of real code.

The fixtures are short excerpts in the style of the files where the classes were found (flask ``blueprints.py``,
sphinx ``make_mode.py``, sympy and xarray docstrings), trimmed to what each test needs.
"""

from __future__ import annotations

import pytest

from agents.edits import EditRefused, apply_patch_to_files, apply_search_replace, apply_str_replace, apply_udiff
from agents.edits.elision import marker_kind
from agents.edits.matching import indent_unit
from agents.edits.order import ordered_choice

BLUEPRINTS = '''\
class BlueprintSetupState:
    def __init__(
        self,
        blueprint: "Blueprint",
        app: "Flask",
        first_registration: bool,
    ) -> None:
        self.app = app
        self.blueprint = blueprint

    def add_url_rule(
        self,
        rule: str,
        endpoint: t.Optional[str] = None,
        view_func: t.Optional[t.Callable] = None,
        **options: t.Any,
    ) -> None:
        if self.url_prefix is not None:
            rule = self.url_prefix
        options.setdefault("subdomain", self.subdomain)


class Blueprint(Scaffold):
    _got_registered_once = False

    def __init__(
        self,
        name: str,
        import_name: str,
        static_folder: t.Optional[str] = None,
    ) -> None:
        super().__init__(import_name=import_name, static_folder=static_folder)
        self.name = name

    def record(self, func: t.Callable) -> None:
        if self._got_registered_once:
            warn("The setup method was called after registration.")
        self.deferred_functions.append(func)

    def add_url_rule(
        self,
        rule: str,
        endpoint: t.Optional[str] = None,
        view_func: t.Optional[t.Callable] = None,
        **options: t.Any,
    ) -> None:
        if endpoint and "." in endpoint:
            raise ValueError("'endpoint' may not contain a dot '.' character.")
        self.record(lambda s: s.add_url_rule(rule, endpoint, view_func, **options))
'''


def block(search: str, replace: str) -> str:
    return f"src/flask/blueprints.py\n```python\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"


def patch(body: str) -> str:
    return f"*** Begin Patch\n*** Update File: bp.py\n{body}*** End Patch\n"


def refused(fn, *args) -> EditRefused:
    with pytest.raises(EditRefused) as info:
        fn(*args)
    return info.value


# ---------------------------------------------------------------- (1) elision in the new text only

RECORD = (
    "    def record(self, func: t.Callable) -> None:\n"
    "        if self._got_registered_once:\n"
    '            warn("The setup method was called after registration.")\n'
    "        self.deferred_functions.append(func)\n"
)


@pytest.mark.parametrize(
    "marker",
    ["...", "# ... existing code ...", "# ...", "// ...", "[...]", "\u2026", "# rest of the method unchanged"],
)
def test_search_replace_elision_in_replace_only_is_refused(marker):
    new = (
        "    def record(self, func: t.Callable, *, once: bool = False) -> None:\n"
        f"        {marker}\n"
        "        self.deferred_functions.append(func)\n"
    )
    err = refused(apply_search_replace, BLUEPRINTS, block(RECORD, new))
    assert err.reason == "elision_mismatch"
    assert "SEARCH block 1 of 1" in err.message and marker.strip() in err.message
    assert "in full" in err.message and "deleted" in err.message
    assert "if self._got_registered_once:" in err.message  # names what would disappear


def test_elision_in_new_text_only_refused_in_every_format():
    new = "    def record(self, func: t.Callable, *, once: bool = False) -> None:\n        ...\n"
    err = refused(apply_str_replace, BLUEPRINTS, RECORD, new)
    assert err.reason == "elision_mismatch"
    diff = (
        "--- a/bp.py\n+++ b/bp.py\n@@ -32,4 +32,2 @@\n"
        "-    def record(self, func: t.Callable) -> None:\n"
        "-        if self._got_registered_once:\n"
        '-            warn("The setup method was called after registration.")\n'
        "+    def record(self, func: t.Callable, *, once: bool = False) -> None:\n"
        "+        # ... existing code ...\n"
        "         self.deferred_functions.append(func)\n"
    )
    assert refused(apply_udiff, BLUEPRINTS, diff).reason == "elision_mismatch"
    body = "@@ class Blueprint(Scaffold):\n" + diff.split("@@\n", 1)[1].replace("# ... existing code ...", "...")
    err = refused(apply_patch_to_files, patch(body), lambda p: BLUEPRINTS if p == "bp.py" else None)
    assert err.reason == "elision_mismatch" and "chunk 1" in err.message


def test_elision_replacing_a_decorator_next_to_real_stub_bodies_is_refused():
    # flask tests/typing: the old text has real `...` bodies; a `...` at another indentation is not one of them
    text = (
        "@app.teardown_appcontext\ndef teardown_sync(exc: t.Optional[BaseException]) -> None:\n    ...\n\n\n"
        "@app.teardown_appcontext\nasync def teardown_async(exc: t.Optional[BaseException]) -> None:\n    ...\n"
    )
    new = (
        "@app.teardown_appcontext\ndef teardown_sync(exc: BaseException | None) -> None: ...\n\n\n"
        "...\nasync def teardown_async(exc: BaseException | None) -> None: ...\n"
    )
    assert refused(apply_str_replace, text, text, new).reason == "elision_mismatch"


def test_typographic_ellipsis_in_a_doctest_is_refused_but_a_prompt_is_content():
    doc = (
        '    >>> ds = xr.Dataset(\n    ...     {"a": ("time", values)},\n    ... )\n'
        "    >>> ds\n    <xarray.Dataset>\n"
    )
    text = f'def resample():\n    """\n{doc}    """\n'
    elided = '    >>> ds = xr.Dataset(\n    ...     {"a": ("time", other)},\n    \u2026\n'
    assert refused(apply_str_replace, text, doc, elided).reason == "elision_mismatch"
    prompt = '    >>> ds = xr.Dataset(\n    ...     {"a": ("time", values)},\n    ...\n    ... )\n    >>> ds\n'
    assert apply_str_replace(text, doc, prompt + "    <xarray.Dataset>\n").status == "applied"


def test_real_ellipsis_bodies_still_apply():
    stub = "    def record(self, func: t.Callable) -> None:\n        ...\n"
    out = apply_str_replace(BLUEPRINTS, RECORD, RECORD + "\n    @t.overload\n" + stub)  # a new stub: content
    assert out.status == "applied" and out.text.count("        ...\n") == 1
    text = "class P(Protocol):\n    def f(self) -> int:\n        pass\n"
    out = apply_str_replace(text, "        pass\n", "        ...\n")  # `pass` -> `...`
    assert out.text == "class P(Protocol):\n    def f(self) -> int:\n        ...\n"
    both = (
        "    def record(self, func: t.Callable) -> None:\n        ...\n        self.deferred_functions.append(func)\n"
    )
    out = apply_search_replace(BLUEPRINTS, block(both, both.replace("(func)", "(func)  # kept")))
    assert out.level == "elision" and 'warn("The setup method' in out.text  # both sides elide: lines kept


def test_marker_kinds():
    assert marker_kind("    ...") == "bare" and marker_kind("[...]") == "bracket"
    assert marker_kind("... existing code ...") == "bracket" and marker_kind("[... rest of the file ...]") == "bracket"
    assert marker_kind("  # ... existing code ...") == "comment" and marker_kind("/* ... */") == "comment"
    assert marker_kind("# rest of the code unchanged") == "comment" and marker_kind("// (...)") == "comment"
    code = ("x = ...", "...,", "...]", "    ... )", "# TODO ...", "# keep the rest", "# ...continues here", "#",
            "print('...')", "Ellipsis")
    for content in code:
        assert marker_kind(content) is None, content


def test_bracket_elision_on_both_sides_keeps_the_elided_lines():
    old = RECORD.replace(RECORD.split("\n")[1] + "\n" + RECORD.split("\n")[2], "        [...]")
    out = apply_str_replace(BLUEPRINTS, old, old.replace("(func)\n", "(func)  # kept\n"))
    assert out.level == "elision" and 'warn("The setup method' in out.text and "(func)  # kept" in out.text


# ---------------------------------------------------------------- (2) one consistent offset or nothing

INIT_DEDENTED = (  # the file's lines, four columns to the left
    "    super().__init__(import_name=import_name, static_folder=static_folder)\n"
    "    self.name = name\n"
    "\n"
    "def record(self, func: t.Callable) -> None:\n"
)


def test_old_text_shifted_but_new_text_at_the_file_indentation_is_refused():
    new = (
        "        super().__init__(import_name=import_name, static_folder=static_folder)\n"
        "        self.name = name\n"
        "        self.deferred_functions = []\n"
        "\n"
        "    def record(self, func: t.Callable) -> None:\n"
    )
    err = refused(apply_str_replace, BLUEPRINTS, INIT_DEDENTED, new)
    assert err.reason == "indent_conflict" and err.level == "indent_offset"
    assert "no single offset" in err.message
    # the same edit written consistently with the old text is re-indented as a whole
    out = apply_str_replace(BLUEPRINTS, INIT_DEDENTED, INIT_DEDENTED.replace("name\n\n", "name\n    self.x = []\n\n"))
    assert "        self.name = name\n        self.x = []\n\n    def record" in out.text


def test_consistent_shift_with_a_wrapped_line_still_applies():
    old = "if self._got_registered_once:\n    warn(\"x\")\nself.deferred_functions.append(func)\n"
    text = (
        "def f():\n        if self._got_registered_once:\n            warn(\"x\")\n"
        "        self.deferred_functions.append(func)\n"
    )
    new = "if self._got_registered_once:\n    warn(\"x\")\nwith lock:\n    self.deferred_functions.append(func)\n"
    out = apply_str_replace(text, old, new)
    assert out.level == "indent_offset"
    assert out.text.endswith("        with lock:\n            self.deferred_functions.append(func)\n")


def test_one_indented_line_inside_a_deeper_indentation_reindents_every_new_line():
    # "    self.name = name" is a substring of the file's 8-space line; a literal splice would indent only the
    # first new line like the file
    out = apply_str_replace(BLUEPRINTS, "    self.name = name\n", "    self.name = name\n    self.cli = None\n")
    assert "        self.name = name\n        self.cli = None\n" in out.text
    one_line = apply_str_replace(BLUEPRINTS, "    self.name = name\n", "    self.name = name.strip()\n")
    assert "        self.name = name.strip()\n" in one_line.text  # a one-line new text: the exact splice


# ---------------------------------------------------------------- (3) runs of blank lines

def test_old_text_missing_a_blank_line_the_file_has():
    old = "        self.name = name\n    def record(self, func: t.Callable) -> None:\n"
    new = "        self.name = name\n    def record(self, func: t.Callable, once: bool) -> None:\n"
    out = apply_str_replace(BLUEPRINTS, old, new)
    assert out.level == "blank_lines"
    assert out.text == BLUEPRINTS.replace(
        "func: t.Callable) -> None:\n        if", "func: t.Callable, once: bool) -> None:\n        if"
    )


def test_old_text_with_an_extra_blank_line():
    old = "        self.blueprint = blueprint\n\n\n    def add_url_rule(\n        self,\n        rule: str,\n"
    out = apply_search_replace(BLUEPRINTS, block(old, old.replace("rule: str,", "rule: str,  # the rule")))
    assert out.level == "blank_lines"
    in_file = "blueprint\n\n    def add_url_rule(\n        self,\n        rule: str,\n"
    assert out.text == BLUEPRINTS.replace(in_file, in_file.replace("rule: str,", "rule: str,  # the rule"))


def test_missing_blank_line_after_a_replaced_line_goes_before_the_next_kept_line():
    old = "        self.name = name\n    def record(self, func: t.Callable) -> None:\n"
    new = "        self.name = name.strip()\n        self.cli = None\n    def record(self, func: t.Callable) -> None:\n"
    out = apply_str_replace(BLUEPRINTS, old, new)
    assert "        self.name = name.strip()\n        self.cli = None\n\n    def record" in out.text


def test_insertion_between_kept_lines_where_the_file_has_a_blank_line_is_refused():
    old = "        self.name = name\n    def record(self, func: t.Callable) -> None:\n"
    new = "        self.name = name\n        self.cli = None\n    def record(self, func: t.Callable) -> None:\n"
    err = refused(apply_str_replace, BLUEPRINTS, old, new)
    assert err.reason == "ambiguous" and err.level == "blank_lines" and "which side" in err.message


def test_blank_line_edit_sent_again_is_already_applied():
    old = "        self.name = name\n\n\n    def record(self, func: t.Callable) -> None:\n"
    new = "        self.name = name\n\n    def record(self, func: t.Callable) -> None:\n"
    out = apply_str_replace(BLUEPRINTS, old, new)
    assert out.status == "already_applied" and out.text == BLUEPRINTS


def test_blank_line_tolerance_never_breaks_uniqueness():
    # these two lines are in both classes: with a blank line between them, they still match twice
    old = "        rule: str,\n\n        endpoint: t.Optional[str] = None,\n"
    err = refused(apply_str_replace, BLUEPRINTS, old, old.replace("None", "''"))
    assert err.reason == "ambiguous" and err.level == "blank_lines" and err.lines == [13, 42]
    skeleton = "    ) -> None:\n\n        if self.url_prefix is not None:\n"  # one blank line too many, once
    out = apply_str_replace(BLUEPRINTS, skeleton, skeleton.replace("is not None", "is None"))
    assert out.level == "blank_lines" and "if self.url_prefix is None:" in out.text


def test_hunks_with_other_blank_lines_than_the_file():
    diff = (
        "--- a/bp.py\n+++ b/bp.py\n@@ -29,5 +29,5 @@\n"
        "         super().__init__(import_name=import_name, static_folder=static_folder)\n"
        "-        self.name = name\n"
        "+        self.name = name.strip()\n"
        "     def record(self, func: t.Callable) -> None:\n"
        "         if self._got_registered_once:\n"
    )
    out = apply_udiff(BLUEPRINTS, diff)
    assert out.level == "blank_lines" and "name.strip()\n\n    def record" in out.text
    body = "@@ class Blueprint(Scaffold):\n" + diff.split("@@\n", 2)[1]
    files = apply_patch_to_files(patch(body), lambda p: BLUEPRINTS if p == "bp.py" else None)
    assert files["bp.py"] == out.text


# ---------------------------------------------------------------- (4) apply_patch anchors


def test_second_chunk_under_an_enclosing_class_already_passed():
    body = (
        "@@ class Blueprint(Scaffold):\n"
        "         name: str,\n"
        "         import_name: str,\n"
        "-        static_folder: t.Optional[str] = None,\n"
        "+        static_folder: str | os.PathLike | None = None,\n"
        "@@ class Blueprint(Scaffold):\n"
        "         self,\n"
        "         rule: str,\n"
        "-        endpoint: t.Optional[str] = None,\n"
        "-        view_func: t.Optional[t.Callable] = None,\n"
        "+        endpoint: str | None = None,\n"
        "+        view_func: t.Callable | None = None,\n"
    )
    files = apply_patch_to_files(patch(body), lambda p: BLUEPRINTS if p == "bp.py" else None)
    text = files["bp.py"]
    assert text.count("endpoint: t.Optional[str] = None,") == 1  # BlueprintSetupState keeps its own
    assert text.index("endpoint: str | None = None,") > text.index("class Blueprint(Scaffold):")
    assert "static_folder: str | os.PathLike | None = None," in text


def test_anchor_names_the_block_when_the_lines_occur_in_two_classes():
    body = (
        "@@ class BlueprintSetupState:\n"
        "         rule: str,\n"
        "-        endpoint: t.Optional[str] = None,\n"
        "+        endpoint: str | None = None,\n"
    )
    text = apply_patch_to_files(patch(body), lambda p: BLUEPRINTS if p == "bp.py" else None)["bp.py"]
    assert text.index("endpoint: str | None = None,") < text.index("class Blueprint(Scaffold):")
    nested = body.replace("@@ class BlueprintSetupState:\n", "@@ class Blueprint(Scaffold):\n@@ def add_url_rule(\n")
    text = apply_patch_to_files(patch(nested), lambda p: BLUEPRINTS if p == "bp.py" else None)["bp.py"]
    assert text.index("endpoint: str | None = None,") > text.index("class Blueprint(Scaffold):")


def test_anchor_and_chunk_with_trailing_whitespace_and_other_indentation():
    body = (
        "@@ def record(self, func: t.Callable) -> None:   \n"
        "         if self._got_registered_once:  \n"
        '-            warn("The setup method was called after registration.")\n'
        '+            warn("Called after registration.")\n'
    )
    text = apply_patch_to_files(patch(body), lambda p: BLUEPRINTS if p == "bp.py" else None)["bp.py"]
    assert '            warn("Called after registration.")\n' in text


# ---------------------------------------------------------------- (5) several hunks, each in its window

MAKE_MODE = '''\
class Make:
    def __init__(self, srcdir, builddir):
        self.srcdir = srcdir
        self.builddir = builddir
        self.makecmd = os.environ.get("MAKE", "make")

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
        try:
            return subprocess.call([self.makecmd, "info"])
        except OSError:
            return 1
'''
SAME_HUNK = (
    "         if self.run_generic_build(\"latex\") > 0:\n"
    "             return 1\n"
    " \n"
    "-        if sys.platform == \"win32\":\n"
    "-            makecmd = os.environ.get(\"MAKE\", \"make.bat\")\n"
    "-        else:\n"
    "-            makecmd = self.makecmd\n"
    "+        makecmd = os.environ.get(\"MAKE\", default_make())\n"
    "         try:\n"
)
FIRST_HUNK = (
    "         self.builddir = builddir\n"
    "-        self.makecmd = os.environ.get(\"MAKE\", \"make\")\n"
    " \n"
    "     def build_latexpdf(self):\n"
)
LAST_HUNK = (
    "     def build_info(self):\n"
    "         try:\n"
    "-            return subprocess.call([self.makecmd, \"info\"])\n"
    "+            return subprocess.call([os.environ.get(\"MAKE\", \"make\"), \"info\"])\n"
)
MAKE_AFTER = (
    MAKE_MODE.replace('        self.makecmd = os.environ.get("MAKE", "make")\n', "")
    .replace(
        '        if sys.platform == "win32":\n            makecmd = os.environ.get("MAKE", "make.bat")\n'
        "        else:\n            makecmd = self.makecmd\n",
        '        makecmd = os.environ.get("MAKE", default_make())\n',
    )
    .replace('[self.makecmd, "info"]', '[os.environ.get("MAKE", "make"), "info"]')
)


def test_identical_hunks_are_placed_by_their_order():
    diff = "--- a/make_mode.py\n+++ b/make_mode.py\n" + "".join(
        f"@@ @@\n{h}" for h in (FIRST_HUNK, SAME_HUNK, SAME_HUNK, LAST_HUNK)
    )
    out = apply_udiff(MAKE_MODE, diff)
    assert out.text == MAKE_AFTER and "order of the hunks" in out.message
    body = "".join(f"@@\n{h}" for h in (FIRST_HUNK, SAME_HUNK, SAME_HUNK, LAST_HUNK))
    files = apply_patch_to_files(patch(body), lambda p: MAKE_MODE if p == "bp.py" else None)
    assert files["bp.py"] == MAKE_AFTER


def as_block(hunk: str) -> str:
    rows = hunk.splitlines()
    old = "".join(r[1:] + "\n" for r in rows if r[0] != "+")
    new = "".join(r[1:] + "\n" for r in rows if r[0] != "-")
    return block(old, new)


def test_identical_blocks_are_placed_by_the_block_right_above_then_in_sequence():
    # block 2 starts right below block 1's text; block 3, the same text, is then unique in the result
    text = "".join(as_block(h) for h in (FIRST_HUNK, SAME_HUNK, SAME_HUNK, LAST_HUNK))
    out = apply_search_replace(MAKE_MODE, text)
    assert out.text == MAKE_AFTER and "right below the previous block" in out.message


def test_hunks_that_cannot_be_told_apart_are_refused():
    diff = "".join(f"@@ @@\n{h}" for h in (SAME_HUNK, SAME_HUNK.replace("default_make()", "'make'")))
    assert apply_udiff(MAKE_MODE, diff).text.count("default_make()") == 1
    err = refused(apply_udiff, MAKE_MODE, f"@@ @@\n{SAME_HUNK}")
    assert err.reason == "ambiguous" and err.lines == [8, 21]
    err = refused(apply_udiff, MAKE_MODE, "".join(f"@@ @@\n{h}" for h in (LAST_HUNK, SAME_HUNK)))
    assert err.reason in ("ambiguous", "no_match") and "order" in err.message


def test_block_whose_search_text_the_previous_block_duplicates():
    # block 1 adds a method whose body repeats block 2's SEARCH text: located on the original file, block 2 is unique
    first = block("    def build_info(self):\n", "    def build_man(self):\n        try:\n"
                  "            return subprocess.call([self.makecmd, \"info\"])\n        except OSError:\n"
                  "            return 1\n\n    def build_info(self):\n")
    second = block('            return subprocess.call([self.makecmd, "info"])\n',
                   '            return subprocess.call([self.makecmd, "info", "-q"])\n')
    out = apply_search_replace(MAKE_MODE, first + second)
    assert out.text.count('[self.makecmd, "info", "-q"]') == 1
    assert out.text.index('"info", "-q"') > out.text.index("def build_info")


def test_block_that_edits_the_result_of_the_previous_block_still_applies():
    added = "    def build_man(self):\n        pass\n\n"
    first = block("    def build_info(self):\n", added + "    def build_info(self):\n")
    second = block("    def build_man(self):\n        pass\n", "    def build_man(self):\n        return 0\n")
    out = apply_search_replace(MAKE_MODE, first + second)
    assert "    def build_man(self):\n        return 0\n\n    def build_info(self):\n" in out.text


def test_ordered_choice():
    assert ordered_choice([[(1, 3)], [(5, 9), (20, 24)], [(10, 12)]]).picks == [0, 0, 0]
    many = ordered_choice([[(1, 3), (10, 12)], [(20, 22), (30, 32)]])
    assert many.picks is None and many.open == [0, 1]
    stuck = ordered_choice([[(10, 12)], [(1, 3)]])
    assert stuck.picks is None and stuck.stuck == 1


# ---------------------------------------------------------------- unperturbed edits that were refused


def test_rst_underlines_inside_search_replace_blocks():
    text = 'def choose_domain(self):\n    """Convert.\n\n    Examples\n    ========\n\n    >>> M\n    """\n'
    new = text.replace("    >>> M\n", "    >>> M\n    >>> M.choose_domain()\n")
    out = apply_search_replace(text, block(text, new))
    assert out.text == new
    top = "Heading\n========\n\nx = 1\n"  # an underline at column 0, longer than the divider
    out = apply_search_replace(top, block(top, top.replace("1", "2")))
    assert out.text == "Heading\n========\n\nx = 2\n"


def test_rst_underline_and_divider_that_cannot_be_told_apart():
    text = "<<<<<<< SEARCH\nx = 1\n=======\ny\n=======\nx = 2\n>>>>>>> REPLACE\n"
    err = refused(apply_search_replace, "x = 1\n", text)
    assert err.reason == "invalid_patch" and "divider" in err.message


def test_indent_unit_ignores_alignment_steps():
    lines = ["x = {", "    ('a',", "     'b'): 1,", "}"]
    assert indent_unit(lines) == 4
    assert indent_unit(["f(a,", " b)"]) == 1


def test_blank_lines_between_two_replaced_lines_stay_between_their_replacements():
    # flask ctx.py: the old text lacks the blank line between two lines the edit replaces one for one
    text = (
        "    def push(self) -> None:\n        self._cv_tokens.append(_cv_app.set(self))\n"
        "        appcontext_pushed.send(self.app)\n\n    def pop(self, exc=_sentinel) -> None:\n        pass\n"
    )
    old = "        appcontext_pushed.send(self.app)\n    def pop(self, exc=_sentinel) -> None:\n"
    new = "        appcontext_pushed.send(self.app, _async=True)\n    def pop(self, exc=None) -> None:\n"
    out = apply_str_replace(text, old, new)
    assert "_async=True)\n\n    def pop(self, exc=None)" in out.text


def test_blank_line_removal_where_the_old_text_lacks_one_of_the_file_blank_lines():
    # flask tests/test_basic.py: two blank lines become one; the old text shows one (removed) of the two
    text = "import flask\n\n\nrequire_cpython_gc = pytest.mark.skipif(\n"
    out = apply_udiff(text, "@@ @@\n import flask\n-\n require_cpython_gc = pytest.mark.skipif(\n")
    assert out.text == "import flask\n\nrequire_cpython_gc = pytest.mark.skipif(\n"


def test_new_text_with_the_file_blank_line_that_the_old_text_lacks_keeps_it_once():
    # the old text lacks the file's blank line, the new text has it: the new text's blank lines are the intent
    # (issue 52: such edits were refused as "does it add one?"); the result has it once, not twice
    old = "        self.name = name\n    def record(self, func: t.Callable) -> None:\n"
    new = "        self.name = name.strip()\n\n    def record(self, func: t.Callable) -> None:\n"
    out = apply_str_replace(BLUEPRINTS, old, new)
    assert "        self.name = name.strip()\n\n    def record(self, func: t.Callable) -> None:\n" in out.text
    assert out.text.count("\n") == BLUEPRINTS.count("\n") and out.level == "blank_lines"


def test_new_text_with_another_number_of_blank_lines_than_the_file_and_the_old_text_is_refused():
    # the old text lacks the file's blank line and the new text has two: add one, or write two? (a guess)
    old = "        self.name = name\n    def record(self, func: t.Callable) -> None:\n"
    new = "        self.name = name.strip()\n\n\n    def record(self, func: t.Callable) -> None:\n"
    err = refused(apply_str_replace, BLUEPRINTS, old, new)
    assert err.reason == "ambiguous" and err.level == "blank_lines"


def test_removal_that_would_keep_the_file_blank_lines_and_the_new_text_ones_is_refused():
    # requests setup.py: the old text lacks one of the file's two blank lines before a class it removes; kept as
    # the file has them and as the new text has them, three blank lines in a row (neither text nor file has three)
    text = "    sys.exit(1)\n\n\nclass PyTest(TestCommand):\n    pass\n\n\n# publish\nif x:\n    y()\n"
    old = "    sys.exit(1)\n\nclass PyTest(TestCommand):\n    pass\n\n\n# publish\n"
    new = "    sys.exit(1)\n\n\n# publish\n"
    try:
        out = apply_str_replace(text, old, new)
    except EditRefused as err:
        assert err.reason == "ambiguous" and err.level == "blank_lines", err.message
    else:
        assert out.text == "    sys.exit(1)\n\n\n# publish\nif x:\n    y()\n"


def test_added_lines_with_a_blank_line_where_the_old_text_lacks_the_file_one_are_refused():
    # xarray test_dask.py: is the new text's blank line the file's one, moved above the decorator, or one more?
    text = "        assert a\n        assert_equal(x, y)\n\n    def test_two(self):\n        pass\n"
    old = "        assert a\n        assert_equal(x, y)\n    def test_two(self):\n"
    new = ("        assert a\n        assert_equal(y, x)\n\n    @pytest.mark.xfail(reason='r')\n"
           "    def test_two(self):\n")
    err = refused(apply_str_replace, text, old, new)
    assert err.reason == "ambiguous" and err.level == "blank_lines" and "of their own" in err.message


COMPAT = (
    "import importlib\nimport sys\n\n# -------------------\n# Character Detection\n# -------------------\n\n\n"
    "def _resolve_char_detection():\n    pass\n"
)
"""requests 2.32.3's ``compat.py`` head (2.32.4 put a urllib3 section between ``import sys`` and the next one)."""


def test_new_lines_between_the_files_blank_lines_restated_on_both_sides_are_the_result():
    # The old text misses the file's blank line after "import sys"; the new text puts a section there with a
    # blank line before and after it: both sides restate the file's blank line, so the missing one was noise.
    old = "import sys\n# -------------------\n"
    section = "# urllib3\nfrom urllib3 import __version__ as urllib3_version\n\nis_urllib3_1 = True\n"
    out = apply_str_replace(COMPAT, old, f"import sys\n\n{section}\n# -------------------\n")
    assert out.status == "applied"
    assert out.text == COMPAT.replace("import sys\n\n", f"import sys\n\n{section}\n")


def test_new_lines_that_restate_the_files_blank_line_on_one_side_only_are_refused():
    # "import sys / X / blank / # ---": the old text missed the blank line, and X was appended to the imports;
    # or the new text dropped it too, and X is a section of its own. The two are the same edit: refused.
    err = refused(apply_str_replace, COMPAT, "import sys\n# -------------------\n",
                  "import sys\nimport os\n\n# -------------------\n")
    assert err.reason == "ambiguous" and err.level == "blank_lines"
    assert "after line 2" in err.message and "which side" in err.message


def test_an_extra_blank_line_of_the_old_text_with_new_lines_and_none_around_them_is_noise():
    text = "import os\nimport sys\n\n\ndef main():\n    pass\n"
    out = apply_str_replace(text, "import os\n\nimport sys\n", "import os\nimport re\nimport sys\n")
    assert out.status == "applied"
    assert out.text == text.replace("import os\n", "import os\nimport re\n")


ENCODINGS = (
    "class TestContentEncodingDetection:\n\n    def test_none(self):\n"
    "        encodings = get_encodings_from_content('')\n        assert not len(encodings)\n\n"
    "    @pytest.mark.parametrize(\n        'content', (\n            '<meta charset=\"UTF-8\">',\n        ))\n"
    "    def test_pragmas(self, content):\n        pass\n"
)
"""requests 2.27.1's ``tests/test_utils.py``, shortened (2.28.0 reformatted it with black)."""


def test_a_blank_line_paired_across_changed_lines_does_not_stop_the_skeletons_result():
    # The old text misses the blank line before the decorator; the new text drops the one after the class line
    # and has the one before the decorator. Line for line, difflib pairs the class's blank line with the
    # decorator's, which would pile two blank lines up there; on the non-blank lines the edit is clear.
    old = ENCODINGS.replace("len(encodings)\n\n", "len(encodings)\n")
    new = (old.replace(":\n\n    def", ":\n    def").replace("content('')", 'content("")')
           .replace("len(encodings)\n", "len(encodings)\n\n").replace("'content', (", '"content",\n        ('))
    out = apply_str_replace(ENCODINGS, old, new)
    assert out.status == "applied"
    assert out.text == new
