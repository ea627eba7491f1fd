"""Agreement with the SWE-bench reference harness's own code (prints JSON).

Run: ``.venv/bin/python bench/swebench_conformance.py [--reference VERSION ...]`` after bench/swebench_real.py
(whose last evaluation's logs it reads).

The published SWE-bench Verified results come from the harness's releases of 2024-2025. Each is installed from
PyPI into a scratch virtualenv of its own (``~/.cache/bosun-bench/swebench-ref/<version>``, its dependencies
resolved as of its release), and its code -- not a copy of it -- judges the same things bosun judges:

1. ``recipes``: for every (repository, version) of the 500 SWE-bench Verified instances
   (bench/data/swebench_verified_keys.jsonl), the harness's ``MAP_REPO_VERSION_TO_SPECS`` and
   ``MAP_REPO_TO_PARSER`` against bosun's recipe: the test command, the log parser, the interpreter it names,
   its pinned packages, the variables its eval commands export.
2. ``scripts``: for each instance of bench/data/swebench_real/instances.jsonl, the harness's own eval script
   (``make_test_spec(instance).eval_script``) against bosun's steps: the test command line it runs (the
   runner, its options, the test files or labels) and the files it resets before the test patch.
3. ``verdicts``: the test output bosun recorded for each instance (a gold run and a run of base + test patch, from
   ``bosun eval swebench --logs``) read by the harness's log parser and graded by its
   ``get_eval_tests_report``/``get_resolution_status``, against bosun's report: the instance's verdict and
   each FAIL_TO_PASS / PASS_TO_PASS test's.

What this cannot say: whether an environment bosun builds behaves as the harness's images do (that needs the
SWE-bench repositories and a published run's logs: docs/ARCHITECTURE.md, "Evaluation").
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.environments import CACHE  # noqa: E402
from bench.swebench_real import INSTANCES, LOGS  # noqa: E402
from environments.pyconfig import req_name  # noqa: E402
from environments.service import uv_binary  # noqa: E402
from evaluation.harness import END, START, reset_files, runner_command  # noqa: E402
from evaluation.recipes import recipe_for  # noqa: E402
from evaluation.swebench import Instance  # noqa: E402

KEYS = ROOT / "bench" / "data" / "swebench_verified_keys.jsonl"
VENVS = CACHE.parent / "swebench-ref"
REFERENCES = {"2.1.8": "2025-01-15T00:00:00Z", "4.0.4": "2025-08-31T00:00:00Z"}
"""Harness releases of the published Verified results' era, and the date their dependencies are resolved as of."""
PARSER_NAMES = {"parse_log_django": "django", "parse_log_sympy": "sympy", "parse_log_pytest": "pytest",
                "parse_log_pytest_options": "pytest_options", "parse_log_pytest_v2": "pytest_v2",
                "parse_log_matplotlib": "matplotlib", "parse_log_seaborn": "seaborn"}

CHILD = r'''
import inspect, json, sys

payload = json.load(sys.stdin)
import swebench.harness.grading as grading
from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
try:
    from swebench.harness.test_spec.test_spec import make_test_spec
except ImportError:
    from swebench.harness.test_spec import make_test_spec
# the environment script reads requirement files from GitHub (not reachable here; only the eval script is wanted)
for name, module in list(sys.modules.items()):
    if name.startswith("swebench") and module is not None:
        for attr in ("get_requirements", "get_environment_yml"):
            if hasattr(module, attr):
                setattr(module, attr, lambda *a, **k: "")

out = {"specs": {}, "parsers": {}, "scripts": {}, "verdicts": {}, "errors": {}}
for repo, version in payload["keys"]:
    spec = MAP_REPO_VERSION_TO_SPECS.get(repo, {}).get(version)
    if spec is not None:
        out["specs"][f"{repo}@{version}"] = {k: v for k, v in spec.items() if isinstance(v, (str, list, dict, int))}
for repo, fn in MAP_REPO_TO_PARSER.items():
    out["parsers"][repo] = fn.__name__


def parse(repo, log, spec):
    fn = MAP_REPO_TO_PARSER[repo]
    return fn(log, spec) if len(inspect.signature(fn).parameters) > 1 else fn(log)


def grade(status_map, row):
    gold = {"FAIL_TO_PASS": row["FAIL_TO_PASS"], "PASS_TO_PASS": row["PASS_TO_PASS"], "FAIL_TO_FAIL": [],
            "PASS_TO_FAIL": []}
    report = grading.get_eval_tests_report(status_map, gold)
    return {"resolved": grading.get_resolution_status(report) == grading.ResolvedStatus.FULL.value,
            "tests_status": {k: report[k] for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}}


for row in payload["instances"]:
    iid = row["instance_id"]
    try:
        spec = make_test_spec(row)
        out["scripts"][iid] = spec.eval_script
    except Exception as exc:
        out["errors"][iid] = f"make_test_spec: {type(exc).__name__}: {exc}"
        continue
    for run, log in payload["logs"].get(iid, {}).items():
        try:
            out["verdicts"].setdefault(iid, {})[run] = grade(parse(row["repo"], log, spec), row)
        except Exception as exc:
            out["verdicts"].setdefault(iid, {})[run] = {"error": f"{type(exc).__name__}: {exc}"}
json.dump(out, sys.stdout)
'''


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def reference_python(version: str) -> Path:
    """The interpreter of a virtualenv holding that harness release (made once)."""
    venv = VENVS / version
    python = venv / "bin" / "python"
    if not python.exists():
        log(f"installing swebench=={version} (dependencies as of {REFERENCES[version][:10]}) into {venv}")
        uv = str(uv_binary())
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
        subprocess.run([uv, "pip", "install", "-q", "--python", str(python), "--exclude-newer", REFERENCES[version],
                        f"swebench=={version}"], check=True)
    return python


def test_output(text: str) -> str:
    """The tests' own output in a test_output.txt bosun wrote: between the last start marker (the script bosun
    ran is printed above its output, markers and all) and the end marker after it."""
    return text.rsplit(START, 1)[1].split(END, 1)[0] if START in text else ""


def ask_reference(version: str, keys: list[tuple[str, str]], rows: list[dict], logs: dict) -> dict:
    proc = subprocess.run([str(reference_python(version)), "-c", CHILD], input=json.dumps(
        {"keys": keys, "instances": rows, "logs": logs}), capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"swebench=={version}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def compare_recipes(keys: list[tuple[str, str]], counts: dict[tuple[str, str], int], ref: dict) -> dict:
    fields = {"test_cmd": 0, "parser": 0, "python": 0, "pip_packages": 0, "eval_env": 0}
    differences: dict[str, list] = {f: [] for f in fields}
    for repo, version in keys:
        spec = ref["specs"].get(f"{repo}@{version}")
        recipe = recipe_for(repo, version)
        if spec is None or recipe is None:
            differences["test_cmd"].append(f"{repo}@{version}: {'no spec' if spec is None else 'no recipe'}")
            continue
        n = counts[(repo, version)]
        test_cmd = spec.get("test_cmd")
        test_cmd = test_cmd[-1] if isinstance(test_cmd, list) else test_cmd
        checks = {
            "test_cmd": (test_cmd, recipe.test_cmd),
            "parser": (PARSER_NAMES.get(ref["parsers"].get(repo, ""), ref["parsers"].get(repo)), recipe.parser),
            "python": (str(spec.get("python")), recipe.harness_python),
            "pip_packages": (sorted(spec.get("pip_packages", [])), sorted(_unheavy(recipe.requirements))),
            "eval_env": (sorted(_exports(spec.get("eval_commands", []))),
                         sorted((k, v) for k, v in recipe.eval_env.items() if (repo, k) not in DELIBERATE)),
        }
        for field, (theirs, ours) in checks.items():
            same = _pins_kept(repo, theirs, ours) if field == "pip_packages" else theirs == ours
            if same:
                fields[field] += n
            else:
                differences[field].append({"key": f"{repo}@{version}", "instances": n, "harness": theirs,
                                           "bosun": ours})
    total = sum(counts.values())
    return {"instances": total, "agree": {f: f"{v}/{total}" for f, v in fields.items()},
            "differences": {f: d for f, d in differences.items() if d}, "deliberate": list(DELIBERATE.values())}


DELIBERATE = {("sphinx-doc/sphinx", "jinja2"): "Sphinx 3.0-4.4: the harness's own install replaces its Jinja2==3.0.3 "
                                               "with setup.py's Jinja2<3.0 (after its sed); bosun asks for that",
              ("sphinx-doc/sphinx", "PYTHONPATH"): "Sphinx: tox-current-env's link to the interpreter starts the "
                                                   "base Python outside bosun's virtualenv (the harness's conda "
                                                   "environment has none): its packages are named",
              ("psf/requests", "httpbin.org"): "requests before 2.8: its tests call httpbin.org over HTTP and "
                                               "HTTPS, which the harness's containers reached; bosun's sandboxes "
                                               "have no network, so a local httpbin stands in for that name "
                                               "(Recipe.standin, environments/standins.py)"}
"""Pins bosun does not copy, and why (reported with the comparison)."""


def _pins_kept(repo: str, theirs: list[str], ours: list[str]) -> bool:
    """Every package the harness installs is asked for by the recipe, with the same pin when the harness pins it
    (bosun's requirements are the harness's pip_packages and conda packages together)."""
    mine = {req_name(r): r for r in ours}
    for req in theirs:
        name = req_name(req)
        if (repo, name) in DELIBERATE and name in mine:
            continue
        if name not in mine or ("==" in req and mine[name] != req):
            return False
    return True


def _unheavy(reqs: list[str]) -> list[str]:
    return [r.replace("~=", "==", 1) for r in reqs]


def _exports(commands: list[str]) -> list[tuple[str, str]]:
    out = []
    for cmd in commands:
        words = shlex.split(cmd) if cmd.startswith("export ") else []
        for word in words[1:]:
            if "=" in word:
                k, v = word.split("=", 1)
                out.append((k, v))
    return out


def compare_scripts(rows: list[dict], ref: dict) -> dict:
    agree = 0
    differences = []
    for row in rows:
        script = ref["scripts"].get(row["instance_id"])
        recipe = recipe_for(row["repo"], row["version"])
        if script is None or recipe is None:
            continue
        inst = Instance.model_validate(row)
        ours_cmd = [w for w in shlex.split(runner_command(recipe, inst)) if not _assignment(w)]
        theirs_cmd = next((shlex.split(line) for line in script.splitlines()
                           if line.startswith(recipe.test_cmd.split(" ")[0]) or
                           line.startswith(recipe.test_cmd.split("'")[-1].strip().split(" ")[0])), None)
        theirs_cmd = [w for w in theirs_cmd or [] if not _assignment(w)]
        reset = next((line.split()[3:] for line in script.splitlines()
                      if line.startswith(f"git checkout {row['base_commit']}")), [])
        same = theirs_cmd == ours_cmd and reset == reset_files(inst.test_patch)
        agree += same
        if not same:
            differences.append({"instance": row["instance_id"], "harness": {"command": theirs_cmd, "reset": reset},
                                "bosun": {"command": ours_cmd, "reset": reset_files(inst.test_patch)}})
    return {"instances": len([r for r in rows if recipe_for(r["repo"], r["version"])]), "agree": agree,
            "differences": differences}


def _assignment(word: str) -> bool:
    name = word.split("=", 1)[0]
    return "=" in word and name.isidentifier() and name.isupper()


def compare_verdicts(rows: list[dict], ref: dict) -> dict:
    agree_instances = agree_tests = total_tests = compared = 0
    differences = []
    for row in rows:
        iid = row["instance_id"]
        for run, theirs in ref["verdicts"].get(iid, {}).items():
            report_file = LOGS / run / iid / "report.json"
            if not report_file.exists() or "error" in theirs:
                differences.append({"instance": iid, "run": run, "harness": theirs.get("error", "no report")})
                continue
            ours = json.loads(report_file.read_text())[iid]
            compared += 1
            if ours.get("resolved") == theirs["resolved"]:
                agree_instances += 1
            else:
                differences.append({"instance": iid, "run": run, "harness": theirs["resolved"],
                                    "bosun": ours.get("resolved")})
            for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
                mine = ours.get("tests_status", {}).get(kind, {})
                for test in json.loads(row[kind]):
                    total_tests += 1
                    if (test in theirs["tests_status"][kind]["success"]) == (test in mine.get("success", [])) and \
                            (test in theirs["tests_status"][kind]["failure"]) == (test in mine.get("failure", [])):
                        agree_tests += 1
    return {"instance_verdicts": compared, "instances_agree": agree_instances, "tests": total_tests,
            "tests_agree": agree_tests, "differences": differences}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", action="append", default=[], help=f"harness releases ({', '.join(REFERENCES)})")
    args = ap.parse_args()
    keys_rows = [json.loads(line) for line in KEYS.read_text().splitlines() if line.strip()]
    counts: dict[tuple[str, str], int] = {}
    for r in keys_rows:
        counts[(r["repo"], r["version"])] = counts.get((r["repo"], r["version"]), 0) + 1
    keys = sorted(counts)
    rows = [json.loads(line) for line in INSTANCES.read_text().splitlines() if line.strip()]
    for r in rows:
        for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            if not isinstance(r[kind], str):
                r[kind] = json.dumps(r[kind])
    plain = [{**r, "FAIL_TO_PASS": json.loads(r["FAIL_TO_PASS"]), "PASS_TO_PASS": json.loads(r["PASS_TO_PASS"]),
              "hints_text": "", "created_at": r.get("created_at", "")} for r in rows]
    logs = {r["instance_id"]: {run: test_output((LOGS / run / r["instance_id"] / "test_output.txt").read_text())
                               for run in ("gold", "noop")
                               if (LOGS / run / r["instance_id"] / "test_output.txt").exists()} for r in rows}
    out: dict = {"verified_keys": len(keys), "instances": len(rows)}
    for version in args.reference or list(REFERENCES):
        ref = ask_reference(version, [list(k) for k in keys], plain, logs)
        known = [r for r in rows if recipe_for(r["repo"], r["version"])]
        verdicts = compare_verdicts(known, ref) if any(logs.values()) else {
            "note": f"no logs in {LOGS}: run bench/swebench_real.py first"}
        out[f"swebench=={version}"] = {"recipes": compare_recipes(keys, counts, ref),
                                       "scripts": compare_scripts(known, ref), "verdicts": verdicts,
                                       "reference_errors": ref["errors"]}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
