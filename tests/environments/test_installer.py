"""The install step's decisions, from the installer's and pytest's own words (pure; no container)."""

from __future__ import annotations

import subprocess

from environments.installcmds import (
    BUILD_CONSTRAINTS,
    CONSTRAINTS,
    HELD,
    OVERRIDES,
    PROJECT,
    SCM_CONFIG,
    collect_sample,
    compile_command,
    develop_command,
    install_command,
    last_patch,
    overrides_command,
    requirements_text,
    scm_scoped,
)
from environments.installer import install
from environments.installfixes import OLD_SETUPTOOLS, adjust_install, adjust_runtime
from environments.installplan import Plan, attempts_for
from environments.models import EnvSpec, TestCommand

OLD = EnvSpec(python="3.9", project_name="demo", exclude_newer="2019-05-16T23:59:59Z", extras=["test"],
              requirements=["pytest"], guessed=["mock", "nosuchthing"], optional_files=["requirements-dev.txt"])

NO_WHEEL = """error: No solution found when resolving dependencies
hint: Wheels are required for `cffi` because building from source is disabled for `cffi` (i.e., with `--no-build`)
"""
UNKNOWN = "  cause: Because nosuchthing was not found in the package registry and you require nosuchthing, ..."
WERKZEUG = """Traceback (most recent call last):
  File "/opt/bosun-env/venv/lib/python3.9/site-packages/_pytest/config.py", line 52, in main
  File "/opt/bosun-env/venv/lib/python3.9/site-packages/httpbin/filters.py", line 23, in <module>
  File "/opt/bosun-env/venv/lib/python3.9/site-packages/werkzeug/routing.py", line 951, in _compile_builder
TypeError: required field "type_ignores" missing from Module
"""
COLLECT_IN_PYTEST = """_____ ERROR collecting tests/test_utils.py _____
/opt/bosun-env/venv/lib/python3.9/site-packages/_pytest/mark/structures.py:120: in _for_parametrize
E   TypeError: object of type 'MarkDecorator' has no len()
"""


def test_attempts_start_as_of_the_commit():
    attempts = attempts_for(OLD)
    assert [a.date for a in attempts] == ["2019-05-16T23:59:59Z", "2021-01-03T00:00:00Z", "2021-01-03T00:00:00Z"]
    assert attempts[0].bump_to == "2021-01-03T00:00:00Z" and attempts[0].optional and not attempts[2].optional
    recent = OLD.model_copy(update={"exclude_newer": "2024-02-01T23:59:59Z", "python": "3.11"})
    assert [a.date for a in attempts_for(recent)][:1] == ["2024-02-01T23:59:59Z"]
    assert attempts_for(OLD.model_copy(update={"exclude_newer": None}))[0].date is None


def test_the_install_command():
    plan = Plan(attempts_for(OLD)[0], bumps={"cffi": "2021-01-03T00:00:00Z"})
    cmd = install_command(OLD, plan)
    text = " ".join(cmd)
    assert "--exclude-newer 2019-05-16T23:59:59Z" in text
    assert "--exclude-newer-package setuptools=2022-12-31T00:00:00Z" in text  # editable installs need it
    assert "--exclude-newer-package atomicwrites=2022-07-09T00:00:00Z" in text  # re-uploaded in 2022
    assert "--exclude-newer-package cffi=2021-01-03T00:00:00Z" in text and "--upgrade-package cffi" in text
    assert "--only-binary numpy" in text and cmd[-2:] == ["-r", "/opt/bosun-tools/requirements.txt"]
    # PyYAML builds from source where its wheels came late: as a wheel only, the resolver avoided it silently
    assert "--only-binary pyyaml" not in text
    assert "-e /workspace[test] -r /workspace/requirements-dev.txt" in text
    assert requirements_text(OLD, plan) == "pytest\nmock\nnosuchthing\n"
    assert "requirements-dev" not in " ".join(install_command(OLD, Plan(attempts_for(OLD)[2])))


def test_a_package_without_a_wheel_moves_to_the_later_date():
    plan, notes = Plan(attempts_for(OLD)[0]), []
    assert adjust_install(OLD, plan, NO_WHEEL, notes.append)
    assert plan.bumps == {"cffi": "2021-01-03T00:00:00Z"} and "cffi" in notes[0]
    assert not adjust_install(OLD, plan, NO_WHEEL, notes.append)  # moved once: then the attempt fails
    assert not adjust_install(OLD, Plan(attempts_for(OLD)[1]), NO_WHEEL, notes.append)  # nowhere to move


def test_an_unknown_guess_is_dropped():
    plan = Plan(attempts_for(OLD)[0])
    assert adjust_install(OLD, plan, UNKNOWN, lambda _m: None)
    assert plan.dropped == {"nosuchthing"} and "nosuchthing" not in requirements_text(OLD, plan)


def test_runtime_breakage_moves_the_innermost_package():
    plan = Plan(attempts_for(OLD)[0])
    assert adjust_runtime(OLD, plan, WERKZEUG, lambda _m: None, set())
    assert plan.bumps == {"werkzeug": "2021-01-03T00:00:00Z"}


def test_missing_modules_and_plugins_are_added():
    plan = Plan(attempts_for(OLD)[0])
    assert adjust_runtime(OLD, plan, "E   ModuleNotFoundError: No module named 'yaml'", lambda _m: None, set(), True)
    assert plan.added == ["pyyaml"]
    assert not adjust_runtime(OLD, plan, "No module named 'demo_helpers'", lambda _m: None, {"demo_helpers"}, True)
    assert adjust_runtime(OLD, plan, "error: unrecognized arguments: --cov=demo", lambda _m: None, set())
    assert "pytest-cov" in plan.added


def test_tests_written_for_an_older_pytest_get_one():
    plan = Plan(attempts_for(OLD)[0], pytest_version=(4, 5))
    assert adjust_runtime(OLD, plan, COLLECT_IN_PYTEST, lambda _m: None, set(), collecting=True)
    assert plan.added == ["pytest<4"] and not plan.bumps
    assert not adjust_runtime(OLD, plan, COLLECT_IN_PYTEST, lambda _m: None, set(), collecting=True)


class FakeRun:
    """Answers each step from a script: (substring of the step name, exit code, output)."""

    def __init__(self, script: list[tuple[str, int, str]]) -> None:
        self.script = script
        self.steps: list[str] = []
        self.notes: list[str] = []

    def step(self, name, cmd, env, *, check=True):
        self.steps.append(name)
        for i, (match, rc, out) in enumerate(self.script):
            if match in name:
                self.script.pop(i)
                return rc, out
        return 0, "pytest 6.2.1" if "starts" in name else ""

    def note(self, text):
        self.notes.append(text)


def run_install(script):
    run = FakeRun(script)
    spec = OLD.model_copy(update={"test": TestCommand(paths=["tests"])})
    got = install(run, spec, {}, put_requirements=lambda _t: None, fresh_venv=lambda: run.steps.append("fresh"),
                  progress=lambda _m: None, local=set())
    return got, run


def test_install_adjusts_then_succeeds_as_of_the_commit():
    got, run = run_install([("install", 1, NO_WHEEL), ("starts", 1, WERKZEUG)])
    assert got is not None and got.date == "2019-05-16T23:59:59Z"
    assert "as of 2021-01-03: cffi, werkzeug" in got.history[0]
    assert "fresh" not in run.steps


def test_install_drops_soft_requirements_then_falls_back_and_can_fail():
    got, run = run_install([("install", 1, "error: something else")])
    assert got is not None and got.date == "2019-05-16T23:59:59Z"  # without the guesses, as of the commit
    assert "dropped: mock, nosuchthing" in got.history[0]
    got, run = run_install([("install", 1, "boom")] * 2)
    assert got is not None and got.date == "2021-01-03T00:00:00Z" and "fresh" in run.steps
    got, run = run_install([("install", 1, "boom")] * 5)
    assert got is None and "no attempt worked" in run.notes[-1]


def test_a_stand_ins_service_stays_when_the_other_soft_requirements_go():
    """requests 2.0's own requirements.txt (invoke 0.2 -> pexpect-u, which no longer builds) fails the install: the
    guesses and optional files go, but httpbin, which the tests' stand-in serves, stays in every attempt."""
    spec = OLD.model_copy(update={"guessed": ["mock", "httpbin"], "standins": ["httpbin.org"]})
    plan = Plan(attempts_for(spec)[0])
    assert requirements_text(spec, plan) == "pytest\nmock\nhttpbin\n"
    assert requirements_text(spec, Plan(attempts_for(spec)[2])) == "pytest\nhttpbin\n"  # only the runner: and it
    run = FakeRun([("install", 1, "error: something else")])
    got = install(run, spec.model_copy(update={"test": TestCommand(paths=["tests"])}), {},
                  put_requirements=lambda _t: None, fresh_venv=lambda: None, progress=lambda _m: None, local=set())
    assert got is not None and "dropped: mock" in got.history[0] and "httpbin" not in got.history[0]
    named = Plan(attempts_for(spec)[2])  # a failure that names it drops it like any guess
    assert adjust_install(spec, named, "error: Failed to build `httpbin==0.7.0`", lambda _m: None)
    assert requirements_text(spec, named) == "pytest\n"


def test_the_projects_version_reaches_its_own_build_only():
    """pytest at e6e300e7 (no .git: told 5.4.0): as a variable of the whole install the version reached iniconfig
    1.0.0's source build too, and uv took iniconfig 0.1; now only the project's build is told (uv's
    extra-build-variables), and setup.py develop, which runs the project's setup.py itself, still has it."""
    spec = OLD.model_copy(update={"scm_version": "5.4.0", "project_name": "Demo_Pkg", "test": TestCommand(paths=["t"])})
    env = {"PATH": "/x", "SETUPTOOLS_SCM_PRETEND_VERSION": "5.4.0"}
    scoped, lines = scm_scoped(spec, env)
    assert "SETUPTOOLS_SCM_PRETEND_VERSION" not in scoped and scoped["UV_CONFIG_FILE"] == SCM_CONFIG
    assert lines == ["[extra-build-variables]", '"demo-pkg" = { SETUPTOOLS_SCM_PRETEND_VERSION = "5.4.0" }']
    assert scm_scoped(spec.model_copy(update={"project_name": None}), env) == (env, [])  # no name: as before
    assert scm_scoped(spec.model_copy(update={"scm_version": '1" }\nx = {'}), {**env, "SETUPTOOLS_SCM_PRETEND_VERSION":
                                                                               '1" }\nx = {'})[1] == []  # no TOML
    assert scm_scoped(spec, {**env, "UV_CONFIG_FILE": "/mine.toml"})[1] == []  # a configuration of the user's wins
    seen: list[tuple[str, dict]] = []

    class Recording(FakeRun):
        def step(self, label, argv, env, check=True):
            seen.append((label, dict(env)))
            return super().step(label, argv, env, check=check)

    run = Recording([("install (as of the commit", 1, LEGACY_KILLED)])
    install(run, spec, env, put_requirements=lambda _t: None, fresh_venv=lambda: None, progress=lambda _m: None,
            local=set())
    installs = [e for label, e in seen if label.startswith("install") and "develop" not in label]
    develops = [e for label, e in seen if "develop" in label]
    assert seen[0][0].startswith("the project's version") and installs and develops
    assert all("SETUPTOOLS_SCM_PRETEND_VERSION" not in e and e["UV_CONFIG_FILE"] == SCM_CONFIG for e in installs)
    assert all(e["SETUPTOOLS_SCM_PRETEND_VERSION"] == "5.4.0" for e in develops)


def test_a_package_uploaded_again_later_is_taken_as_of_that_upload():
    plan = Plan(attempts_for(OLD)[0])
    text = ("hint: `codecov` was filtered by `exclude-newer` to only include packages uploaded before "
            "2019-05-16T23:59:59Z. The latest version satisfying the requirement is v2.1.13, published at "
            "2023-04-17T23:11:37.344Z. Consider using `exclude-newer-package`")
    assert adjust_install(OLD, plan, text, lambda _m: None)
    assert plan.bumps == {"codecov": "2023-04-17T23:59:59Z"}


def test_pytest_goes_back_one_major_at_a_time():
    plan = Plan(attempts_for(OLD)[0], pytest_version=(6, 2))
    assert adjust_runtime(OLD, plan, COLLECT_IN_PYTEST, lambda _m: None, set(), collecting=True)
    plan.pytest_version = (5, 4)
    assert adjust_runtime(OLD, plan, COLLECT_IN_PYTEST, lambda _m: None, set(), collecting=True)
    assert plan.added == ["pytest<5"]
    plan.pytest_version = (3, 10)
    assert not adjust_runtime(OLD, plan, COLLECT_IN_PYTEST, lambda _m: None, set(), collecting=True)


CFGRIB_BREAKS = """ImportError while loading conftest '/workspace/xarray/tests/conftest.py'.
xarray/tests/__init__.py:73: in <module>
    has_cfgrib, requires_cfgrib = _importorskip("cfgrib")
xarray/tests/__init__.py:45: in _importorskip
    mod = importlib.import_module(modname)
/opt/bosun-env/venv/lib/python3.9/site-packages/cfgrib/__init__.py:20: in <module>
    from .cfmessage import COMPUTED_KEYS
/opt/bosun-env/venv/lib/python3.9/site-packages/cfgrib/messages.py:28: in <module>
    import eccodes  # type: ignore
/opt/bosun-env/venv/lib/python3.9/site-packages/eccodes/__init__.py:13: in <module>
    from .eccodes import *  # noqa
/opt/bosun-env/venv/lib/python3.9/site-packages/gribapi/bindings.py:35: in <module>
    raise RuntimeError("Cannot find the ecCodes library")
E   RuntimeError: Cannot find the ecCodes library
"""
"""xarray 2022.03 detected: its CI's cfgrib installs, and breaks at import (no ecCodes C library); the conftest
imports it, so nothing collects."""


def test_a_soft_requirement_that_breaks_at_import_is_dropped_once_it_cannot_move():
    spec = OLD.model_copy(update={"guessed": ["cfgrib", "pytest", "dask"]})
    plan = Plan(attempts_for(spec)[0])
    notes: list[str] = []
    assert adjust_runtime(spec, plan, CFGRIB_BREAKS, notes.append, {"xarray"}, collecting=True)
    assert "gribapi" in plan.bumps and not plan.dropped  # first moved forward (a newer release may work)
    assert adjust_runtime(spec, plan, CFGRIB_BREAKS, notes.append, {"xarray"}, collecting=True)
    assert plan.dropped == {"cfgrib"} and "break at import: cfgrib" in notes[-1]  # pytest and dask stay
    assert not adjust_runtime(spec, plan, CFGRIB_BREAKS, notes.append, {"xarray"}, collecting=True)


def test_a_dropped_requirement_that_was_installed_goes_with_a_new_virtualenv():
    """An install only adds: cfgrib dropped after it was installed would still break the conftest."""
    run = FakeRun([("collect", 4, CFGRIB_BREAKS), ("collect", 4, CFGRIB_BREAKS)])
    spec = OLD.model_copy(update={"guessed": ["cfgrib"], "test": TestCommand(paths=["tests"])})
    got = install(run, spec, {}, put_requirements=lambda _t: None, fresh_venv=lambda: run.steps.append("fresh"),
                  progress=lambda _m: None, local={"xarray"})
    assert got is not None and "dropped: cfgrib" in got.history[0]
    collects = [i for i, name in enumerate(run.steps) if "collect" in name]
    assert run.steps.count("fresh") == 1 and collects[1] < run.steps.index("fresh") < collects[2]
    assert "install" in run.steps[run.steps.index("fresh") + 1]  # then everything installed again


def test_the_projects_own_import_errors_move_nothing():
    own = """_____ ERROR collecting sympy/integrals/rubi/tests/test_1_2.py _____
/opt/bosun-env/venv/lib/python3.9/site-packages/_pytest/python.py:493: in _importtestmodule
    mod = self.fspath.pyimport(ensuremode="append")
sympy/integrals/rubi/tests/test_1_2.py:1: in <module>
    from sympy.integrals.rubi.rubi import rubi_integrate
E   ModuleNotFoundError: No module named 'sympy.integrals.rubi.rubi'
"""
    plan = Plan(attempts_for(OLD)[0], pytest_version=(5, 3))
    assert not adjust_runtime(OLD, plan, own, lambda _m: None, {"sympy"}, collecting=True)
    assert not plan.bumps and not plan.added


def test_a_large_suite_is_collected_by_sample():
    spec = OLD.model_copy(update={"test": TestCommand(paths=["pkg"])})
    files = [f"pkg/sub{i}/tests/test_{i}.py" for i in range(200)] + ["docs/test_doc.py"]
    sample = collect_sample(spec, files)
    assert len(sample) == 30 and sample[0] == "pkg/sub0/tests/test_0.py" and "docs/test_doc.py" not in sample
    assert collect_sample(spec, files[:20]) is None


def test_the_sample_names_no_conftest_and_no_test_named_helper_outside_the_tests():
    """pylint 3.0's sample named tests/config/conftest.py (collected as a module: "import file mismatch") and
    pylint/testutils/functional/test_file.py (a helper, outside its testpaths): collecting failed, was taken for
    pytest's fault, and pytest was moved back until nothing worked."""
    spec = OLD.model_copy(update={"test": TestCommand(paths=[])})
    files = ([f"tests/area{i}/test_{i}.py" for i in range(60)] + [f"tests/area{i}/conftest.py" for i in range(60)]
             + ["pylint/testutils/functional/test_file.py", "test_top.py"])
    sample = collect_sample(spec, files)
    assert len(sample) == 30 and not any(f.endswith("conftest.py") for f in sample)
    assert "pylint/testutils/functional/test_file.py" not in sample
    few = [f"pkg/sub{i}/test_{i}.py" for i in range(50)]  # (no tests folder at all: every test module counts)
    assert len(collect_sample(spec, few)) == 30


def test_an_older_interpreter_is_its_last_release():
    assert [last_patch(v) for v in ("3.5", "3.6", "3.8", "3.9", "3.6.8")] == ["3.5.10", "3.6.15", "3.8.20", "3.9",
                                                                          "3.6.8"]


def test_the_installers_own_tools_are_not_held_to_an_older_pythons_versions(tmp_path):
    """setuptools 59.6 (the last for 3.6) cannot make the editable install, and 71+ break on 3.6's packaging;
    numpy's 3.6 version stays a constraint."""
    spec = OLD.model_copy(update={"exclude_newer": "2024-08-13T23:59:59Z", "resolve_for_python": "3.6"})
    compile_ = compile_command(spec, Plan(attempts_for(spec)[0]))[2]
    resolved = tmp_path / "resolved-for.txt"
    resolved.write_text("-e file:///workspace\nnumpy==1.19.5\npip==21.3.1\nsetuptools==59.6.0\nwheel==0.37.1\n"
                        "setuptools-scm==6.4.2\n")
    subprocess.run(["sh", "-c", compile_.rsplit("&& ", 1)[1].replace(CONSTRAINTS, str(resolved))], check=True)
    assert resolved.read_text() == "numpy==1.19.5\nsetuptools<71\nsetuptools-scm==6.4.2\n"


def test_versions_resolved_as_for_an_older_interpreter_first():
    spec = OLD.model_copy(update={"exclude_newer": "2024-08-13T23:59:59Z", "resolve_for_python": "3.6",
                                  "requirement_files": ["tests/requirements/py3.txt"]})
    attempts = attempts_for(spec)
    assert attempts[0].resolve_for == "3.6" and all(a.resolve_for is None for a in attempts[1:])
    plan = Plan(attempts[0])
    compile_ = compile_command(spec, plan)[2]
    # 3.6 is its last release: for "3.6", uv means 3.6.0 and leaves out every release requiring 3.6.1 or later
    assert "pip compile" in compile_ and "--python-version 3.6.15 " in compile_ and f"-o {CONSTRAINTS}" in compile_
    assert "-e /workspace[test]" in compile_ and f"{PROJECT} /workspace/tests/requirements/py3.txt" in compile_
    assert " -r " not in compile_.split("&&")[1] and "sed -i -e '/^-e /d'" in compile_  # compile reads files only
    install_ = install_command(spec, plan)
    assert install_[install_.index("-c") + 1] == CONSTRAINTS
    assert "-c" not in install_command(spec, Plan(attempts[1]))
    # versions for 3.6 that cannot be had on 3.9: the next attempt resolves for 3.9
    run = FakeRun([("resolve", 1, "error: No solution found when resolving dependencies")])
    got = install(run, spec.model_copy(update={"test": TestCommand(paths=["tests"])}), {},
                  put_requirements=lambda _t: None, fresh_venv=lambda: run.steps.append("fresh"),
                  progress=lambda _m: None, local=set())
    assert got is not None and "failed (the resolution for Python 3.6" in got.history[0]
    assert run.steps[0].startswith("resolve") and "fresh" in run.steps


def test_a_project_built_without_isolation_gets_its_build_requirements_first():
    spec = OLD.model_copy(update={"build_isolation": False, "test": TestCommand(paths=["tests"])})
    first = install_command(spec, Plan(attempts_for(spec)[0]), project=False)
    assert "-e" not in first and "--no-build-isolation" not in first
    assert "--no-build-isolation" in install_command(spec, Plan(attempts_for(spec)[0]))
    run = FakeRun([])
    got = install(run, spec, {}, put_requirements=lambda _t: None, fresh_venv=lambda: None,
                  progress=lambda _m: None, local=set())
    assert got is not None and run.steps[0].startswith("install the build's requirements")


def test_an_added_module_that_does_not_build_is_dropped_not_the_environment():
    plan = Plan(attempts_for(OLD)[0], added=["cupy"])
    notes: list[str] = []
    failed = "error: Failed to build `cupy==13.2.0`\n  cause: The build backend returned an error\n"
    assert adjust_install(OLD, plan, failed, notes.append)
    assert plan.added == [] and "cupy" in plan.dropped and "do not build here" in notes[0]


BUILD_REQUIREMENT_FAILED = """Using Python 3.9.2 environment at: /opt/bosun-env/venv
error: Failed to download and build `bottleneck==1.3.2`
  cause: Failed to install requirements from `build-system.requires`
  cause: Failed to build `numpy==1.17.3`
  cause: The build backend returned an error
  cause: Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)
         RuntimeError: Broken toolchain: cannot link a simple C program
"""
"""uv, xarray 0.16 detected (2021): bottleneck 1.3.2 has no wheel for 3.9, and its build requirement does not build."""


def test_a_soft_requirement_whose_build_requirement_fails_is_dropped_alone():
    spec = OLD.model_copy(update={"guessed": ["bottleneck", "numpy", "pint", "dask"]})
    plan = Plan(attempts_for(spec)[0])
    notes: list[str] = []
    assert adjust_install(spec, plan, BUILD_REQUIREMENT_FAILED, notes.append)
    assert plan.dropped == {"bottleneck", "numpy"} and "do not build here" in notes[0]  # pint and dask stay


GIT_UNREACHABLE = """   Updating https://github.com/html5lib/html5lib-python (HEAD)
error: Git operation failed
  cause: failed to clone into: /root/.cache/uv/git-v2/db/653135f311a8bdb8
  cause: process didn't exit successfully: `/usr/bin/git fetch --force --update-head-ok \
'https://github.com/html5lib/html5lib-python' '+HEAD:refs/remotes/origin/HEAD'` (exit status: 128)
         --- stderr
         fatal: unable to access 'https://github.com/html5lib/html5lib-python/': Could not resolve host: github.com
"""
"""uv's words for Sphinx 3.1's tox dependency ``git+https://github.com/html5lib/html5lib-python`` on a host that
reaches package indexes only."""


def test_a_repository_requirement_that_cannot_be_fetched_comes_from_the_index():
    spec = OLD.model_copy(update={"requirements": ["pytest", "git+https://github.com/html5lib/html5lib-python",
                                                   "docutils-stubs @ git+https://example.org/stubs.git@v1"]})
    plan, notes = Plan(attempts_for(spec)[0]), []
    assert "git+https://github.com/html5lib/html5lib-python\n" in requirements_text(spec, plan)
    assert adjust_install(spec, plan, GIT_UNREACHABLE, notes.append)
    text = requirements_text(spec, plan)
    assert "html5lib\n" in text and "docutils-stubs\n" in text and "git+" not in text
    assert "html5lib from the index instead of git+https://github.com/html5lib/html5lib-python" in notes[0]
    assert "from the index, their repositories out of reach: html5lib, docutils-stubs" in plan.summary()
    assert not adjust_install(spec, plan, GIT_UNREACHABLE, notes.append)  # nothing more to take from the index


def test_the_index_name_of_a_repository_requirement():
    from environments.installcmds import index_name

    assert index_name("git+https://github.com/html5lib/html5lib-python") == "html5lib"
    assert index_name("html5lib @ git+https://github.com/html5lib/html5lib-python@master") == "html5lib"
    assert index_name("git+https://github.com/pytest-dev/pytest.git@main#egg=pytest-dev&subdirectory=x") == "pytest-dev"
    assert index_name("hg+https://hg.example.org/python-dateutil") == "python-dateutil"
    assert index_name("pytest>=3") is None


CONFLICT = """error: No solution found when resolving dependencies
  cause: Because only astropy[test]==4.3.0 is available and astropy[test]==4.3.0 depends on hypothesis==6.46.7, \
we can conclude that all versions of astropy[test] depend on hypothesis==6.46.7.
         And because you require hypothesis==6.82.6 and astropy[test], we can conclude that your requirements are \
unsatisfiable.
"""
"""uv's words for a conflict of astropy's test extra with a pin (an astropy build of this bench)."""


def test_a_conflict_drops_the_soft_requirements_it_names_first():
    spec = OLD.model_copy(update={"guessed": ["hypothesis==6.82.6", "bottleneck", "dask"]})
    plan, notes = Plan(attempts_for(spec)[0]), []
    assert adjust_install(spec, plan, CONFLICT, notes.append)
    assert plan.dropped == {"hypothesis==6.82.6"}
    assert "bottleneck\n" in requirements_text(spec, plan) and "hypothesis" not in requirements_text(spec, plan)
    assert notes == ["dropping soft requirement(s) in a conflict: hypothesis==6.82.6"]


def test_a_project_installed_last_gets_its_own_pins_over_the_requirements():
    """The SWE-bench harness installs its packages, then ``pip install -e .[test]``: astropy 5.0's test extra pins
    hypothesis==6.46.7 over the recipe's 6.82.6 (one resolution of both is unsatisfiable)."""
    spec = OLD.model_copy(update={"project_last": True, "requirements": ["hypothesis==6.82.6", "pytest==7.4.0"],
                                  "resolve_for_python": "3.6"})
    plan = Plan(attempts_for(spec)[0])
    first = install_command(spec, plan, project=False)
    assert "-e" not in first and first[-2:] == ["-r", "/opt/bosun-tools/requirements.txt"] and "-c" in first
    last = install_command(spec, plan, others=False)
    assert last[-2:] == ["-e", "/workspace[test]"] and "-c" not in last and "-r" not in last
    assert PROJECT not in compile_command(spec, plan)[2]  # resolved for the older Python: the requirements only

    class Run:
        def __init__(self, conflict: bool):
            self.steps, self.conflict = [], conflict

        def step(self, name, cmd, env, *, check=True):
            self.steps.append(name)
            if self.conflict and HELD in cmd and "-c" in cmd:  # what is installed holds hypothesis at 6.82.6
                return 1, CONFLICT
            return 0, "pytest 7.4.0" if "--version" in cmd else ""

        def note(self, text):
            pass

    spec = spec.model_copy(update={"resolve_for_python": None})
    for conflict in (False, True):
        run = Run(conflict)
        assert install(run, spec, {}, lambda text: None, lambda: None, lambda text: None, set()) is not None
        steps = ["install the requirements (as of the commit (2019-05-16))", "hold what is installed",
                 "install the project (as of the commit (2019-05-16))"]
        if conflict:  # the project's own pin wins: installed again without holding what is there
            steps.append("install the project, what is installed not held (as of the commit (2019-05-16))")
        assert run.steps[:len(steps) + 1] == [*steps, "check: pytest starts"]


def test_an_import_hook_editable_install_also_gets_the_project_root_on_sys_path(tmp_path):
    """pylint 2.14 (packages at its root beside tests/): setuptools installs it editable by an import hook, with which
    astroid cannot map pylint/checkers/*.py to modules and no checker loads; setup.py develop put the root on
    sys.path, and the published verdicts were made so."""
    from environments.installcmds import ROOT_ON_PATH, root_on_path
    from environments.models import VENV

    spec = OLD.model_copy(update={"python": "3.9"})
    site = tmp_path / "site"
    site.mkdir()
    script = root_on_path(spec)[2].replace(f"{VENV}/lib/python3.9/site-packages", str(site))
    subprocess.run(["sh", "-c", script], check=True)
    assert not (site / ROOT_ON_PATH).exists()  # a plain .pth install: nothing to add
    (site / "__editable___pylint_2_14_0_dev0_finder.py").write_text("")
    subprocess.run(["sh", "-c", script], check=True)
    assert (site / ROOT_ON_PATH).read_text() == "/workspace\n"
    run = FakeRun([])
    assert install(run, spec, {}, put_requirements=lambda _t: None, fresh_venv=lambda: None,
                   progress=lambda _m: None, local=set()) is not None
    assert "editable install: the project's root on sys.path" in run.steps


PYTEST_2_ON_39 = """INTERNALERROR> Traceback (most recent call last):
INTERNALERROR>   File "/opt/bosun-env/venv/lib/python3.9/site-packages/_pytest/main.py", line 77, in wrap_session
INTERNALERROR>     config.pluginmanager.do_configure(config)
INTERNALERROR>   File "/opt/bosun-env/venv/lib/python3.9/site-packages/_pytest/core.py", line 268, in do_configure
INTERNALERROR>     config.hook.pytest_configure(config=self._config)
INTERNALERROR>   File "/opt/bosun-env/venv/lib/python3.9/site-packages/_pytest/assertion/__init__.py", line 108, in \
warn_about_missing_assertion
INTERNALERROR>     assert False
INTERNALERROR> AssertionError
"""
"""pytest of requests 1.1's day (2013) on Python 3.9, collecting its tests (detected environment of
psf__requests-1142): exit 3 before anything is collected."""


def test_a_pytest_that_predates_the_interpreter_moves_forward_and_says_why():
    plan, notes = Plan(attempts_for(OLD)[0]), []
    plan.pytest_version = (2, 3)
    assert adjust_runtime(OLD, plan, PYTEST_2_ON_39, notes.append, set(), collecting=True)
    assert set(plan.bumps) == {"pytest", "pluggy", "py"} and plan.bumps["pytest"] == "2021-01-03T00:00:00Z"
    assert "pytest 2.3 stops with an internal error before collecting anything, or does not know --collect-only " \
           "(exit 3 or 2: it predates Python 3.9)" in notes[0]
    assert "pytest<2" not in plan.added  # not one major back: that is for tests written for an older pytest


def test_what_is_held_leaves_the_project_out():
    """Sphinx 3.0's requirements pulled a Sphinx 5.1.1 release in: held, it refused the editable Sphinx."""
    from environments.installcmds import hold_command

    script = hold_command(OLD.model_copy(update={"project_name": "Sphinx"}))[2]
    freeze = "sphinx==5.1.1\nsphinxcontrib-applehelp==1.0.7\n-e file:///workspace\nhtml5lib @ git+https://x/y\n"
    held = subprocess.run(["sh", "-c", script.split("| ", 1)[1].split(" > ")[0]], input=freeze, text=True,
                          capture_output=True).stdout
    assert held == "sphinxcontrib-applehelp==1.0.7\n"


def test_a_pytest_too_old_to_collect_as_asked_moves_forward_too():
    """requests 1.1's day (2013): its pytest has no --collect-only and stops with exit 3 on Python 3.9."""
    plan, notes = Plan(attempts_for(OLD)[0]), []
    plan.pytest_version = (2, 3)
    text = "Usage: pytest.py [options] [file_or_dir] [file_or_dir] [...]\n\npytest.py: error: no such option: " \
           "--collect-only\n"
    assert adjust_runtime(OLD, plan, text, notes.append, set(), collecting=True)
    assert set(plan.bumps) == {"pytest", "pluggy", "py"}


def test_a_recipes_pins_win_over_the_requirement_files_and_its_pytest_stays():
    """The harness installs pylint 3.0's requirements_test.txt (astroid==3.0.0a8), then its packages
    (astroid==3.0.0a6) with pip: the later pin wins. One uv resolution of both is unsatisfiable, so the recipe's
    pins are overrides, written to a file before the first attempt and passed to every install but the project's
    own (and to the resolution for an older Python). A collection error inside pytest moves no pytest back under a
    recipe: its pytest is the harness's."""
    spec = OLD.model_copy(update={"origin": "override", "declared_only": True, "project_last": True,
                                  "requirement_files": ["requirements_test.txt"],
                                  "requirements": ["astroid==3.0.0a6", "setuptools"],
                                  "overrides": ["astroid==3.0.0a6"], "resolve_for_python": "3.6"})
    plan = Plan(attempts_for(spec)[0], pytest_version=(7, 4))
    first = install_command(spec, plan, project=False)
    assert first[first.index("--override") + 1] == OVERRIDES
    assert "--override" not in install_command(spec, plan, others=False)
    assert f"--override {OVERRIDES}" in compile_command(spec, plan)[2]
    assert "--override" not in install_command(OLD, plan)  # nothing to override: as before
    assert not adjust_runtime(spec, plan, COLLECT_IN_PYTEST, lambda _m: None, set(), collecting=True)
    assert plan.added == []
    run = FakeRun([])
    assert install(run, spec.model_copy(update={"resolve_for_python": None}), {}, lambda _t: None, lambda: None,
                   lambda _t: None, set()) is not None
    assert run.steps[0] == "the pins that win over the requirement files (overrides)"
    sh, flag, line = overrides_command(spec)
    written = subprocess.run([sh, flag, line.replace(OVERRIDES, "/dev/stdout")], capture_output=True, text=True).stdout
    assert written == "astroid==3.0.0a6\n"


NO_PEP660 = """error: Failed to build `pylint @ file:///workspace`
  cause: The build backend returned an error
  cause: Call to `setuptools.build_meta.build_editable` failed (exit status: 1)

         [stderr]
         Traceback (most recent call last):
           File "<string>", line 11, in <module>
         AttributeError: module 'setuptools.build_meta' has no attribute 'build_editable'
"""


def test_a_backend_without_editable_installs_is_built_against_the_environments_setuptools():
    """pylint 2.15 pins setuptools~=62.6 for its build: no PEP 660 hook, so uv cannot install it editable (pip
    falls back to setup.py develop). The project is then built without isolation, against the environment's own
    setuptools (64 or later), its requirements installed first; the log says so."""
    spec = OLD.model_copy(update={"test": TestCommand(paths=["tests"])})
    run = FakeRun([("install (as of the commit", 1, NO_PEP660)])
    got = install(run, spec, {}, put_requirements=lambda _t: None, fresh_venv=lambda: None,
                  progress=lambda _m: None, local=set())
    assert got is not None and "built without isolation" in got.history[-1]
    assert run.steps[:3] == ["install (as of the commit (2019-05-16))",
                             "install the build's requirements (as of the commit (2019-05-16))",
                             "install (as of the commit (2019-05-16))"]
    assert any("no PEP 660 hooks" in n for n in run.notes)
    plan = Plan(attempts_for(spec)[0], no_isolation=True)
    assert "--no-build-isolation" in install_command(spec, plan)
    assert "--no-build-isolation" not in install_command(spec, plan, project=False)
    assert not adjust_install(spec, plan, NO_PEP660, lambda _m: None)  # once: then it is the failure it is


OLD_SETUP = """error: Failed to build `markupsafe==1.0`
  cause: The build backend returned an error
  cause: Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)
         ImportError: cannot import name 'Feature' from 'setuptools' (/tmp/x/site-packages/setuptools/__init__.py)
"""


def test_a_setup_py_older_than_setuptools_46_is_built_with_one():
    """astropy 1.3's recipe pins MarkupSafe 1.0 (no wheel for 3.9): its setup.py imports setuptools.Feature,
    which setuptools 46 removed. Source builds then get setuptools<46 (a build constraints file, written before the
    round), in the resolution and the install; the log says so, once."""
    spec = OLD.model_copy(update={"resolve_for_python": "3.6"})
    plan = Plan(attempts_for(spec)[0])
    notes: list[str] = []
    assert adjust_install(spec, plan, OLD_SETUP, notes.append) and plan.build_constraints == ["setuptools<46"]
    assert "predates setuptools 46" in notes[0]
    assert f"--build-constraints {BUILD_CONSTRAINTS}" in " ".join(install_command(spec, plan))
    assert f"--build-constraints {BUILD_CONSTRAINTS}" in compile_command(spec, plan)[2]
    assert "--build-constraints" not in install_command(spec, Plan(attempts_for(spec)[0]))
    run = FakeRun([("install (as of the commit", 1, OLD_SETUP)])
    got = install(run, OLD.model_copy(update={"test": TestCommand(paths=["tests"])}), {}, lambda _t: None,
                  lambda: None, lambda _t: None, set())
    assert got is not None and "source builds with setuptools<46" in got.history[-1]
    assert run.steps[:3] == ["install (as of the commit (2019-05-16))", "the source builds' constraints",
                             "install (as of the commit (2019-05-16))"]


def py36_build_error(hook: str, line: str, error: str) -> str:
    """uv's words for a build hook that failed on Python 3.6: the traceback's last source line, then the error."""
    return (f"Using Python 3.6.15 environment at: /opt/bosun-env/venv\nerror: The build backend returned an error\n"
            f"  cause: Call to `setuptools.build_meta:__legacy__.{hook}` failed (exit status: 1)\n\n"
            f"         [stderr]\n         Traceback (most recent call last):\n{line}"
            f"         ImportError: {error}\n")


OLD_SETUP_PY36 = py36_build_error("get_requires_for_build_wheel", "           File \"setup.py\", line 6, in <module>\n"
                                  "             from setuptools import setup, Extension, Feature\n",
                                  "cannot import name 'Feature'")
NO_LEGACY_BACKEND = py36_build_error("prepare_metadata_for_build_editable",
                                     "           File \"<string>\", line 8, in <module>\n",
                                     "cannot import name '__legacy__'")


def test_python_3_6s_import_error_of_setuptools_feature_is_read_too():
    """On Python 3.6 (astropy 1.3's own interpreter) the ImportError does not name the module; the setup.py's
    import on the traceback's line before does. Another module's missing Feature is not setuptools'."""
    spec = OLD.model_copy(update={"python": "3.6"})
    plan = Plan(attempts_for(spec)[0])
    assert adjust_install(spec, plan, OLD_SETUP_PY36, lambda _m: None) and plan.build_constraints == ["setuptools<46"]
    other = OLD_SETUP_PY36.replace("from setuptools import setup, Extension, Feature", "from features import Feature")
    assert not OLD_SETUPTOOLS.search(other)


TYPED_AST = """error: Failed to build `typed-ast==1.1.2`
  cause: The build backend returned an error
         ast27/Parser/acceler.c:13:10: fatal error: pgenheaders.h: No such file or directory
hint: `typed-ast` (v1.1.2) was included because `mypy` (v0.650) depends on `typed-ast`
"""


def test_a_soft_requirement_whose_dependency_does_not_build_goes_alone():
    """xarray 0.12's CI file lists mypy==0.650, whose typed-ast 1.1.2 does not build on 3.9: only mypy is dropped
    (uv names it as what pulled typed-ast in), not every soft requirement with it (bottleneck went too, and its
    tests were skipped where the harness ran them)."""
    spec = OLD.model_copy(update={"guessed": ["mypy==0.650", "bottleneck", "cftime"]})
    plan = Plan(attempts_for(spec)[0])
    notes: list[str] = []
    assert adjust_install(spec, plan, TYPED_AST, notes.append)
    assert plan.dropped == {"mypy==0.650"} and "mypy==0.650" in notes[0]


LEGACY_KILLED = """Using Python 3.9.2 environment at: /opt/bosun-env/venv
error: Failed to build `astropy @ file:///workspace`
  cause: The build backend returned an error
  cause: Call to `setuptools.build_meta:__legacy__.prepare_metadata_for_build_editable` failed (signal: 9 (SIGKILL))

         [stdout]
         Rebuilding extension modules

         [stderr]
         WARNING: You appear to be trying to import astropy from within a source checkout without building """ \
    """the extension modules first.  Attempting to (re)build extension modules: [astropy]
"""


def test_a_setup_py_that_fails_in_the_pep517_hooks_is_installed_with_setup_py_develop():
    """astropy 3.1's setup.py imports astropy, which rebuilds its extension modules unless setup.py is the main
    module (as under pip's `setup.py develop` before 21.3): in uv's PEP 517 hooks it recursed until killed. The
    project is then installed with `setup.py develop` after its requirements (setuptools among them), once."""
    spec = OLD.model_copy(update={"test": TestCommand(paths=["tests"])})
    run = FakeRun([("install (as of the commit", 1, LEGACY_KILLED)])
    written: list[str] = []
    got = install(run, spec, {}, put_requirements=written.append, fresh_venv=lambda: None,
                  progress=lambda _m: None, local=set())
    assert got is not None and "installed with setup.py develop" in got.history[-1]
    assert run.steps[:3] == ["install (as of the commit (2019-05-16))",
                             "install the requirements (as of the commit (2019-05-16))",
                             "install the project: setup.py develop (as of the commit (2019-05-16))"]
    assert "setuptools\n" in written[-1] and "setuptools\n" not in written[0]
    assert any("setup.py develop" in n for n in run.notes)
    plan = Plan(attempts_for(spec)[0], develop=True)
    assert not adjust_install(spec, plan, LEGACY_KILLED, lambda _m: None)  # once: then it is the failure it is
    assert develop_command()[-1].endswith("setup.py develop --no-deps")


def test_a_setuptools_older_than_the_legacy_backend_installs_the_project_with_setup_py_develop():
    """astropy 1.3 on Python 3.6 pins setuptools 38.2.4 and is built without isolation: that setuptools has no
    ``build_meta.__legacy__`` (40.8), so uv cannot build it at all; pip 21.3 ran ``setup.py develop`` for it."""
    spec = OLD.model_copy(update={"python": "3.6"})
    plan = Plan(attempts_for(spec)[0])
    assert adjust_install(spec, plan, NO_LEGACY_BACKEND, lambda _m: None) and plan.develop


def test_a_failed_build_of_a_dependency_is_not_taken_for_the_projects():
    """Only the project's own build (``@ file:///workspace``) in the legacy backend leads to setup.py develop: a
    dependency's failed build is adjusted as before."""
    spec = OLD.model_copy(update={"resolve_for_python": "3.6"})
    plan = Plan(attempts_for(spec)[0])
    assert adjust_install(spec, plan, OLD_SETUP, lambda _m: None) and not plan.develop


def test_a_resolution_that_fails_on_an_old_setup_py_is_adjusted_as_an_install_is():
    """astropy 1.3: MarkupSafe 1.0 is built while versions are resolved as for Python 3.6: the resolution failed
    on setuptools.Feature and the attempt ended; now the source builds get setuptools<46 and it resolves again."""
    spec = OLD.model_copy(update={"resolve_for_python": "3.6", "test": TestCommand(paths=["tests"])})
    run = FakeRun([("resolve (as for Python 3.6)", 1, OLD_SETUP)])
    got = install(run, spec, {}, lambda _t: None, lambda: None, lambda _t: None, set())
    assert got is not None and "source builds with setuptools<46" in got.history[-1]
    assert run.steps[:3] == ["resolve (as for Python 3.6)", "the source builds' constraints",
                             "resolve (as for Python 3.6)"]


def test_a_pinned_pytest_that_cannot_run_is_overridden_once_moving_it_did_not():
    """requests 2.9's requirements.txt pins pytest==2.8.1: moved forward as of 2021 it stayed 2.8.1 (the pin
    wins), and its tests could not run (INTERNALERROR). The pins of pytest, pluggy and py are then overridden,
    written before the round, and given to the install and the resolution; then nothing more."""
    plan, notes = Plan(attempts_for(OLD)[0], pytest_version=(2, 8)), []
    assert adjust_runtime(OLD, plan, PYTEST_2_ON_39, notes.append, set(), collecting=True) and not plan.overrides
    assert adjust_runtime(OLD, plan, PYTEST_2_ON_39, notes.append, set(), collecting=True)
    assert plan.overrides == ["pluggy", "py", "pytest"]
    assert "pinned by the requirements" in notes[-1] and "taken as of 2021-01-03" in notes[-1]
    assert "--override" in install_command(OLD, plan) and "--override" in " ".join(compile_command(OLD, plan))
    assert not adjust_runtime(OLD, plan, PYTEST_2_ON_39, notes.append, set(), collecting=True)
    recipe = OLD.model_copy(update={"declared_only": True})
    plan = Plan(attempts_for(recipe)[0], bumps={"pytest": "2021-01-03T00:00:00Z", "pluggy": "x", "py": "x"})
    assert not adjust_runtime(recipe, plan, PYTEST_2_ON_39, notes.append, set(), collecting=True)  # a recipe's stays
    run = FakeRun([("check: the tests collect", 3, PYTEST_2_ON_39), ("check: the tests collect", 3, PYTEST_2_ON_39)])
    got = install(run, OLD.model_copy(update={"test": TestCommand(paths=["tests"])}), {}, lambda _t: None,
                  lambda: None, lambda _t: None, set())
    assert got is not None and "pins overridden: pluggy, py, pytest" in got.history[-1]
    assert "the pins that win (overrides, and the test runner's)" in run.steps
