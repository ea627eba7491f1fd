"""The layer rule (docs/ARCHITECTURE.md, "Layers") holds: import-linter's contracts in pyproject.toml are kept,
and project modules are imported at the top of a module, never inside a function (where cycles hide) unless the
line says why with ``# lazy: REASON`` (a command that must start fast loads what only one of its paths uses)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAZY = re.compile(r"#\s*lazy:\s*\S")
"""The mark of a function-level import that is meant: ``# lazy: REASON`` on its line."""
PACKAGES = ("entry", "infra", "evaluation", "workflows", "activities", "agents", "environments", "sandbox", "bench")


def test_import_contracts_are_kept():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "3 kept, 0 broken" in proc.stdout


def function_level_imports(root: Path = ROOT) -> list[str]:
    found = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            if pkg == "bench" and path.parent == root / "bench":
                continue  # benchmark scripts, run as files
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines()
            tree = ast.parse(text)
            for fn in ast.walk(tree):
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(fn):
                    if LAZY.search(lines[node.lineno - 1] if hasattr(node, "lineno") else ""):
                        continue
                    if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0]
                                                             in PACKAGES):
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
                    elif isinstance(node, ast.Import) and any(a.name.split(".")[0] in PACKAGES
                                                              for a in node.names):
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_project_modules_are_imported_at_module_level():
    assert function_level_imports() == []


def test_the_checker_sees_a_function_level_import(tmp_path):
    """The check above can fail: function-level imports of project modules are found, others are not."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mod.py").write_text(
        "import json\n\n\ndef f():\n    import docker\n    from infra.errors import ConfigError\n"
        "    from . import sibling\n    import sandbox.base\n    return ConfigError\n\n\ndef g():\n"
        "    from infra.settings import Settings  # lazy: the command starts faster\n"
        "    from infra.names import shown  # lazy:\n    return Settings, shown\n")
    assert function_level_imports(tmp_path) == ["agents/mod.py:6", "agents/mod.py:7", "agents/mod.py:8",
                                                "agents/mod.py:14"]  # (a mark without a reason is no mark)


SURFACED = ("infra", "sandbox", "environments", "agents", "activities", "workflows", "evaluation")
"""The packages whose ``__init__`` names what the packages above import from them."""


def cross_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """For each package of SURFACED: its modules that another top-level package imports (dotted, below it)."""
    used: dict[str, set[str]] = {pkg: set() for pkg in SURFACED}
    for pkg in (*SURFACED, "entry"):
        for path in (root / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else \
                    [a.name for a in node.names] if isinstance(node, ast.Import) else []
                for name in names:
                    top, _, rest = name.partition(".")
                    if top in used and top != pkg and rest:
                        used[top].add(rest)
    return used


def unnamed_surfaces(root: Path = ROOT) -> list[str]:
    missing = []
    for pkg, modules in cross_imports(root).items():
        doc = ast.get_docstring(ast.parse((root / pkg / "__init__.py").read_text(encoding="utf-8"))) or ""
        missing += [f"{pkg}.{m}" for m in sorted(modules) if f"``{m}``" not in doc]
    return missing


def test_each_package_names_what_the_others_import_from_it():
    """A package's surface is read in its ``__init__``, not by reading all of it: every module another package
    imports is listed there, with what it offers."""
    assert unnamed_surfaces() == []


def test_the_surface_check_sees_a_module_left_out(tmp_path):
    for pkg in (*SURFACED, "entry"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text('"""- ``errors``: the errors."""\n' if pkg == "infra" else "")
    (tmp_path / "agents" / "turn.py").write_text("from infra.errors import X\nimport infra.settings\n")
    (tmp_path / "infra" / "errors.py").write_text("from infra.names import Y\n")  # (its own: not a surface)
    assert unnamed_surfaces(tmp_path) == ["infra.settings"]
