"""Signals pulled from a task's text: file paths, stack-trace frames, identifiers, error types.

Frame styles understood:

* Python: ``File "pkg/mod.py", line 12, in func``
* JavaScript/TypeScript (V8): ``at func (src/app.js:10:5)`` and ``at src/app.js:10:5``
* Go: ``pkg.(*T).Method(...)`` followed by ``\\t/path/file.go:42 +0x1d``
* Java/Kotlin: ``at com.acme.Foo.bar(Foo.java:31)``
* Rust: ``at src/lib.rs:12:5`` (backtraces) and ``panicked at src/main.rs:3:5``
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Extensions that make a token look like a source file path.
_PATH_EXTS = (
    "py|pyi|pyx|js|jsx|mjs|cjs|ts|tsx|mts|go|rs|java|kt|scala|c|h|cc|cpp|cxx|hpp|hh|rb|php|cs|swift|"
    "toml|cfg|ini|yaml|yml|json|md|rst|txt|html|css|sql|sh"
)
_PATH = re.compile(rf"(?<![\w./\\-])((?:[A-Za-z]:)?[\w.\\/@+-]*?[\w-]+\.(?:{_PATH_EXTS}))(?![\w])")
_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?')
_JS_FRAME = re.compile(r"\bat (?:(?:async )?([\w$.<>\[\] ]+?) \()?((?:file://)?[^\s():]+\.[cm]?[jt]sx?):(\d+)(?::\d+)?\)?")
_GO_FRAME = re.compile(r"^\s+(\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?\s*$", re.M)
_GO_FUNC = re.compile(r"^([\w./-]+\.(?:\(\*?\w+\)\.)?\w+)\(.*\)\s*$", re.M)
_JAVA_FRAME = re.compile(r"\bat ((?:[\w$]+\.)+[\w$<>]+)\(([\w$]+\.(?:java|kt|scala)):(\d+)\)")
_RUST_FRAME = re.compile(r"(?:\bat|panicked at) '?((?:[\w.-]+/)*[\w-]+\.rs):(\d+)(?::\d+)?")
_URL = re.compile(r"\b(?:https?|ftp|file)://\S+")
_BACKTICK = re.compile(r"(?<!`)`([^`\n]{1,200})`(?!`)")
_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_ERROR = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Panic|Fault)|panic|Traceback)\b")
_ERROR_LINE = re.compile(r"^\s*((?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning))\s*:\s*(.+?)\s*$", re.M)
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_CAMEL = re.compile(r"^[A-Z]?[a-z0-9]+(?:[A-Z][a-z0-9]*)+$|^[A-Z]{2,}[a-z]\w*$")


@dataclass(frozen=True)
class Frame:
    """One stack-trace frame: file path, line number and function name ('' when not shown)."""

    path: str
    line: int
    function: str
    style: str  # python | js | go | java | rust


@dataclass
class Signals:
    """What a task text points at. ``identifiers`` maps each name to a strength in (0, 1]."""

    paths: list[str] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    identifiers: dict[str, float] = field(default_factory=dict)
    dotted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    def add_identifier(self, name: str, strength: float) -> None:
        if len(name) < 2 or name.isdigit():
            return
        if strength > self.identifiers.get(name, 0.0):
            self.identifiers[name] = strength


def _is_code_like(word: str) -> bool:
    """True for snake_case, camelCase/CamelCase, dunder or ALL_CAPS_WITH_UNDERSCORE words."""
    if "_" in word.strip("_") or word.startswith("__"):
        return True
    return bool(_CAMEL.match(word))


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def extract_signals(text: str) -> Signals:
    """Parse a task description (issue text, error output) into :class:`Signals`."""
    sig = Signals()
    frames: list[Frame] = []
    for m in _PY_FRAME.finditer(text):
        frames.append(Frame(m.group(1), int(m.group(2)), m.group(3) or "", "python"))
    for m in _JAVA_FRAME.finditer(text):
        qual = m.group(1)
        cls_path = qual.rsplit(".", 1)[0].replace(".", "/")
        pkg_dir = cls_path.rsplit("/", 1)[0] if "/" in cls_path else ""
        path = f"{pkg_dir}/{m.group(2)}" if pkg_dir else m.group(2)
        frames.append(Frame(path, int(m.group(3)), qual.rsplit(".", 1)[-1], "java"))
    for m in _JS_FRAME.finditer(text):
        path = m.group(2).removeprefix("file://")
        frames.append(Frame(path, int(m.group(3)), (m.group(1) or "").strip(), "js"))
    go_funcs = {m.end(): m.group(1) for m in _GO_FUNC.finditer(text)}
    for m in _GO_FRAME.finditer(text):
        func = ""
        before = [pos for pos in go_funcs if pos <= m.start() + 1]
        if before:
            func = go_funcs[max(before)].rsplit(".", 1)[-1]
        frames.append(Frame(m.group(1), int(m.group(2)), func, "go"))
    for m in _RUST_FRAME.finditer(text):
        frames.append(Frame(m.group(1), int(m.group(2)), "", "rust"))
    sig.frames = frames

    no_urls = _URL.sub(" ", text)
    paths = [m.group(1).replace("\\", "/") for m in _PATH.finditer(no_urls)]
    paths += [f.path.replace("\\", "/") for f in frames]
    sig.paths = _unique([p for p in paths if "<" not in p and not p.startswith(("http:", "https:", "www."))])

    # Identifiers: backticked code > names in fenced code, call sites, code-shaped words in prose.
    for m in _BACKTICK.finditer(text):
        snippet = m.group(1)
        words = _WORD.findall(snippet)
        for w in words:
            sig.add_identifier(w, 1.0 if len(words) <= 3 else 0.8)
    for m in _FENCE.finditer(text):
        for w in _WORD.findall(m.group(1)):
            sig.add_identifier(w, 0.7 if _is_code_like(w) else 0.4)
    for m in _CALL.finditer(text):
        sig.add_identifier(m.group(1), 0.7)
    for f in frames:
        if f.function and not f.function.startswith("<"):
            for part in f.function.split("."):
                sig.add_identifier(part, 0.8)
    for w in _WORD.findall(text):
        if _is_code_like(w):
            sig.add_identifier(w, 0.6)
    for m in _DOTTED.finditer(text):
        name = m.group(0)
        if re.search(rf"\.(?:{_PATH_EXTS})$", name) or name.startswith(("www.", "e.g", "i.e")):
            continue
        sig.dotted.append(name)
        for part in name.split("."):
            sig.add_identifier(part, 0.7)
    sig.dotted = _unique(sig.dotted)
    sig.errors = _unique([m.group(1) for m in _ERROR.finditer(text) if m.group(1) != "Traceback"])
    sig.messages = _unique([m.group(2) for m in _ERROR_LINE.finditer(text) if len(m.group(2)) >= 8])
    return sig


_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s*|\*\*)(.+?)\**\s*:?\s*$")
_BOILER_HEADING = re.compile(
    r"environment|versions?\b|system info|platform|installation|operating system|screenshots?|checklist|"
    r"additional context|related issues?|^setup$",
    re.I,
)
_BOILER_LINE = re.compile(
    r"^\s*(?:[-*]\s*)?(?:os|python|python version|platform|browser|version|installed versions?|"
    r"[\w.-]+ version|matplotlib backend|sphinx extensions|extra tools|operating system)\s*[:=]",
    re.I,
)


def strip_boilerplate(text: str) -> str:
    """Task text without issue-template boilerplate: environment/version sections and lines such as
    ``- OS: Linux``, which name no code but carry rare words that mislead BM25."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m and len(line) < 80:
            skipping = bool(_BOILER_HEADING.search(m.group(1)))
            if skipping:
                continue
        if skipping or _BOILER_LINE.match(line):
            continue
        out.append(line)
    return "\n".join(out)
