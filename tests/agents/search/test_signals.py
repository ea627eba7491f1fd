"""Signals from task text."""

from __future__ import annotations

from agents.search.signals import extract_signals, strip_boilerplate

PY_TRACE = '''Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/usr/lib/python3/dist-packages/astropy/io/ascii/core.py", line 1719, in _get_writer
    writer = Writer(**writer_kwargs)
TypeError: RST.__init__() got an unexpected keyword argument 'header_rows'
'''


def test_python_frames_paths_and_errors() -> None:
    sig = extract_signals(PY_TRACE)
    frame = sig.frames[-1]
    assert (frame.path, frame.line, frame.function, frame.style) == (
        "/usr/lib/python3/dist-packages/astropy/io/ascii/core.py", 1719, "_get_writer", "python")
    assert "/usr/lib/python3/dist-packages/astropy/io/ascii/core.py" in sig.paths
    assert not any("<" in p for p in sig.paths)
    assert sig.errors == ["TypeError"]
    assert sig.messages == ["RST.__init__() got an unexpected keyword argument 'header_rows'"]
    assert "RST.__init__" in sig.dotted
    assert sig.identifiers["_get_writer"] >= 0.8


def test_js_go_java_rust_frames() -> None:
    text = "\n".join([
        "TypeError: x is undefined",
        "    at Object.parse (/home/u/proj/src/parser.js:10:5)",
        "    at /home/u/proj/index.mjs:3:1",
        "goroutine 1 [running]:",
        "main.(*Server).Handle(0x0)",
        "\t/home/u/go/src/app/server.go:42 +0x1d",
        "Exception in thread \"main\" java.lang.NullPointerException",
        "    at com.acme.core.Foo.bar(Foo.java:31)",
        "thread 'main' panicked at src/main.rs:3:5",
    ])
    frames = {}
    for f in extract_signals(text).frames:
        frames.setdefault(f.style, f)
    assert frames["js"].path == "/home/u/proj/src/parser.js" and frames["js"].line == 10
    assert frames["js"].function == "Object.parse"
    assert frames["go"].path == "/home/u/go/src/app/server.go" and frames["go"].function == "Handle"
    assert frames["java"].path == "com/acme/core/Foo.java" and frames["java"].function == "bar"
    assert frames["rust"].path == "src/main.rs" and frames["rust"].line == 3


def test_identifiers_backticks_code_and_prose() -> None:
    text = (
        "Calling `separability_matrix` on a CompoundModel breaks.\n"
        "```python\nfrom astropy.modeling import models as m\ncm = m.Linear1D(10)\n```\n"
        "See models.Pix2Sky_TAN and get_writer() too; plain words like matrix are not identifiers."
    )
    sig = extract_signals(text)
    assert sig.identifiers["separability_matrix"] == 1.0
    assert "CompoundModel" in sig.identifiers and "Linear1D" in sig.identifiers
    assert "get_writer" in sig.identifiers
    assert "matrix" not in sig.identifiers
    assert "astropy.modeling" in sig.dotted and "models.Pix2Sky_TAN" in sig.dotted


def test_plain_paths_windows_paths_and_urls() -> None:
    sig = extract_signals("Edit src/app/util.ts and lib\\win\\x.go, not https://example.com/a.py")
    assert "src/app/util.ts" in sig.paths and "lib/win/x.go" in sig.paths
    assert not any(p.startswith("http") or "example.com" in p for p in sig.paths)


def test_empty_text() -> None:
    sig = extract_signals("")
    assert sig.paths == [] and sig.frames == [] and sig.identifiers == {} and sig.errors == []


def test_strip_boilerplate_drops_environment_sections() -> None:
    text = (
        "Title line\n**Describe the bug**\nautodoc fails on `Struct`\n"
        "**Environment info**\n- OS: Ubuntu 18.04\n- Sphinx version: 3.2.1\n"
        "### Steps\nrun make html\nPython version: 3.8\n"
    )
    out = strip_boilerplate(text)
    assert "autodoc fails" in out and "run make html" in out and out.startswith("Title line")
    assert "Ubuntu" not in out and "3.2.1" not in out and "Python version" not in out
