"""What a ``setup.py`` declares, read with ``ast`` and never run (it is the repository's code).

Only literal values are understood: constants, lists, tuples, dicts, ``dict(...)`` calls, names assigned a literal
at module level, ``+`` of lists and strings. Anything else is left out and said in ``notes``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

MAX_SOURCE = 512 * 1024


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


class _Evaluator:
    def __init__(self, names: dict[str, ast.expr]) -> None:
        self.names = names
        self.depth = 0

    def value(self, node: ast.AST) -> Any:
        self.depth += 1
        try:
            if self.depth > 50:
                return _UNKNOWN
            return self._value(node)
        finally:
            self.depth -= 1

    def _value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.value(e) for e in node.elts]
            return _UNKNOWN if any(i is _UNKNOWN for i in items) else list(items)
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
            return out
        if isinstance(node, ast.Name):
            bound = self.names.get(node.id)
            return self.value(bound) if bound is not None else _UNKNOWN
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
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
            return out
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
            spread = ev.value(kw.value)
            if isinstance(spread, dict):
                kwargs.update(spread)
            else:
                facts.notes.append("setup.py passes **arguments bosun cannot read")
            continue
        kwargs[kw.arg] = ev.value(kw.value)
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
