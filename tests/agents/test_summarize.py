"""Summarizers on each kind of tool output (real runs where the tool is on every machine, recorded text otherwise)."""

import subprocess
import sys
import textwrap

from agents.context.summarize import detect_kind, parse_diff, summarize_output
from agents.context.summary import fold_frames

NODE_OUTPUT = """/tmp/t.js:1
function inner(o) { return o.missing.value; }
                                     ^

TypeError: Cannot read properties of undefined (reading 'value')
    at inner (/tmp/t.js:1:38)
    at middle (/tmp/t.js:2:29)
    at outer (/tmp/t.js:3:27)
    at Object.<anonymous> (/tmp/t.js:4:1)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
"""

GO_PANIC = """panic: runtime error: index out of range [5] with length 3

goroutine 1 [running]:
main.get(...)
\t/tmp/x/main.go:8
main.process(0xc000012345)
\t/tmp/x/main.go:14 +0x1d
main.main()
\t/tmp/x/main.go:20 +0x25
exit status 2
"""

GO_TEST = """=== RUN   TestAdd
    add_test.go:9: Add(2, 2) = 5, want 4
--- FAIL: TestAdd (0.00s)
=== RUN   TestSub
--- PASS: TestSub (0.00s)
FAIL
FAIL\texample.com/m\t0.002s
"""


def test_python_traceback_from_a_real_crash(tmp_path):
    script = tmp_path / "deep.py"
    chain = "\n".join(f"def f{i}(n):\n    return f{i + 1}(n)\n" for i in range(30))
    script.write_text(chain + textwrap.dedent("""
        def f30(n):
            return parse(n)

        def parse(n):
            if n == 0:
                return {}["missing"]
            return parse(n - 1)

        def main():
            try:
                f0(40)
            except KeyError as e:
                raise RuntimeError("config is incomplete") from e

        main()
        """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    text = f"exit code: {proc.returncode}\nstderr:\n{proc.stderr}"
    s = summarize_output("run_command", {"command": "python deep.py"}, text)
    assert s.kind == "traceback" and s.text.startswith("exit code: 1")
    assert "KeyError: 'missing'" in s.text and "RuntimeError: config is incomplete" in s.text
    recurse = script.read_text().splitlines().index("    return parse(n - 1)") + 1
    assert f"{script}:{recurse} in parse (x40)" in s.text  # Python's "[Previous line repeated]" folded back in
    assert "... 31 more frames ..." in s.text  # f0 .. f30 between main and the deepest frames
    assert len(s.text) * 5 < len(text)
    assert s.facts.error_lines == ["KeyError: 'missing'", "RuntimeError: config is incomplete"]


def test_javascript_stack():
    s = summarize_output("run_command", {}, "exit code: 1\nstderr:\n" + NODE_OUTPUT)
    assert s.kind == "traceback"
    assert "TypeError: Cannot read properties of undefined (reading 'value')" in s.text
    assert "/tmp/t.js:1 in inner < /tmp/t.js:2 in middle < /tmp/t.js:3 in outer (+1 outer)" in s.text
    assert "node:internal" not in s.text


def test_go_panic_and_go_test():
    s = summarize_output("run_command", {}, GO_PANIC)
    assert "panic: runtime error: index out of range [5] with length 3" in s.text
    assert "/tmp/x/main.go:8 in main.get < /tmp/x/main.go:14 in main.process" in s.text
    t = summarize_output("run_command", {}, GO_TEST)
    assert t.facts.failing_tests == ["TestAdd"] and "add_test.go:9: Add(2, 2) = 5, want 4" in t.text


def test_plain_unified_diff_and_new_files():
    diff = textwrap.dedent("""\
        --- a/src/app.py\t2024-01-01
        +++ b/src/app.py\t2024-01-02
        @@ -1,3 +1,4 @@ def main():
         a
        -b
        +B
        +c
         d
        --- /dev/null
        +++ b/src/new.py
        @@ -0,0 +1,2 @@
        +x = 1
        +-- not a header
        """)
    files = parse_diff(diff)
    assert [(f.path, f.status, f.added, f.removed, f.hunks) for f in files] == [
        ("src/app.py", "M", 2, 1, 1), ("src/new.py", "A", 2, 0, 1)]
    s = summarize_output("run_command", {}, diff)
    assert s.kind == "diff" and "diff: 2 files changed, 2 hunks, +4 -1" in s.text
    assert s.facts.files_changed == ["src/app.py", "src/new.py"]


def test_read_file_and_grep():
    text = "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(
        ["import os", "", "class Config:", "    def load(self):", "        pass"] * 40, 1))
    text += "\n[showing lines 1-200 of 900; call read_file with start_line=201 for more]"
    s = summarize_output("read_file", {"path": "src/config.py"}, text)
    assert s.text.startswith("read src/config.py lines 1-200 of 900")
    assert "3: class Config:" in s.text and "4: def load(self):" in s.text
    assert s.facts.files_read == ["src/config.py:1-200"]
    grep = "\n".join(f"src/m{i % 3}.py:{i}:    value = compute({i})" for i in range(1, 61))
    g = summarize_output("grep", {"pattern": "compute"}, grep)
    assert g.text.splitlines()[0] == "grep 'compute': 60 matches in 3 files"
    assert "src/m1.py: 1, 4, 7" in g.text and "... (20)" in g.text


def test_generic_keeps_head_tail_and_errors():
    lines = [f"step {i}: ok" for i in range(500)]
    lines[250] = "step 250: ERROR: disk quota exceeded"
    s = summarize_output("run_command", {}, "exit code: 2\nstdout:\n" + "\n".join(lines))
    assert s.kind == "generic" and "step 0: ok" in s.text and "step 499: ok" in s.text
    assert "ERROR: disk quota exceeded" in s.text and len(s.text) < 1500


def test_detect_kind():
    assert detect_kind("==== test session starts ====\n") == "pytest"
    assert detect_kind("diff --git a/x b/x\n") == "diff"
    assert detect_kind("Traceback (most recent call last):\n") == "traceback"
    assert detect_kind("hello\n") == "generic"


def test_fold_frames():
    frames = ["t.py:1 in test"] + ["m.py:5 in walk"] * 10 + ["m.py:3 in walk", "n.py:9 in a", "n.py:10 in b"]
    assert fold_frames(frames) == ["t.py:1 in test", "... 11 more frames ...", "n.py:9 in a", "n.py:10 in b"]
    assert fold_frames(frames[:12]) == ["t.py:1 in test", "m.py:5 in walk (x10)", "m.py:3 in walk"]
