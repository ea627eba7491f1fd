"""Third-party modules the tests import, for projects that do not declare their test dependencies (pure).

Test files and conftest.py files are parsed with ``ast`` (never run; bounded in number and size). A module counts
when it is imported at module level outside ``try`` (an optional import is guarded), is not in the standard
library, and is not the project's own (a top-level directory or module of the repository, anywhere in it). The
distribution is the module's name unless a table says otherwise (``yaml`` -> ``PyYAML``); guesses are marked so
the installer can drop the ones the index does not know.
"""

from __future__ import annotations

import re
import sys

MAX_TEST_FILES = 1500
MODULE_TO_DIST = {
    "yaml": "PyYAML", "PIL": "Pillow", "dateutil": "python-dateutil", "sklearn": "scikit-learn",
    "skimage": "scikit-image", "bs4": "beautifulsoup4", "attr": "attrs", "OpenSSL": "pyOpenSSL",
    "Crypto": "pycryptodome", "jwt": "PyJWT", "git": "GitPython", "zmq": "pyzmq", "serial": "pyserial",
    "cv2": "opencv-python-headless", "magic": "python-magic", "dotenv": "python-dotenv", "jose": "python-jose",
    "markdown": "Markdown", "mpl_toolkits": "matplotlib", "google": "protobuf", "pkg_resources": "setuptools",
    "setuptools": "setuptools", "_pytest": "pytest", "py": "py", "pytest_httpbin": "pytest-httpbin",
    "pytest_mock": "pytest-mock", "pytest_asyncio": "pytest-asyncio", "pytest_localserver": "pytest-localserver",
    "pytest_benchmark": "pytest-benchmark", "typing_extensions": "typing-extensions", "mock": "mock",
    "nose": "nose", "freezegun": "freezegun", "hypothesis": "hypothesis", "docutils": "docutils",
    "importlib_metadata": "importlib-metadata", "importlib_resources": "importlib-resources",
    "ruamel": "ruamel.yaml", "win32api": "", "win32con": "", "pywintypes": "", "_winapi": "", "winreg": "",
    "msvcrt": "", "Foundation": "", "AppKit": "", "objc": "", "xdist": "pytest-xdist", "testpath": "testpath",
    "socks": "PySocks", "Levenshtein": "python-Levenshtein", "sphinx_testing": "sphinx-testing",
    "tomli_w": "tomli-w", "pexpect": "pexpect", "trustme": "trustme", "httpbin": "httpbin",
    "google.protobuf": "protobuf", "backports.zoneinfo": "backports.zoneinfo", "ruamel.yaml": "ruamel.yaml",
}
"""Import name -> distribution on PyPI where they differ ("" = platform-specific, never installed)."""
NAMESPACES = {"zope", "google", "azure", "backports", "jaraco", "sphinxcontrib", "ruamel", "plone", "repoze"}
"""Top-level names shared by many distributions: the distribution is named by the first two parts
(``zope.interface``), never the top-level name alone (``zope`` is an application server)."""


def stdlib() -> frozenset[str]:
    return frozenset(sys.stdlib_module_names) | {"__future__", "distutils", "imp", "asynchat", "asyncore",
                                                 "smtpd", "cgi", "cgitb", "nntplib", "telnetlib", "pipes",
                                                 "crypt", "sndhdr", "imghdr", "uu", "xdrlib", "audioop",
                                                 "chunk", "mailcap", "msilib", "nis", "ossaudiodev",
                                                 "spwd", "sunau", "lib2to3", "tkinter"}


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(".py"):
        return False
    if name == "conftest.py":
        return True
    return name.startswith("test_") or name.endswith("_test.py")


def local_names(paths: list[str]) -> set[str]:
    """Names importable from the repository itself: every directory and module name anywhere in it (a test
    helper module next to the tests is as local as the package)."""
    names: set[str] = set()
    for path in paths:
        parts = path.split("/")
        for part in parts[:-1]:
            names.add(part)
        if parts[-1].endswith((".py", ".pyx", ".so", ".pyi")):
            names.add(parts[-1].rsplit(".", 1)[0])
    return names


IMPORT_LINE = re.compile(r"^(?:import\s+([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)"
                         r"|from\s+([A-Za-z_][\w.]*)\s+import\b)", re.M)


def top_level_imports(source: str) -> list[str]:
    """Modules imported at module level, outside any block (an import inside ``try`` or ``if`` is indented, so
    optional and platform-specific imports are not counted): the top-level name, or the first two parts under a
    namespace (``zope.interface``). A line scan, not a parse: fast on thousands of test files, and nothing in them
    is evaluated."""
    found: list[str] = []
    for m in IMPORT_LINE.finditer(source):
        dotted = [p.split(" as ")[0].strip() for p in m.group(1).split(",")] if m.group(1) else [m.group(2)]
        for name in dotted:
            parts = name.split(".")
            found.append(".".join(parts[:2]) if parts[0] in NAMESPACES and len(parts) > 1 else parts[0])
    return found


def test_files(paths: list[str]) -> list[str]:
    """The test files of a tree whose texts detection reads (at most MAX_TEST_FILES)."""
    return [p for p in paths if is_test_file(p)][:MAX_TEST_FILES]


def required_imports(paths: list[str], tests: dict[str, str]) -> list[tuple[str, str]]:
    """(distribution, why) for the third-party modules the tests import (see the module docstring); ``tests``: the
    texts of the tree's ``test_files``."""
    if not tests:
        return []
    known_std = stdlib()
    local = local_names(paths)
    counts: dict[str, tuple[int, str]] = {}
    for path, text in tests.items():
        for mod in set(top_level_imports(text)):
            top = mod.split(".")[0]
            if top in known_std or top in local or top.startswith("_") and top != "_pytest":
                continue
            if top in NAMESPACES and "." not in mod:
                continue
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)?", mod):
                continue
            n, first = counts.get(mod, (0, path))
            counts[mod] = (n + 1, first)
    out = []
    for mod, (n, first) in sorted(counts.items()):
        dist = MODULE_TO_DIST.get(mod, mod.replace("_", "-"))
        if dist:
            out.append((dist, f"imported by {n} test file(s), e.g. {first}"))
    return out
