"""The install step of a build: dependencies resolved as of the commit's date, adjusted only where that cannot
work on the interpreter at hand (pure logic + a step runner; the builder supplies the container).

A 2019 commit on Python 3.9 (the oldest interpreter here) meets packages of its day that have no wheel for 3.9
and do not build from source, or that break on 3.9 at import. Rather than moving everything to a later date,
each attempt starts as of the commit and moves only the packages that fail, to the date wheels for the
interpreter became common (``bump``):

- the installer says a package needs a wheel (``Wheels are required for `x` ``), or failed to build it;
- pytest does not start, or collecting the tests fails, and the innermost frame of the traceback is in an
  installed package (``site-packages/werkzeug/...``);
- collecting the tests fails on a module nobody installed (``No module named 'x'``): it is added;
- a requirement guessed from the tests' imports is unknown to the index: it is dropped; soft requirements (guesses,
  a Pipfile's dev packages, what CI files install) that a conflict names are dropped (when it names some of them
  only); when nothing else can be moved and soft requirements remain, the attempt goes on without them;
- a package with no release before the date at all (removed and uploaded again later) is taken as of that upload;
- a requirement from a version control repository (``git+https://...``) that cannot be fetched (the build reaches
  package indexes only, or the repository is gone) is taken from the index under its name (``name @ git+...``,
  ``#egg=name``, else the repository's name), and the log says so;
- the tests' collection fails inside pytest itself (written for an older pytest): one major version back (not
  under a recipe: its pytest is the harness's);
- a package's setup.py imports what setuptools 46 removed (``setuptools.Feature``): source builds get setuptools<46;
- the project's build backend makes no editable install (a setuptools before 64 pinned for its build: no PEP 660
  hook, where pip falls back to ``setup.py develop``): it is built without isolation, against the environment's
  own setuptools;
- pytest stops with an internal error in its own code before collecting (exit 3: a pytest of the commit's day
  that predates the interpreter, pytest 2.x on Python 3.9): pytest, pluggy and py move to the later date, and the
  log says why; when a requirement file pins them (requests 2.9: ``pytest==2.8.1``) and so they did not move, the
  pins are overridden (uv's ``--override``; not under a recipe);
- the project's own build fails in setuptools' legacy PEP 517 hooks (a setup.py, no build backend declared), or
  the setuptools it is built with without isolation predates those hooks (40.8): it is installed with
  ``setup.py develop`` after its requirements, as pip did such projects before 21.3;
- a resolution as for an older interpreter that fails gets the same adjustments as a failed install.

The collection check names a sample of a large suite's test modules: never a conftest.py (named, it is collected
as a module) and, where a tests folder holds enough, only modules at the top or in a ``test``/``tests``/
``testing`` folder (a runner's testpaths would not look elsewhere).

On Python 3.6 (built from source) uv installs as on the others, but cannot byte-compile (its script needs 3.7):
the interpreter's own ``compileall`` does it once the install is done.

Attempts, in order: as of the commit; everything as of the date wheels for the interpreter were common; only the
project (with its test extras) and the test runner. The first whose install succeeds and whose pytest starts wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from environments import standins
from environments.installcmds import (
    BUILD_CONSTRAINTS,
    HELD,
    OVERRIDES,
    SCM_CONFIG,
    collect_command,
    compile_command,
    compileall_command,
    develop_command,
    hold_command,
    install_command,
    lines_command,
    overrides_command,
    requirements_text,
    root_on_path,
    scm_scoped,
    uv_compiles,
)
from environments.installfixes import NO_SOLUTION, adjust_install, adjust_runtime
from environments.installplan import (
    Attempt,
    Installed,
    Plan,
    StepRunner,
    attempts_for,
    moved_packages,
)
from environments.interpreters import interpreter_env
from environments.models import EnvSpec

MAX_ROUNDS = 16
COLLECT_ROUNDS = 4

PYTEST_VERSION = re.compile(r"pytest (?:version )?(\d+)\.(\d+)")


"""The project's editable line, as a requirement file (``uv pip compile`` reads files only)."""


def install(run: StepRunner, spec: EnvSpec, env: dict[str, str], put_requirements: Callable[[str], None],
            fresh_venv: Callable[[], None], progress: Callable[[str], None], local: set[str],
            sample: list[str] | None = None) -> Installed | None:
    """Run the attempts; the first that works gives ``Installed``, None when none did (history in the log)."""
    history: list[str] = []
    attempts = attempts_for(spec)
    whole, (env, scm_lines) = env, scm_scoped(spec, env)
    if scm_lines:
        run.step("the project's version, for its own build only", lines_command(scm_lines, SCM_CONFIG), env)
    if spec.overrides:
        run.step("the pins that win over the requirement files (overrides)", overrides_command(spec), env)
    rounds = _Rounds(run, spec, env, whole, {**env, **interpreter_env(spec.python), "PYTHONDONTWRITEBYTECODE": "1"},
                     put_requirements, fresh_venv, progress, local, sample)
    for n, attempt in enumerate(attempts, 1):
        if n > 1:
            fresh_venv()
        plan = Plan(attempt)
        outcome = "failed"
        for _round in range(MAX_ROUNDS):
            done = rounds.one(plan, attempt, f"{n}/{len(attempts)}")
            if done is not None:
                outcome = done
                break
        history.append(f"{attempt.label}: {outcome}{plan.summary()}")
        if outcome.startswith("ok") and not uv_compiles(spec.python):
            run.step("compile the bytecode (the interpreter's compileall)", compileall_command(spec), env,
                     check=False)
        if outcome.startswith("ok") and spec.install_project:
            run.step("editable install: the project's root on sys.path", root_on_path(spec), env, check=False)
        if outcome.startswith("ok"):
            return Installed(date=attempt.date, history=history, moved=moved_packages(attempt, plan.bumps))
        run.note(f"attempt {n} of {len(attempts)} did not work: {history[-1]}")
    run.note("no attempt worked: " + "; ".join(history))
    return None


@dataclass
class _Rounds:
    """One attempt's rounds: write the plan's files, resolve, install, check that pytest starts and the tests
    collect. A round that a known fix can mend adjusts the plan and asks for another (None); else its outcome."""

    runner: StepRunner
    spec: EnvSpec
    env: dict[str, str]
    """The build's environment (the project's version scoped to its own build)."""
    whole: dict[str, str]
    """The environment as given (setup.py develop builds the project itself)."""
    quiet: dict[str, str]
    """As in the sandboxes: what pytest runs with."""
    put_requirements: Callable[[str], None]
    fresh_venv: Callable[[], None]
    progress: Callable[[str], None]
    local: set[str]
    sample: list[str] | None

    def one(self, plan: Plan, attempt: Attempt, counted: str) -> str | None:
        """One round of ``attempt`` (the ``counted`` one of all): its outcome, or None for another round."""
        run, spec, env = self.runner, self.spec, self.env
        if plan.fresh:
            self.fresh_venv()
            plan.fresh = False
        self.put_requirements(requirements_text(spec, plan))
        if plan.build_constraints:
            run.step("the source builds' constraints", lines_command(plan.build_constraints, BUILD_CONSTRAINTS), env)
        if plan.overrides:
            run.step("the pins that win (overrides, and the test runner's)",
                     lines_command([*spec.overrides, *plan.overrides], OVERRIDES), env)
        if attempt.resolve_for:
            self.progress(f"building: resolve as for Python {attempt.resolve_for}")
            rc, text = run.step(f"resolve (as for Python {attempt.resolve_for})", compile_command(spec, plan),
                                env, check=False)
            if rc != 0:
                if adjust_install(spec, plan, text, run.note):  # (it builds what has no wheel: the same fixes)
                    return None
                return f"failed (the resolution for Python {attempt.resolve_for}, exit {rc})"
        self.progress(f"building: install {counted} {attempt.label}")
        rc, text = self._install(plan, attempt)
        if rc != 0:
            if adjust_install(spec, plan, text, run.note):
                return None
            soft = set(spec.guessed) - plan.dropped - set(standins.requirements(spec.standins))
            if attempt.optional and soft:
                plan.dropped |= soft  # soft requirements in the way: without them, still as of the date
                run.note(f"the install fails with the soft requirements: trying without them "
                         f"({', '.join(sorted(soft))})")
                return None
            return f"failed (exit {rc})"
        return "ok" if spec.test.kind != "pytest" else self._check_tests(plan)

    def _install(self, plan: Plan, attempt: Attempt) -> tuple[int, str]:
        """The install steps: the requirements (first, when the project goes last or builds isolated), then the
        project (setup.py develop; or pip holding what is installed), or all at once."""
        run, spec, env = self.runner, self.spec, self.env
        rc, text = 0, ""
        last = (spec.project_last or plan.develop) and spec.install_project
        if (not plan.isolated(spec) or last) and spec.install_project:  # the requirements first
            first = "the requirements" if last else "the build's requirements"
            rc, text = run.step(f"install {first} ({attempt.label})",
                                install_command(spec, plan, project=False), env, check=False)
        if rc == 0 and plan.develop:
            rc, text = run.step(f"install the project: setup.py develop ({attempt.label})", develop_command(),
                                self.whole, check=False)
        elif rc == 0 and last:  # pip keeps what is installed unless the project needs otherwise; uv would not
            run.step("hold what is installed", hold_command(spec), env, check=False)
            rc, text = run.step(f"install the project ({attempt.label})",
                                [*install_command(spec, plan, others=False), "-c", HELD], env, check=False)
            if rc != 0 and NO_SOLUTION in text:
                run.note("the project's own requirements conflict with what is installed: they win")
                rc, text = run.step(f"install the project, what is installed not held ({attempt.label})",
                                    install_command(spec, plan, others=False), env, check=False)
        elif rc == 0:
            rc, text = run.step(f"install ({attempt.label})", install_command(spec, plan), env, check=False)
        return rc, text

    def _check_tests(self, plan: Plan) -> str | None:
        """pytest starts, and (for the first rounds) the tests collect; a known runtime fix asks for a round."""
        run, spec = self.runner, self.spec
        rc, text = run.step("check: pytest starts", [*spec.test.argv, "--version"], self.quiet, check=False)
        found = PYTEST_VERSION.search(text)
        plan.pytest_version = (int(found.group(1)), int(found.group(2))) if found else None
        if rc != 0:
            if adjust_runtime(spec, plan, text, run.note, self.local):
                return None
            return "installed, but pytest does not start"
        if plan.collect_rounds >= COLLECT_ROUNDS:
            return "ok"
        plan.collect_rounds += 1
        self.progress("building: check that the tests collect")
        rc, text = run.step("check: the tests collect", collect_command(spec, self.sample), self.quiet, check=False)
        if rc not in (0, 5, 124) and "rror" in text and adjust_runtime(spec, plan, text, run.note, self.local, True):
            return None
        return "ok" if rc in (0, 5) else "ok (collection not checked: too slow)" if rc == 124 else \
            "ok (some tests do not collect)"
