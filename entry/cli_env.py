"""``bosun env``: environments per repository and revision (environments/).

    bosun env build --repo PATH [--ref REF] [--json]     build or reuse; exit 0 when ready
    bosun env show  --repo PATH [--ref REF] [--json]     what detection finds and why (nothing is built)
    bosun env list  [--json]                             the environments on this host
    bosun env rm    ENV_ID [ENV_ID...]                   remove environments (directory and image)
    bosun env prune [--max-gb G] [--min-free-gb F] [--older-than-days D] [--outdated] [--bases] [--dry-run] [--json]
    bosun env bases [--build VERSION_OR_SUITE...] [--json]   the base root filesystems (build them ahead)

``build --json`` prints exactly one object ``{"env_id", "python", "cached", "outdated", "build_s", "test_command",
"backend_refs", "log", "warnings", "seed_unignored", "attempts"}`` (outdated: cached, built by older rules; warnings:
what the build made that workspaces will not get; seed_unignored: the build's files .gitignore does not name, which
workspaces get and diffs leave out; attempts: each install attempt and how it went, with what it moved, added,
dropped (soft requirements that did not install) or took from the index instead of a repository); progress goes
to stderr. Exit codes: 0 ready; 1 the build failed (the repository's setup: a one-line reason naming the step and
the log, after the log's tail); 2 bad input (no such repository or ref, an invalid environment file, an unknown
Python version, an unknown environment id); 3 this host cannot build (no Docker engine, not root for
debootstrap).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from typing import Any

from environments.buildrun import BuildFailed
from environments.interpreters import AVAILABLE, FROM_SOURCE, SUITES, interpreter
from environments.models import env_id_for
from environments.service import Environments
from infra.cliargs import CommandParser, Page, add_command, check_non_negative
from infra.errors import BosunError, ConfigError, UnexpectedEnvironment
from infra.settings import load_settings

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_CANNOT_BUILD = 3


REPO = "~/src/calc"
"""A repository path, for the examples."""
CODES = {EXIT_FAILED: "an unexpected failure (one line says what)",
         EXIT_BAD_INPUT: "bad input: no such repository or ref, an invalid environment file, an unknown environment "
                         "id or Python version, a bad setting"}
"""The exit codes every `bosun env` subcommand may return beside 0."""
CANNOT_BUILD = {EXIT_CANNOT_BUILD: "this host cannot build: no Docker engine, not root for debootstrap, no uv"}

ENV_PAGE = Page(
    description="Environments per repository and revision: the interpreter, the dependencies, the project "
                "installed and its test command, detected from the repository (or its environment.toml, or "
                "BOSUN_ENV_OVERRIDES), built once and reused by every task and evaluation on this host (kept in "
                "BOSUN_ENV_CACHE). A build runs the repository's setup in a docker container (root builds the base "
                "root filesystems with debootstrap); show, list, rm and prune need neither. Needs no stack.",
    exit_codes={0: "done (build: the environment is ready)",
                EXIT_FAILED: "the build failed (the repository's setup: the log's tail, then one line naming the "
                             "step and the log), or an unexpected failure",
                EXIT_BAD_INPUT: "bad input (no or an unknown subcommand, no such repository or ref, an invalid "
                                "environment file, an unknown Python version or environment id)",
                **CANNOT_BUILD},
    examples=(f"bosun env show --repo {REPO}", f"bosun env build --repo {REPO} --json", "bosun env list"))


def parser() -> argparse.ArgumentParser:
    p = CommandParser(prog="bosun env", page=ENV_PAGE)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    _build_and_show(sub)
    _list_and_rm(sub)
    _prune(sub)
    _bases(sub)
    return p


def _build_and_show(sub) -> None:
    b = add_command(sub, "build", help="build (or reuse) the environment of a repository at a revision",
                    description="Build (or reuse) the environment of a repository at a revision and print it: its "
                                "id (for `bosun sandbox exec --env`), Python version, test command, images and log. "
                                "Progress goes to stderr. --json prints exactly one object {env_id, python, cached, "
                                "outdated, build_s, test_command, backend_refs, log, warnings, seed_unignored, "
                                "attempts}. A second build of the same revision takes well under a second. Needs a "
                                "Docker engine (and root, or a base built ahead, for the base root filesystems).",
                    exit_codes={0: "the environment is ready",
                                EXIT_FAILED: "the build failed: the log's tail, then one line naming the step and "
                                             "the log",
                                EXIT_BAD_INPUT: CODES[EXIT_BAD_INPUT], **CANNOT_BUILD},
                    examples=(f"bosun env build --repo {REPO}", f"bosun env build --repo {REPO} --ref v1.2.0 --json"))
    b.add_argument("--repo", required=True, help="path of the git repository")
    b.add_argument("--ref", default="HEAD", help="revision (default HEAD)")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    s = add_command(sub, "show", help="print what detection finds and why, without building",
                    description="Print what detection finds for a revision and why, without building: the "
                                "interpreter, requirements (declared, guessed from imports, from files), extras, "
                                "the test command, setup commands, apt packages, stand-ins for public test "
                                "services, the date dependencies resolve as of, and whether it is built already.",
                    exit_codes={0: "printed", EXIT_FAILED: CODES[EXIT_FAILED],
                                EXIT_BAD_INPUT: "no such repository or ref, an invalid environment file or override, "
                                                "an unknown Python version, or a bad setting"},
                    examples=(f"bosun env show --repo {REPO}", f"bosun env show --repo {REPO} --ref main --json"))
    s.add_argument("--repo", required=True, help="path of the git repository")
    s.add_argument("--ref", default="HEAD", help="revision (default HEAD)")
    s.add_argument("--json", action="store_true", help="print the detection as JSON")


def _list_and_rm(sub) -> None:
    ls = add_command(sub, "list", help="the environments on this host",
                     description="The environments on this host: id, Python version, size, last use, repository and "
                                 "commit; `outdated` when an older bosun's build rules made it (it works as built).",
                     exit_codes={0: "listed (maybe none)", EXIT_FAILED: CODES[EXIT_FAILED],
                                 EXIT_BAD_INPUT: "a bad setting"},
                     examples=("bosun env list", "bosun env list --json"))
    ls.add_argument("--json", action="store_true", help="print the environments as a JSON list")
    rm = add_command(sub, "rm", help="remove environments",
                     description="Remove environments (their directory and image). Every id is checked before "
                                 "anything is removed; the next use of one builds it again.",
                     exit_codes={0: "removed", EXIT_FAILED: CODES[EXIT_FAILED],
                                 EXIT_BAD_INPUT: "an id that is not an environment id, or no such environment on this "
                                                 "host (nothing is removed)"},
                     examples=("bosun env rm env-0123456789abcdef0123",))
    rm.add_argument("env_ids", nargs="+", metavar="ENV_ID", help="an environment id, as `bosun env list` shows it")


def _prune(sub) -> None:
    pr = add_command(sub, "prune", help="remove unused environments (bounded disk)",
                     description="Remove what is not needed: unfinished builds, installer caches no build uses, orphan "
                                 "images of this cache, the least recently used environments beyond --max-gb or while "
                                 "the cache's file system has less than --min-free-gb free, and, when asked, those "
                                 "unused for --older-than-days, those built by older rules (--outdated) and unused "
                                 "bases. Never one used within the hour: its next use builds it again.",
                     exit_codes={0: "pruned (or, --dry-run, said what would go)",
                                 EXIT_FAILED: CODES[EXIT_FAILED],
                                 EXIT_BAD_INPUT: "a negative or non-finite size or age, or a bad setting"},
                     examples=("bosun env prune --dry-run", "bosun env prune --max-gb 20 --older-than-days 30",
                               "bosun env prune --outdated --bases --json"))
    pr.add_argument("--max-gb", type=float, default=None, help="keep the cache under this size (default "
                                                                "BOSUN_ENV_MAX_GB)")
    pr.add_argument("--min-free-gb", type=float, default=None, help="remove the least recently used while the "
                    "cache's file system has less free (default BOSUN_ENV_MIN_FREE_GB)")
    pr.add_argument("--older-than-days", type=float, default=None, help="also remove environments unused this long")
    pr.add_argument("--outdated", action="store_true", help="also remove environments built by older rules "
                    "(`bosun env list` marks them; their next use builds them again)")
    pr.add_argument("--bases", action="store_true", help="also remove bases no environment uses")
    pr.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")
    pr.add_argument("--json", action="store_true", help="print what was removed as one JSON object")


def _bases(sub) -> None:
    bs = add_command(sub, "bases", help="the base root filesystems (one per Python version)",
                     description="List the base root filesystems environments start from (one per Python version, "
                                 "with or without a C toolchain), or build some ahead with --build (Debian's "
                                 "interpreters by debootstrap, needing root; the from-source ones compiled).",
                     exit_codes={0: "listed (or built)", EXIT_FAILED: "a base could not be built, or an unexpected "
                                                                      "failure",
                                 EXIT_BAD_INPUT: "an unknown Python version or suite, or a bad setting",
                                 **CANNOT_BUILD},
                     examples=("bosun env bases", "bosun env bases --build 3.11 3.13",
                               "bosun env bases --build 3.6 --compilers"))
    bs.add_argument("--build", nargs="*", default=None, metavar="VERSION",
                    help=f"build these bases now (Python versions {', '.join(AVAILABLE)} or suites "
                         f"{', '.join(SUITES)}; {', '.join(FROM_SOURCE)}: CPython built from source, named "
                         "only; none: all the Debian ones)")
    bs.add_argument("--compilers", action="store_true", help="the variant with a C toolchain")
    bs.add_argument("--json", action="store_true", help="print the bases as a JSON list")


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _progress(line: str) -> None:
    _err(f"bosun env: {line}")


def _one_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def env_main(argv: list[str]) -> int:
    """Entry point of ``bosun env``; ``argv`` are the arguments after ``env``."""
    args = parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        _err(f"bosun env: {exc}")
        return EXIT_BAD_INPUT
    envs = Environments(settings, progress=_progress)
    try:
        return COMMANDS[args.cmd](envs, args)
    except BuildFailed as exc:
        if exc.tail:
            _err("bosun env: the build log's last lines:\n" + "\n".join(f"  | {line}" for line in
                                                                          exc.tail.splitlines()))
        _err(f"bosun env: {_one_line(exc)}")
        return EXIT_FAILED
    except ConfigError as exc:
        _err(f"bosun env: {_one_line(exc)}")
        return EXIT_BAD_INPUT
    except UnexpectedEnvironment as exc:
        _err(f"bosun env: cannot build here: {_one_line(exc)}")
        return EXIT_CANNOT_BUILD
    except BosunError as exc:
        _err(f"bosun env: {_one_line(exc)}")
        return EXIT_FAILED


def build(envs: Environments, args: argparse.Namespace) -> int:
    started = time.monotonic()
    det, tree = envs.detect_repo(args.repo, args.ref)
    prepared = envs.ensure(det, tree)
    record = prepared.record
    if record.outdated:
        _progress(f"{record.env_id} was built by older rules than this bosun's; it works as built. `bosun env rm "
                  f"{record.env_id}` and build again for the current ones")
    out = {"env_id": record.env_id, "python": record.python, "cached": prepared.cached, "outdated": record.outdated,
           "build_s": round(time.monotonic() - started, 3), "test_command": record.test_command,
           "backend_refs": record.backend_refs, "log": str(envs.log_of(record)), "warnings": record.warnings,
           "seed_unignored": record.seed_unignored, "attempts": record.attempts, "toolchain": record.toolchain}
    if args.json:
        print(json.dumps(out))
    else:
        state = "cached" if prepared.cached else f"built in {out['build_s']:.0f} s"
        print(f"{record.env_id}: python {record.python}, {state}\n  test command: {record.test_command}\n"
              f"  docker: {record.backend_refs.get('docker')}\n  bwrap: {record.backend_refs.get('bwrap')}\n"
              f"  log: {out['log']}")
        if record.attempts:
            print(f"  install: {record.attempts[-1]}")
        if record.toolchain:
            print(f"  toolchain ({'Debian' if record.spec.native else 'npm registry'}): "
                  + ", ".join(f"{k} {v}" for k, v in record.toolchain.items()))
        if record.seed_unignored:
            shown = record.seed_unignored[:5] + (["..."] if len(record.seed_unignored) > 5 else [])
            print(f"  left out of diffs: {len(record.seed_unignored)} path(s) the build made that .gitignore does "
                  f"not name: {' '.join(shown)}")
        for warning in record.warnings:
            print(f"  warning: {warning}")
    return 0


def show(envs: Environments, args: argparse.Namespace) -> int:
    det, _tree = envs.detect_repo(args.repo, args.ref)
    record = envs.lookup(det, need_docker=False)
    key = record.key if record is not None else envs.key(det)
    if args.json:
        print(json.dumps({"env_id": env_id_for(key), "built": record is not None, **det.model_dump(mode="json")},
                         indent=2))
        return 0
    spec = det.spec
    built = "not built yet" if record is None else "built" if record.key == envs.key(det) else \
        f"built as of {(record.spec.as_of() or '')[:10]}, for an earlier commit with the same install inputs"
    print(f"{det.repository} at {det.commit[:12]} ({det.commit_date[:10]}): {env_id_for(key)} ({built}; "
          f"{spec.origin})")
    if det.warning:
        print(f"warning: {det.warning}")
    if spec.node is not None:
        node = spec.node
        rows = [("node", f"{node.line} (its newest release, from the npm registry)" if node.line.isdigit()
                 else node.line), ("package manager", f"{node.package_manager} {node.pm_version}".strip()),
                ("install", shlex.join(node.install) + (f" (as of {node.before})" if node.before else "")),
                ("test command", spec.test.text + (f" ({node.runner})" if node.runner else "")),
                ("workspaces", "yes" if node.workspaces else "no"),
                ("per revision", "yes" if spec.per_revision else "no"),
                ("base", f"python {spec.python}, with compilers (for native modules)")]
    elif spec.native is not None:
        native = spec.native
        rows = [("toolchain", f"{native.package} (Debian's, in the base)"),
                ("dependencies", " && ".join(spec.setup) + " (at build time, with network)" if spec.setup else "-"),
                ("test command", next((r.value for r in det.reasons if r.field == "test_command"), spec.test.text)
                 + f" ({native.runner}" + (f"; offline: {' '.join(f'{k}={v}' for k, v in native.offline.items())})"
                                           if native.offline else ")")),
                ("base", f"python {spec.python}, with compilers and {' '.join(spec.apt)}")]
    elif spec.image is not None:
        image = spec.image
        rows = [("image", f"{image.dockerfile} (built locally" + (f", context {image.context}" if image.context else "")
                 + (f", target {image.target}" if image.target else "") + ")" if image.dockerfile else
                 f"{image.image} (pulled when this engine lacks it)"),
                ("declared in", image.source), ("prepare commands", " && ".join(spec.prepare) or "-"),
                ("setup commands", " && ".join(spec.setup) + " (in the image, with network)" if spec.setup else "-"),
                ("test command", spec.test.text + f" ({image.runner or 'unknown'})"),
                ("sandboxes", "docker only (the system is the image's)"),
                ("per revision", "yes" if spec.per_revision else "no")]
    else:
        rows = _python_rows(spec)
    if spec.node_part is not None:
        part = spec.node_part
        rows.append(("part " + (part.root or "(top)"), f"JavaScript/TypeScript: node {part.line}, "
                     f"{part.package_manager} ({shlex.join(part.install)}); tests: "
                     + (f"{part.test} ({part.runner or 'unknown'}), after the main ones" if part.test else
                        "not run (the CI does not run them)")))
    for name, value in rows:
        print(f"  {name:22} {value}")
    print("why:")
    for r in det.reasons:
        print(f"  - {r.field}: {r.value[:100]}  <- {r.source}")
    for note in det.notes:
        print(f"  note: {note}")
    return 0


def _python_rows(spec: Any) -> list[tuple[str, str]]:
    return [("python", spec.python), ("test command", spec.test.text),
            ("install the project", "yes, editable" + (f" with [{','.join(spec.extras)}]" if spec.extras else "")
             if spec.install_project else "no"),
            ("requirements", ", ".join(spec.requirements) or "-"), ("guessed from imports", ", ".join(spec.guessed)
                                                                    or "-"),
            ("requirement files", ", ".join(spec.requirement_files + [f"{f} (optional)" for f in
                                                                       spec.optional_files]) or "-"),
            ("resolved as of", spec.exclude_newer or "now"), ("setup commands", " && ".join(spec.setup) or "-"),
            ("apt packages", " ".join(spec.apt) or "-"), ("compilers", "yes" if spec.compilers else "no"),
            ("per revision", "yes" if spec.per_revision else "no"),
            ("stand-ins", ", ".join(spec.standins) + " (started before the tests)" if spec.standins else "-")]


def _row(record: Any, envs: Environments) -> dict[str, Any]:
    return {"env_id": record.env_id, "python": record.python, "repository": record.repository,
            "commit": record.commit, "test_command": record.test_command, "built_at": record.built_at,
            "build_s": record.build_s, "size_mb": record.size_mb, "backend_refs": record.backend_refs,
            "outdated": record.outdated,
            "last_used": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(envs.store.last_used(record.key)))}


def list_(envs: Environments, args: argparse.Namespace) -> int:
    rows = [_row(r, envs) for r in envs.store.all()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no environments on this host (`bosun env build --repo PATH` builds one)")
    for r in rows:
        size = r["size_mb"].get("docker_layer", 0) + r["size_mb"].get("bwrap", 0)
        print(f"{r['env_id']}  python {r['python']:8} {size:7.0f} MB  used {r['last_used']}  "
              f"{r['repository']}@{r['commit'][:12]}" + ("  (outdated: built by older rules)" if r["outdated"] else ""))
    if any(r["outdated"] for r in rows):
        print("outdated environments keep working as built; `bosun env prune --outdated` (or `bosun env rm ID`) "
              "removes them, and their next use builds them by the current rules")
    return 0


def rm(envs: Environments, args: argparse.Namespace) -> int:
    for env_id in args.env_ids:
        envs.store.find(env_id)  # every id is checked before anything is removed
    for env_id in args.env_ids:
        envs.remove(env_id)
        print(f"removed {env_id}")
    return 0


def prune(envs: Environments, args: argparse.Namespace) -> int:
    max_gb = args.max_gb if args.max_gb is not None else envs.settings.env_max_gb
    min_free = args.min_free_gb if args.min_free_gb is not None else envs.settings.env_min_free_gb
    for flag, value in (("--max-gb", max_gb), ("--min-free-gb", min_free), ("--older-than-days", args.older_than_days)):
        check_non_negative(flag, value)
    out = envs.prune(max_gb=max_gb, older_than_days=args.older_than_days, bases=args.bases, dry_run=args.dry_run,
                     min_free_gb=min_free, outdated=args.outdated)
    if args.json:
        print(json.dumps(out))
    else:
        verb = "would remove" if args.dry_run else "removed"
        print(f"{verb} {len(out['environments'])} environment(s), {len(out['images'])} orphan image(s), "
              f"{len(out['staging'])} unfinished build(s), {len(out['uv_caches'])} installer cache(s), "
              f"{len(out['bases'])} base(s); {out['freed_mb']:.0f} MB")
    return 0


def bases(envs: Environments, args: argparse.Namespace) -> int:
    if args.build is not None:
        wanted = args.build or list(AVAILABLE)
        versions = [SUITES[w] if w in SUITES else interpreter(w, what="--build").version for w in wanted]
        api = None
        try:
            api = envs.api
        except UnexpectedEnvironment as exc:
            _progress(f"no docker engine ({_one_line(exc)}): the bases are built for bwrap only")
        for version in versions:
            info = envs.bases.ensure(version, compilers=args.compilers, docker=api, progress=_progress)
            _progress(f"base {info.name}: python {info.python}, {info.size_mb:.0f} MB, {info.rootfs}")
    infos = [json.loads(i.model_dump_json()) for i in envs.bases.all()]
    if args.json:
        print(json.dumps(infos, indent=2))
    elif args.build is None:
        for i in infos:
            print(f"{i['name']}  python {i['python']:8} {i['size_mb']:6.0f} MB  {i['docker_tag']}")
    return 0


COMMANDS = {"build": build, "show": show, "list": list_, "rm": rm, "prune": prune, "bases": bases}


def main() -> None:
    sys.exit(env_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
