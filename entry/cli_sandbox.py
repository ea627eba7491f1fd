"""``bosun sandbox exec``: run one command in a fresh sandbox, from the command line.

    bosun sandbox exec [--env ENV_ID] [--backend auto|docker|bwrap] [--workspace DIR] [--timeout S] [--json]
                       -- CMD [ARGS...]

``--env ENV_ID`` runs the command in a sandbox of that environment (`bosun env build` prints the id): its
interpreter, its virtualenv first on PATH, the files its build left in the source tree put into the workspace
(never over existing ones); the same rules as every sandbox (no network...). An unknown id: exit code 2. When the
environment has stand-ins for public test services (``bosun env show``: ``standins``; a local httpbin.org for
requests before 2.8), they are started first and the command's Python processes reach them by name, as when the
tests are judged; ``--no-standins`` runs the command alone.

With ``--json`` it prints exactly one JSON object ``{"exit_code", "stdout", "stderr", "timed_out", "duration_s"}``
and exits 0 whenever the sandbox ran the command (whatever the command's exit code). Without it, the command's
output is passed through and its exit code returned (124 on timeout). When the sandbox cannot start: a one-line
error on stderr and exit code 3. Bad usage: exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from environments.runtime import provider_for
from environments.standins import wrap
from environments.store import EnvStore, default_cache
from infra.cliargs import CommandParser, Page
from infra.errors import BosunError, ConfigError
from infra.settings import Settings
from sandbox import docker_available, get_provider
from sandbox.base import SandboxProvider

EXIT_SANDBOX_FAILED = 3


PAGE = Page(
    description=("Run one command in a fresh sandbox bound to a workspace (the current directory by default, at "
                 "/workspace), under the rules of agents' tool calls: no network, at most --output-cap bytes kept "
                 "per stream, the command's whole process tree killed past --timeout. --env ENV_ID runs it in an "
                 "environment's sandbox (`bosun env build` prints the id): its interpreter, its virtualenv first on "
                 "PATH, the files its build left in the source tree, and its stand-ins for public test services (a "
                 "local httpbin.org) started first unless --no-standins. Without --json the command's output is "
                 "passed through; --json prints one object {exit_code, stdout, stderr, timed_out, duration_s}. Needs "
                 "docker (and the sandbox image, `make bootstrap`) or bwrap; no stack."),
    exit_codes={0: "the command exited 0 (--json: the sandbox ran the command, whatever its exit code)",
                1: "the command exited 1, or ended without an exit code (killed by a signal)",
                2: "bad usage: no command, a --timeout of 0 or less, a workspace that is not a directory, an unknown "
                   "--env",
                3: "the sandbox could not start or run the command (one line says why)",
                124: "the command timed out (its processes were killed)"},
    examples=("bosun sandbox exec --json -- python3 -c 'print(1)'",
              "bosun sandbox exec --env env-0123456789abcdef0123 --timeout 600 -- python -m pytest -q",
              "bosun sandbox exec --backend bwrap --workspace ~/src/calc -- git status --short"),
    notes="Without --json, any other exit code is the command's own (so are 1, 2 and 3 when the command returns "
          "them: --json tells them apart).")


def parser() -> argparse.ArgumentParser:
    p = CommandParser(prog="bosun sandbox exec", page=PAGE)
    p.add_argument("--env", default=None, metavar="ENV_ID", help="run in this environment (bosun env build)")
    p.add_argument("--no-standins", action="store_true",
                   help="with --env: do not start the environment's stand-ins for public test services")
    p.add_argument("--backend", choices=["auto", "docker", "bwrap"], default=None,
                   help="sandbox backend (default: the sandbox_backend setting, BOSUN_SANDBOX_BACKEND)")
    p.add_argument("--workspace", default=None, help="directory bound at /workspace (default: the current one)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds before the command's tree is killed")
    p.add_argument("--image", default=None, help="docker image (default: the sandbox_image setting)")
    p.add_argument("--output-cap", type=int, default=1_000_000, help="bytes kept per stream")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of passing output through")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    return p


def _defaults() -> tuple[str, str | None, Path]:
    try:
        s = Settings()
        return s.sandbox_backend, s.sandbox_image, Path(s.env_cache) if s.env_cache else default_cache()
    except Exception:  # noqa: BLE001 - settings are optional here
        return os.environ.get("BOSUN_SANDBOX_BACKEND", "bwrap"), None, default_cache()


def _env_provider(env_id: str, backend: str, cache: Path) -> SandboxProvider:
    """The provider of an environment's sandboxes; ConfigError for an unknown id."""
    record = EnvStore(cache).find(env_id)
    EnvStore(cache).touch(record.key)
    if backend == "auto":
        backend = "docker" if docker_available(record.backend_refs.get("docker"))[0] else "bwrap"
    return provider_for(record, backend)


async def _run(backend: str, image: str | None, workspace: Path, cmd: list[str], timeout: float, cap: int,
               env_id: str | None = None, cache: Path | None = None, standins: bool = True):
    provider = (_env_provider(env_id, backend, cache or default_cache()) if env_id
                else get_provider(backend, image=image))
    sb = await provider.acquire(workspace)
    hosts = sb.environment.standins if standins and sb.environment is not None else []
    try:
        return await sb.exec(wrap(cmd, hosts), timeout_s=timeout, output_cap=cap)
    finally:
        await sb.close()


def exec_main(argv: list[str]) -> int:
    """Entry point of ``bosun sandbox exec``; ``argv`` are the arguments after ``exec``."""
    if argv and argv[0] == "exec":
        argv = argv[1:]
    args = parser().parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        print("bosun sandbox exec: no command given (usage: bosun sandbox exec [options] -- CMD [ARGS...])",
              file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print("bosun sandbox exec: --timeout must be positive", file=sys.stderr)
        return 2
    default_backend, default_image, cache = _defaults()
    backend = args.backend or default_backend
    workspace = Path(args.workspace or os.getcwd()).resolve()
    if not workspace.is_dir():
        print(f"bosun sandbox exec: workspace {workspace} is not a directory", file=sys.stderr)
        return 2
    try:
        res = asyncio.run(_run(backend, args.image or default_image, workspace, cmd, args.timeout,
                               args.output_cap, args.env, cache, not args.no_standins))
    except ConfigError as exc:
        print(f"bosun sandbox exec: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except BosunError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"bosun sandbox exec: the {backend} sandbox could not run the command: {first}", file=sys.stderr)
        return EXIT_SANDBOX_FAILED
    if args.json:
        print(json.dumps({"exit_code": res.exit_code, "stdout": res.stdout, "stderr": res.stderr,
                          "timed_out": res.timed_out, "duration_s": res.duration_s}))
        return 0
    sys.stdout.write(res.stdout)
    sys.stderr.write(res.stderr)
    if res.timed_out:
        print(f"bosun sandbox exec: timed out after {args.timeout:g} s; the command's processes were killed",
              file=sys.stderr)
        return 124
    return res.exit_code if res.exit_code is not None else 1


def main() -> None:
    sys.exit(exec_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
