"""How an instance's tests are run, the way the SWE-bench harness runs them: the files its test patch touches,
with the repository's own runner, verbose enough that every test's status is in the output.

- pytest (the default): ``python -m pytest -rA -p no:cacheprovider FILES`` (the ``-rA`` summary names every test)
- sympy (``bin/test``): ``bin/test -C --verbose FILES``
- Django (``tests/runtests.py``): ``./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 LABELS``,
  a label per test module (``tests/foo/test_bar.py`` -> ``foo.test_bar``)
"""

from __future__ import annotations

import shlex

from agents.evaluation.testlogs import PARSERS

RUNNER_OF_REPO = {"sympy/sympy": "sympy", "django/django": "django"}


def runner_for(repo: str, has: set[str]) -> str:
    """The runner of a repository: by its name as SWE-bench knows it, else by what it has (``bin/test``,
    ``tests/runtests.py``), else pytest."""
    if repo in RUNNER_OF_REPO:
        return RUNNER_OF_REPO[repo]
    if "tests/runtests.py" in has:
        return "django"
    if "bin/test" in has:
        return "sympy"
    return "pytest"


def django_label(path: str) -> str | None:
    """``tests/foo/test_bar.py`` -> ``foo.test_bar`` (a module under tests/), else None."""
    if not path.startswith("tests/") or not path.endswith(".py"):
        return None
    return path[len("tests/"):-3].replace("/", ".")


def command(runner: str, files: list[str]) -> str:
    """The shell command that runs ``files`` with ``runner`` (paths quoted: they come from a patch)."""
    if runner not in PARSERS:
        raise ValueError(f"unknown test runner {runner!r}")
    quoted = " ".join(shlex.quote(f) for f in files if not f.startswith("-"))
    if runner == "sympy":
        return f"PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose {quoted}"
    if runner == "django":
        labels = " ".join(shlex.quote(lbl) for f in files if (lbl := django_label(f)))
        return f"./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 {labels}"
    return f"python -m pytest -rA -p no:cacheprovider {quoted}"
