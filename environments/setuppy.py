"""What a ``setup.py`` declares, read with ``ast`` and never run (it is the repository's code).

Only literal values are understood: constants, lists, tuples, dicts, ``dict(...)`` calls, names assigned a literal
at module level, ``+`` of lists and strings. Anything else is left out and said in ``notes``.

Evaluation is bounded: a name is evaluated once (memoised; a name that refers to itself is unknown), at most
``MAX_NODES`` nodes are visited and no value grows past ``MAX_SIZE`` items or characters per argument (``x = [x, x]``
repeated, strings doubled): past a bound that argument is given up, with a note.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

MAX_SOURCE = 512 * 1024
MAX_NODES = 100_000
"""Syntax nodes visited to evaluate one argument of setup()."""
MAX_SIZE = 1_000_000
"""Items and characters of one evaluated value."""


@dataclass
class SetupFacts:
    found: bool = False
    """A ``setup(...)`` call was found."""
    install_requires: list[str] = field(default_factory=list)
    extras_require: dict[str, list[str]] = field(default_factory=dict)
    tests_require: list[str] = field(default_factory=list)
    setup_requires: list[str] = field(default_factory=list)
    python_requires: str | None = None
    classifiers: list[str] = field(default_factory=list)
    scm: bool = False
    """setuptools_scm / use_scm_version."""
    extensions: bool = False
    """C extensions (ext_modules, Extension, cythonize...)."""
    reads_files: list[str] = field(default_factory=list)
    """Requirement files the script opens (their names as literals)."""
    notes: list[str] = field(default_factory=list)


_UNKNOWN = object()


class _GiveUp(Exception):
    """An argument past a bound of the module docstring."""


class _Evaluator:
    def __init__(self, names: dict[str, ast.expr]) -> None:
        self.names = names
        self.depth = 0
        self.visited = 0
        self.memo: dict[str, Any] = {}
        self.active: set[str] = set()
        self.sizes: dict[int, int] = {}
        self.keep: list[Any] = []

    def top(self, node: ast.AST, what: str, notes: list[str]) -> Any:
        """The value of one argument, or _UNKNOWN (with a note) past a bound."""
        self.visited = 0
        try:
            return self.value(node)
        except _GiveUp as exc:
            self.active.clear()
            self.depth = 0
            notes.append(f"setup.py: {what} is too large to evaluate ({exc}): not read")
            return _UNKNOWN

    def value(self, node: ast.AST) -> Any:
        self.visited += 1
        if self.visited > MAX_NODES:
            raise _GiveUp(f"more than {MAX_NODES} steps")
        self.depth += 1
        try:
            if self.depth > 50:
                return _UNKNOWN
            return self._value(node)
        finally:
            self.depth -= 1

    def size(self, value: Any) -> int:
        if isinstance(value, str | bytes):
            return len(value)
        return self.sizes.get(id(value), 1)

    @staticmethod
    def check(size: int) -> int:
        if size > MAX_SIZE:
            raise _GiveUp(f"more than {MAX_SIZE} items or characters")
        return size

    def made(self, value: Any, size: int) -> Any:
        self.check(size)
        self.sizes[id(value)] = size
        self.keep.append(value)  # ids stay unique while the evaluator lives
        return value

    def _value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.value(e) for e in node.elts]
            if any(i is _UNKNOWN for i in items):
                return _UNKNOWN
            return self.made(list(items), 1 + sum(self.size(i) for i in items))
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    merged = self.value(v)
                    if not isinstance(merged, dict):
                        return _UNKNOWN
                    out.update(merged)
                    continue
                key, val = self.value(k), self.value(v)
                if key is _UNKNOWN or not isinstance(key, str):
                    return _UNKNOWN
                out[key] = val
            return self.made(out, 1 + sum(self.size(k) + self.size(v) for k, v in out.items()))
        if isinstance(node, ast.Name):
            if node.id in self.memo:
                return self.memo[node.id]
            bound = self.names.get(node.id)
            if bound is None or node.id in self.active:
                return _UNKNOWN
            self.active.add(node.id)
            try:
                got = self.value(bound)
            finally:
                self.active.discard(node.id)
            self.memo[node.id] = got
            return got
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(left, list) and isinstance(right, list):
                size = self.check(self.size(left) + self.size(right))  # before the list is made
                return self.made(left + right, size)
            if isinstance(left, str) and isinstance(right, str):
                self.check(len(left) + len(right))
                return left + right
            return _UNKNOWN
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" \
                and not node.args:
            out = {}
            for kw in node.keywords:
                val = self.value(kw.value)
                if kw.arg is None:
                    if not isinstance(val, dict):
                        return _UNKNOWN
                    out.update(val)
                else:
                    out[kw.arg] = val
            return self.made(out, 1 + sum(self.size(k) + self.size(v) for k, v in out.items()))
        return _UNKNOWN


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    return None


def read_setup_py(source: str) -> SetupFacts:
    """The facts of a setup.py's ``setup(...)`` call (see the module docstring)."""
    facts = SetupFacts()
    if len(source) > MAX_SOURCE:
        facts.notes.append("setup.py is too large to read")
        return facts
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        facts.notes.append(f"setup.py does not parse as Python 3 ({type(exc).__name__})")
        return facts
    names: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value
    facts.scm = "use_scm_version" in source or "setuptools_scm" in source
    builders = {"Extension", "Pybind11Extension", "cythonize", "get_extensions", "setup_extensions",
                "CTypes", "RustExtension", "CMakeExtension"}
    facts.extensions = any(isinstance(node, ast.Call) and (getattr(node.func, "id", None) in builders
                                                           or getattr(node.func, "attr", None) in builders)
                           for node in ast.walk(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and "requirement" in arg.value.lower():
                facts.reads_files.append(arg.value.lstrip("./"))
    call = _setup_call(tree)
    if call is None:
        facts.notes.append("setup.py has no setup(...) call bosun can read")
        return facts
    facts.found = True
    ev = _Evaluator(names)
    kwargs: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            spread = ev.top(kw.value, "its **arguments", facts.notes)
            if isinstance(spread, dict):
                kwargs.update(spread)
            else:
                facts.notes.append("setup.py passes **arguments bosun cannot read")
            continue
        kwargs[kw.arg] = ev.top(kw.value, kw.arg, facts.notes)
    for key in ("install_requires", "tests_require", "setup_requires"):
        if key in kwargs:
            got = _strings(kwargs[key])
            if got is None:
                facts.notes.append(f"setup.py computes {key}: not read")
            else:
                setattr(facts, key, got)
    extras = kwargs.get("extras_require")
    if isinstance(extras, dict):
        for name, reqs in extras.items():
            got = _strings(reqs)
            if got is not None:
                facts.extras_require[str(name)] = got
    elif "extras_require" in kwargs:
        facts.notes.append("setup.py computes extras_require: only the extras' names are unknown")
    if isinstance(kwargs.get("python_requires"), str):
        facts.python_requires = kwargs["python_requires"]
    classifiers = _strings(kwargs.get("classifiers")) if "classifiers" in kwargs else None
    facts.classifiers = classifiers or []
    if kwargs.get("use_scm_version"):
        facts.scm = True
    ext = kwargs.get("ext_modules", None)
    if ext not in ([], None, ()) and (ext is not _UNKNOWN or "Extension" in source or "cythoniz" in source):
        facts.extensions = True  # extensions listed, or computed by code that builds some
    return facts


def _setup_call(tree: ast.Module) -> ast.Call | None:
    found = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
        if name == "setup" and (node.keywords or node.args):
            if found is None or len(node.keywords) > len(found.keywords):
                found = node
    return found
