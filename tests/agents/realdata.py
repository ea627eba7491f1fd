"""Real long tool outputs for the compaction tests and bench: a generated project with 300 tests, some failing
with assertion errors and deep tracebacks, run with the machine's ``python3 -m pytest``; and a big ``git diff``
between two generated versions of a project.

Nothing here is canned: every output is produced by running pytest and git in a temporary directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

N_MODULES = 12
TESTS_PER_MODULE = 25  # 12 x 25 = 300 tests

PKG_FILES = {
    "pkg/__init__.py": "",
    "pkg/calc.py": '''
        """Arithmetic helpers (with deliberate bugs)."""


        def add(a, b):
            if a == 7:
                return a + b + 1  # bug: off by one for 7
            return a + b


        def mean(values):
            return sum(values) / len(values)


        def scale(record, factor):
            return {k: v * factor for k, v in record.items() if k != "skip"}
        ''',
    "pkg/tree.py": '''
        """A recursive walk that fails at the bottom for some inputs."""


        class Node:
            def __init__(self, value, child=None):
                self.value = value
                self.child = child


        def build(depth, bad=None):
            node = None
            for i in range(depth):
                node = Node(bad if i == 0 and bad is not None else i, node)
            return node


        def walk(node, seen=0):
            if node is None:
                return seen
            if node.value == "bad":
                raise ValueError(f"bad node after {seen} steps")
            return walk(node.child, seen + 1)
        ''',
    "pkg/config.py": '''
        """Config lookups."""

        DEFAULTS = {"name": "demo", "retries": 3}


        def get(key, overrides=None):
            merged = dict(DEFAULTS, **(overrides or {}))
            return merged[key]


        def load(text):
            try:
                return dict(line.split("=", 1) for line in text.splitlines() if line)
            except ValueError as e:
                raise RuntimeError(f"cannot parse config line in {text!r}") from e
        ''',
}
# A chain of modules layer0 -> layer1 -> ... -> layer7; the last one divides.
for _i in range(8):
    if _i < 7:
        PKG_FILES[f"pkg/layer{_i}.py"] = f'''
        from pkg import layer{_i + 1}


        def step{_i}(x, divisor):
            y = x + {_i}
            return layer{_i + 1}.step{_i + 1}(y, divisor)
        '''
    else:
        PKG_FILES["pkg/layer7.py"] = '''
        def step7(x, divisor):
            return x / divisor
        '''


def _test_module(m: int) -> str:
    """25 tests; module m fails a handful of them in different ways."""
    return textwrap.dedent(f'''
        import pytest

        from pkg import calc, config, layer0, tree


        @pytest.mark.parametrize("i", range(8))
        def test_add_{m}(i):
            assert calc.add(i, {m}) == i + {m}


        def test_mean_{m}():
            assert calc.mean([{m}, {m} + 2]) == {m} + 1


        def test_mean_empty_{m}():
            values = [] if {m} % 4 == 1 else [1]
            assert calc.mean(values) >= 0


        def test_scale_{m}():
            got = calc.scale({{"a": 1, "b": {m}, "skip": 2}}, 2)
            expected = {{"a": 2, "b": {m} * 2}}
            if {m} % 3 == 2:
                expected["skip"] = 4
            assert got == expected


        @pytest.mark.parametrize("depth", [3, 10, 30])
        def test_walk_{m}(depth):
            bad = "bad" if ({m} % 3 == 0 and depth == 30) else None
            assert tree.walk(tree.build(depth, bad)) == depth


        @pytest.mark.parametrize("divisor", [1, 2, 5])
        def test_layers_{m}(divisor):
            d = 0 if ({m} % 4 == 2 and divisor == 5) else divisor
            assert layer0.step0({m}, d) > 0


        def test_config_get_{m}():
            key = "timeout" if {m} % 5 == 4 else "name"
            assert config.get(key)


        def test_config_load_{m}():
            text = "a=1\\nbroken" if {m} % 6 == 5 else "a=1\\nb=2"
            assert config.load(text)["a"] == "1"


        @pytest.fixture
        def server_{m}():
            if {m} % 7 == 3:
                raise ConnectionRefusedError("fixture could not reach 127.0.0.1:{8000 + m}")
            return {{"port": {8000 + m}}}


        def test_server_{m}(server_{m}):
            assert server_{m}["port"] == {8000 + m}


        class TestShapes{m}:
            def test_len(self):
                print("checking shape lengths for module {m}")
                assert len("x" * {m}) == {m}

            def test_attr(self):
                thing = None if {m} % 5 == 1 else type("T", (), {{"size": 1}})()
                assert thing.size == 1

            @pytest.mark.parametrize("word", ["alpha", "beta-gamma", "delta"])
            def test_upper(self, word):
                assert word.upper().lower() == word

            def test_types(self):
                if {m} % 6 == 0:
                    assert calc.add("{m}", {m})
                assert True
        ''')


@dataclass
class PytestRun:
    """One real pytest run: how it was run, its exit code and output."""

    args: list[str]
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + ("\n" + self.stderr if self.stderr else "")

    def as_run_command(self) -> str:
        """The text the run_command tool would return for this run."""
        parts = [f"exit code: {self.exit_code}"]
        if self.stdout:
            parts.append("stdout:\n" + self.stdout)
        if self.stderr:
            parts.append("stderr:\n" + self.stderr)
        return "\n".join(parts)

    def as_run_tests(self) -> str:
        """The text the run_tests tool returns (headline, failed ids with their messages, the last 12,000
        characters), as agents/tools/commands.py builds it."""
        from environments.results import parse_pytest_output

        report = parse_pytest_output(self.output, self.exit_code)
        head = f"pytest: {report.headline()}"
        if report.failed:
            head += "\nfailed: " + ", ".join(report.failed)
            for tid in report.failed:
                if tid in report.messages:
                    head += f"\n  {tid}: {report.messages[tid][:300]}"
        return f"{head}\n\n{self.output[-12_000:]}"


def write_project(root: Path) -> Path:
    for rel, text in PKG_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    tests = root / "tests"
    tests.mkdir(exist_ok=True)
    for m in range(N_MODULES):
        (tests / f"test_mod{m:02d}.py").write_text(_test_module(m))
    (root / "conftest.py").write_text("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n")
    return root


def machine_python() -> str:
    """The machine's python3 (resolved past launcher shims such as pyenv's) when it has pytest, else this
    interpreter (which has it)."""
    exe = shutil.which("python3")
    if exe:
        probe = subprocess.run([exe, "-c", "import sys, pytest; print(sys.executable)"], capture_output=True,
                               text=True, timeout=60)
        if probe.returncode == 0 and probe.stdout.strip():
            return probe.stdout.strip()
    return sys.executable


def _pytest_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def start_pytest(root: Path, arg_lists: list[list[str]]) -> list[tuple[list[str], subprocess.Popen[str]]]:
    """Start several pytest runs of the same project at once (they only read it; no cache is written)."""
    python = machine_python()
    return [(args, subprocess.Popen([python, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=root,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_pytest_env()))
            for args in arg_lists]


def finish_pytest(started: list[tuple[list[str], subprocess.Popen[str]]]) -> list[PytestRun]:
    runs = []
    for args, proc in started:
        out, err = proc.communicate(timeout=120)
        runs.append(PytestRun(args=list(args), exit_code=proc.returncode, stdout=out, stderr=err))
    return runs


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=env, check=True)
    return proc.stdout


def big_diff(root: Path) -> str:
    """``git diff`` (with renames) between two generated versions of a project: edits, adds, deletes, a rename."""
    root.mkdir(parents=True, exist_ok=True)
    write_project(root)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "v1")
    for m in range(N_MODULES):
        path = root / "tests" / f"test_mod{m:02d}.py"
        text = path.read_text()
        text = text.replace("calc.add(", "calc.plus(").replace("tree.walk(", "tree.traverse(")
        text = text.replace("assert True", f"assert calc.plus({m}, 1) == {m + 1}")
        text += textwrap.dedent(f'''

            def test_extra_{m}():
                total = 0
                for k in range({m} + 3):
                    total = calc.plus(total, k)
                assert total == sum(range({m} + 3))
            ''')
        path.write_text(text)
    calc = root / "pkg" / "calc.py"
    calc.write_text(calc.read_text().replace("def add(", "def plus(") + "\n\nadd = plus  # old name\n")
    tree = root / "pkg" / "tree.py"
    tree.write_text(tree.read_text().replace("walk", "traverse"))
    for i in range(8):
        layer = root / "pkg" / f"layer{i}.py"
        layer.write_text(layer.read_text().replace("divisor", "denominator"))
    (root / "pkg" / "config.py").rename(root / "pkg" / "settings.py")
    for m in range(N_MODULES):
        path = root / "tests" / f"test_mod{m:02d}.py"
        path.write_text(path.read_text().replace("from pkg import calc, config,", "from pkg import calc, settings as "
                                                 "config,"))
    (root / "conftest.py").unlink()
    (root / "pkg" / "report.py").write_text("\n".join(
        f"def section_{i}(rows):\n    return [r for r in rows if r.get('kind') == {i}]\n" for i in range(40)))
    _git(root, "add", "-A")
    return _git(root, "diff", "--cached", "-M", "--no-color")


@dataclass
class RealOutputs:
    """Outputs for the compaction tests: pytest (short and long tracebacks, as two tools show them) and a diff."""

    short: PytestRun
    """``-rA --tb=short -q`` (what run_tests runs)."""
    long: PytestRun
    """Plain ``pytest`` (default long tracebacks), as a model would type it in run_command."""
    diff: str
    file_text: str
    """A source file of the project as read_file shows it."""


def produce(tmp: Path) -> RealOutputs:
    project = write_project(tmp / "project")
    started = start_pytest(project, [["-rA", "--tb=short", "-q"], []])
    diff = big_diff(tmp / "diffrepo")  # while the two pytest runs go on
    short, long = finish_pytest(started)
    source = (project / "tests" / "test_mod03.py").read_text().splitlines()
    file_text = "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(source, 1))
    return RealOutputs(short=short, long=long, diff=diff, file_text=file_text)
