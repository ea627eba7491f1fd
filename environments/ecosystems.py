"""Which ecosystems a repository's files show, and what to say when bosun cannot detect its environment (pure).

Detection knows Python projects only. A repository with none of Python's marks but another ecosystem's (a Node
repository's ``package.json``) would otherwise be taken for Python without a word: ``unsupported`` gives the
warning that ``bosun env show`` and ``bosun run`` print, naming what was found and the declaration that would do.
"""

from __future__ import annotations

import re

from environments.declared import DECLARED_FILE

PYTHON_MARKS = re.compile(r"^(setup\.py|setup\.cfg|pyproject\.toml|Pipfile|tox\.ini|pytest\.ini|environment\.ya?ml|"
                          r"requirements[^/]*\.(txt|in)|requirements/[^/]+\.(txt|in))$")
"""A repository with any of these at its top is a Python project for detection."""
JS_FILE = re.compile(r"\.(js|mjs|cjs|jsx|ts|mts|cts|tsx)$")

OTHERS: tuple[tuple[str, str, str], ...] = (
    ("go.mod", "Go", 'install = false\napt = ["golang-go"]\nsetup = ["go mod download"]\n'
                     'test_command = "go test ./..."'),
    ("Cargo.toml", "Rust", 'install = false\napt = ["cargo"]\nsetup = ["cargo fetch"]\ntest_command = "cargo test"'),
    ("pom.xml", "Java (Maven)", 'install = false\napt = ["default-jdk", "maven"]\n'
                                'setup = ["mvn -q dependency:go-offline"]\ntest_command = "mvn -o test"'),
    ("build.gradle", "Java (Gradle)", 'install = false\napt = ["default-jdk"]\n'
                                      'test_command = "./gradlew test --offline"'),
    ("build.gradle.kts", "Kotlin/Java (Gradle)", 'install = false\napt = ["default-jdk"]\n'
                                                 'test_command = "./gradlew test --offline"'),
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
    JavaScript/TypeScript ones (outside hidden folders: a CI job's script in .github/ makes no project Python)."""
    if any(PYTHON_MARKS.match(p) for p in paths if "/" not in p or p.startswith("requirements/")):
        return True
    code = [p for p in paths if not any(part.startswith(".") or part == "node_modules" for part in p.split("/")[:-1])]
    py = sum(1 for p in code if p.endswith(".py"))
    return py > 0 and py >= sum(1 for p in code if JS_FILE.search(p))


def unsupported(paths: list[str]) -> str:
    """The warning for a repository detection cannot handle (no Python marks, another ecosystem's), else ''."""
    others = found(paths)
    if not others or is_python(paths) or DECLARED_FILE in paths:
        return ""
    marks = ", ".join(f"{name} ({what})" for name, what, _ in others)
    example = "\n".join(f"    {line}" for line in others[0][2].splitlines())
    return (f"not detected: this is not a Python project (found {marks}; no setup.py, pyproject.toml, requirement "
            "file or .py file), and bosun detects only Python environments so far. Without a declaration its tests "
            "would run as `python -m pytest` in a Python environment, which finds none. Declare the environment "
            f"in .bosun/environment.toml, for example:\n{example}\n(docs/environments.md)")
