"""Which tree-sitter language a file is written in (by file name or extension).

One table for the edit engine's syntax check (every grammar tree-sitter-language-pack bundles that we map) and
for symbol extraction (which supports a subset: ``agents.search.symbols``).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from infra.names import os_name

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".lua": "lua",
    ".dart": "dart",
    ".sh": "bash",
    ".bash": "bash",
    ".zig": "zig",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".mli": "ocaml_interface",
    ".jl": "julia",
    ".r": "r",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".vue": "vue",
    ".svelte": "svelte",
    ".tf": "hcl",
    ".hcl": "hcl",
    ".proto": "proto",
    ".sql": "sql",
    ".nix": "nix",
    ".clj": "clojure",
    ".elm": "elm",
}
FILENAMES: dict[str, str] = {"Dockerfile": "dockerfile", "CMakeLists.txt": "cmake"}


def language_for(path: str) -> str | None:
    """tree-sitter language name for ``path`` (by file name or extension; a name shown quoted, ``infra.names``, by
    the name it stands for), or None."""
    if path.startswith('"'):
        try:
            path = os_name(path)
        except ValueError:
            pass
    p = PurePosixPath(path.replace("\\", "/"))
    if p.name in FILENAMES:
        return FILENAMES[p.name]
    return EXTENSIONS.get(p.suffix.lower()) or EXTENSIONS.get(p.suffix)
