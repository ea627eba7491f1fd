"""Which ecosystems a repository's files show, and what to say when bosun cannot detect its environment (pure).

Detection knows Python, JavaScript/TypeScript, Go, Rust and Java projects (``kind``). A repository with none of
their marks but another ecosystem's (a Ruby ``Gemfile``) would otherwise be taken for Python without a word:
``unsupported`` gives the warning that ``bosun env show`` and ``bosun run`` print, naming what was found and the
declaration that would do.
"""

from __future__ import annotations

import re

DECLARED_FILE = ".bosun/environment.toml"
"""Where a repository declares its environment (environments/declared.py reads it)."""

PYTHON_MARKS = re.compile(r"^(setup\.py|setup\.cfg|pyproject\.toml|Pipfile|tox\.ini|pytest\.ini|environment\.ya?ml|"
                          r"requirements[^/]*\.(txt|in)|requirements/[^/]+\.(txt|in))$")
"""A repository with any of these at its top is a Python project for detection."""
CODE_FILE = re.compile(r"\.(js|mjs|cjs|jsx|ts|mts|cts|tsx|go|rs|java|kt)$")
"""Source files of the other ecosystems detection knows: a repository with more of them than .py files is not a
Python project unless its Python configuration says so."""
SOURCES = {"node": re.compile(r"\.(js|mjs|cjs|jsx|ts|mts|cts|tsx)$"), "go": re.compile(r"\.go$"),
           "rust": re.compile(r"\.rs$"), "java": re.compile(r"\.(java|kt)$")}
"""Each detected ecosystem's source files (which one a repository with the marks of several is)."""
DETECTED = {"package.json": "node", "go.mod": "go", "go.work": "go", "Cargo.toml": "rust", "pom.xml": "java",
            "build.gradle": "java", "build.gradle.kts": "java", "settings.gradle": "java",
            "settings.gradle.kts": "java"}
"""The marks at the top of a repository whose ecosystem detection knows beside Python (the first found wins)."""

OTHERS: tuple[tuple[str, str, str], ...] = (
    ("Gemfile", "Ruby", 'install = false\napt = ["ruby-full", "bundler"]\nsetup = ["bundle install"]\n'
                        'test_command = "bundle exec rake test"'),
    ("composer.json", "PHP", 'install = false\napt = ["php-cli", "composer"]\nsetup = ["composer install"]\n'
                             'test_command = "vendor/bin/phpunit"'),
    ("CMakeLists.txt", "C/C++ (CMake)", 'install = false\napt = ["cmake", "g++"]\n'
                                        'setup = ["cmake -B build", "cmake --build build"]\n'
                                        'test_command = "ctest --test-dir build"'),
)
"""(file at the top, ecosystem, an example declaration that builds and tests it)."""


def found(paths: list[str]) -> list[tuple[str, str, str]]:
    """The other ecosystems whose marks are at the top of ``paths`` (repository-relative, '/'-separated)."""
    top = {p for p in paths if "/" not in p}
    return [entry for entry in OTHERS if entry[0] in top]


def is_python(paths: list[str]) -> bool:
    """Whether ``paths`` show a Python project: its configuration at the top, or Python files at least as many as
    JavaScript/TypeScript, Go, Rust, Java and Kotlin ones (outside hidden folders: a CI job's script in .github/
    makes no project Python)."""
    if any(PYTHON_MARKS.match(p) for p in paths if "/" not in p or p.startswith("requirements/")):
        return True
    code = [p for p in paths if not any(part.startswith(".") or part == "node_modules" for part in p.split("/")[:-1])]
    py = sum(1 for p in code if p.endswith(".py"))
    return py > 0 and py >= sum(1 for p in code if CODE_FILE.search(p))


def kind(paths: list[str]) -> str:
    """The ecosystem detection builds ``paths`` as: ``python`` (also when nothing is recognised), ``node``, ``go``,
    ``rust`` or ``java``."""
    top = {p for p in paths if "/" not in p}
    marks = list(dict.fromkeys(DETECTED[name] for name in DETECTED if name in top))
    if not marks or is_python(paths):
        return "python"
    if len(marks) == 1:
        return marks[0]
    # several (a Go module with a package.json for its commit hooks): the one with the most source files
    counts = {kind: sum(1 for p in paths if SOURCES[kind].search(p)) for kind in marks}
    return max(marks, key=lambda kind: counts[kind])


def unsupported(paths: list[str]) -> str:
    """The warning for a repository detection cannot handle (no marks of an ecosystem it knows, another's), else
    ''."""
    others = found(paths)
    if not others or kind(paths) != "python" or is_python(paths) or DECLARED_FILE in paths:
        return ""
    marks = ", ".join(f"{name} ({what})" for name, what, _ in others)
    example = "\n".join(f"    {line}" for line in others[0][2].splitlines())
    return (f"not detected: this is not a Python project (found {marks}; no setup.py, pyproject.toml, requirement "
            "file or .py file), and bosun detects only Python, JavaScript/TypeScript, Go, Rust and Java environments "
            "so far. Without a declaration its tests would run as `python -m pytest` in a Python environment, which "
            "finds none. Declare the environment "
            f"in .bosun/environment.toml, for example:\n{example}\nor name the image that has its tools: "
            'dockerfile = "Dockerfile" (or a .devcontainer/devcontainer.json with an image or build.dockerfile) '
            "and its test_command (docs/environments.md)")
