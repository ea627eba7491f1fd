"""The layer rule (docs/ARCHITECTURE.md, "Layers") holds: import-linter's contracts in pyproject.toml are kept,
and project modules are imported at the top of a module, never inside a function (where cycles hide)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for fn in ast.walk(tree):
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(fn):
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
        "    from . import sibling\n    import sandbox.base\n    return ConfigError\n")
    assert function_level_imports(tmp_path) == ["agents/mod.py:6", "agents/mod.py:7", "agents/mod.py:8"]
