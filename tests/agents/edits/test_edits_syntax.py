"""tree-sitter syntax guard."""

from __future__ import annotations

import pytest

from agents.edits import EditRefused, apply_str_replace, check_edit_syntax, language_for, syntax_errors


@pytest.mark.parametrize(
    "path,good,bad",
    [
        ("m.py", "def f(x):\n    return x\n", "def f(x:\n    return x\n"),
        ("m.js", "function f(x) { return x; }\n", "function f(x { return x; }\n"),
        ("m.ts", "const a: number = 1;\n", "const a: number = ;\n"),
        ("m.tsx", "const a = <div>hi</div>;\n", "const a = <div>hi</div;\n"),
        ("m.go", "package main\nfunc main() {}\n", "package main\nfunc main( {}\n"),
        ("m.rs", "fn main() {}\n", "fn main( {}\n"),
        ("M.java", "class M { void f() {} }\n", "class M { void f( {} }\n"),
        ("m.c", "int main(void) { return 0; }\n", "int main(void) { return 0 }\n"),
        ("m.cpp", "int main() { return 0; }\n", "int main() { return 0 \n"),
        ("m.rb", "def f\n  1\nend\n", "def f\n  1\n"),
    ],
)
def test_languages(path, good, bad):
    assert syntax_errors(path, good) == []
    errors = syntax_errors(path, bad)
    assert errors, path
    assert all(isinstance(line, int) and line >= 1 and isinstance(desc, str) for line, desc in errors)


def test_unsupported_extension():
    assert language_for("notes.txt") is None
    assert syntax_errors("notes.txt", "anything (") is None
    assert check_edit_syntax("notes.txt", "a", "b (") == []
    assert language_for("Dockerfile") == "dockerfile"


def test_new_error_is_refused_with_location():
    before = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    after = apply_str_replace(before, "    return 2\n", "    return (2\n").text
    with pytest.raises(EditRefused) as info:
        check_edit_syntax("m.py", before, after)
    err = info.value
    assert err.reason == "syntax_error" and "reverted" in err.message
    assert err.lines and err.lines[0] >= 5
    assert "line " in err.message


def test_pre_existing_errors_are_tolerated():
    before = "def f(:\n    pass\n\nx = 1\n"
    after = before.replace("x = 1", "x = 2")
    kept = check_edit_syntax("m.py", before, after)
    assert kept and kept[0][0] == 1


def test_fixing_errors_passes():
    assert check_edit_syntax("m.py", "def f(:\n  pass\n", "def f():\n  pass\n") == []


def test_pre_existing_error_plus_new_one_is_refused():
    before = "def f(:\n    pass\n\nx = 1\n"
    after = before.replace("x = 1", "x = = 1")
    with pytest.raises(EditRefused) as info:
        check_edit_syntax("m.py", before, after)
    assert "already had" in info.value.message
