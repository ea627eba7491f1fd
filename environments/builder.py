"""Building an environment: the repository's setup runs in a docker container on the base image, with network,
as an unprivileged user; the result becomes an image layered on the base (docker) and a directory (bwrap).

The build container: the base image, the user ``bosun`` (uid 1000), every capability dropped, no new privileges,
docker's default seccomp profile, the default bridge network (the registries are reachable; the host, on any of
its addresses, the other containers and link-local addresses, a cloud's metadata service among them, are not:
sandbox/netns.py, build_only), memory and pids limits. The source (``git archive`` of the commit) and the tools
(uv, the host's CA bundle) are copied in through the engine into anonymous volumes that are never part of the
image (and go with the build container); the installer's cache is the environment's own, for the build only.
Steps, each logged under a header in ``build.log``:

1. ``prepare``: the declared commands that edit the source before the install; ``virtualenv``: ``uv venv`` at
   /opt/bosun-env/venv with the base's python3;
2. ``install``: ``uv pip install`` of the project (editable), its test extras, test requirements and pytest
   plugins, as of the commit's date, with the checks that pytest starts (every plugin loads) and that the tests
   collect; what fails on this interpreter is moved to a later date (environments/installer.py);
3. ``setup``: the declared setup commands, or detection's (tox's ``pip install`` commands, a Dockerfile's or
   devcontainer's): one of detection's that fails is noted and the build goes on (``setup_best_effort``);
4. ``seed``: the files the build left in the source tree (compiled extensions, generated version files) are kept
   as /opt/bosun-env/seed.tar, to be put into each workspace. Those git does not ignore are listed
   (``seed-unignored``, ``seed-exclude``: as files, or as the top directory the build made) so that diffs, in the
   sandbox and on the host, leave them out as if the repository's .gitignore named them;
5. ``image``: ``docker commit`` as ``bosun-env:<key>``; ``export``: /opt/bosun-env streamed out and unpacked
   by the rules of environments/unpack.py for bwrap.

Any failing step ends the build with ``BuildFailed`` naming the step, with the log's tail; nothing of a failed build
is kept but its log.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import posixpath
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.bases import BUILD_UID, BaseInfo
from environments.buildfiles import SEED_SCRIPT, StreamFile, context_tar, owned_tar, tools_tar
from environments.buildrun import BuildFailed, BuildRun, CappedLog
from environments.imports import is_test_file, local_names
from environments.installcmds import collect_sample
from environments.installer import install
from environments.installplan import TOOLS, UV, uv_config
from environments.interpreters import interpreter, interpreter_env
from environments.models import (
    ENV_ROOT,
    NODE,
    SEED_UNIGNORED_MAX,
    VENV,
    Detection,
    EnvSpec,
    ImageSpec,
    NodeSpec,
    parse_unignored,
)
from environments.netconf import CA_IN_BUILD, PROXY_VARS, BuildNetwork
from environments.node import NEWEST, install_attempts
from environments.store import CACHE_LABEL
from environments.toolchains import REGISTRY, Tarball, describe
from environments.unpack import ExportRefused, unpack
from infra.errors import BosunError, UnexpectedEnvironment
from sandbox import netns
from sandbox.bwrap import SANDBOX_PATH
from sandbox.docker_backend import LABEL as SANDBOX_LABEL
from sandbox.docker_backend import LABEL_OWNER, owner_tag

NODE_TOOLCHAIN = r"""
set -e
N=@NODE@
T=@TOOLS@
mkdir -p "$N/lib/node_modules"
tar -xzf "$T/node.tgz" -C "$N" --strip-components=1 --no-same-owner --no-same-permissions
for p in npm yarn pnpm corepack; do
  if [ -f "$T/$p.tgz" ]; then
    mkdir -p "$N/lib/node_modules/$p"
    tar -xzf "$T/$p.tgz" -C "$N/lib/node_modules/$p" --strip-components=1 --no-same-owner --no-same-permissions
  fi
done
link() {
  if [ -f "$N/lib/node_modules/$1" ]; then
    chmod 755 "$N/lib/node_modules/$1"; ln -sf "../lib/node_modules/$1" "$N/bin/$2"
  fi
}
link npm/bin/npm-cli.js npm; link npm/bin/npx-cli.js npx
link yarn/bin/yarn.js yarn; link yarn/bin/yarn.js yarnpkg
link pnpm/bin/pnpm.cjs pnpm; link pnpm/bin/pnpx.cjs pnpx
link corepack/dist/corepack.js corepack
chmod 755 "$N/bin/node"
echo "node $(node --version), npm $(npm --version)"
if [ -x "$N/bin/corepack" ]; then corepack enable --install-directory "$N/bin" && corepack install; fi
for pm in yarn pnpm; do if [ -e "$N/bin/$pm" ]; then echo "$pm $($pm --version)"; fi; done
"""
"""Node and its package managers, unpacked from the tarballs the host fetched and checked (environments/toolchains.py)
into ENV_ROOT/node, with corepack's shims when the project names a yarn 2+ (its ``packageManager``)."""
NODE_QUIET = {"PUPPETEER_SKIP_DOWNLOAD": "1", "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "1",
              "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1", "CYPRESS_INSTALL_BINARY": "0",
              "ELECTRON_SKIP_BINARY_DOWNLOAD": "1", "HUSKY": "0", "HUSKY_SKIP_INSTALL": "1",
              "DISABLE_OPENCOLLECTIVE": "1", "ADBLOCK": "1", "npm_config_fund": "false", "npm_config_audit": "false",
              "npm_config_update_notifier": "false", "npm_config_progress": "false", "CI": "true"}
"""What an install should not do in a build: download browsers and app binaries from hosts the build does not reach
(the tests get none either), set up git hooks (there is no .git), advertise."""
INSTALL_CACHE = "/var/cache/bosun-uv"
"""Where the installers' cache of the environment (its own, for the build only: store.uv_cache) is in the build."""
LABEL = "bosun.env"


@dataclass
class Outcome:
    image: str
    exported: Path
    seed: bool
    date_used: str | None
    attempts: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unignored: list[str] = field(default_factory=list)
    image_mb: float = 0.0
    layer_mb: float = 0.0
    toolchain: dict[str, str] = field(default_factory=dict)
    """The toolchain the base's Debian packages gave (a Go or Rust project's), by role and version."""
    tool_python: str = ""
    """An image environment's python3 (the tool server's in its sandboxes)."""
    part_failed: bool = False
    """The JavaScript/TypeScript part beside the main ecosystem could not be installed (the build went on)."""


IMAGE_CHECK = r"""
missing=""
for tool in sh tar git sleep; do command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"; done
py=$(command -v python3 || true)
if [ -z "$py" ] || ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  missing="$missing python3(>=3.11)"
fi
if [ -n "$missing" ]; then
  echo "the image lacks what bosun's sandboxes need:$missing (install them in the image)"; exit 3
fi
echo "$py $("$py" -c 'import platform; print(platform.python_version())')"
"""
"""What a sandbox of an image needs in it: a shell, tar (the seed), git (the agents' diffs), sleep, and Python 3.11
or later (the tool server); prints the interpreter's path and version."""


class Builder:
    """Builds one environment (see the module docstring). ``api``: a docker APIClient; ``uv``: the uv binary
    copied into the build; ``progress``: one line per event, for people (stderr, heartbeat details)."""

    def __init__(self, api: Any, *, uv: Path, network: BuildNetwork, timeout_s: float, memory_mb: int,
                 cpus: float = 0.0, progress: Callable[[str], None] = lambda _m: None, cache: str = "",
                 toolchain: dict[str, Tarball] | None = None, npm_registry: str = REGISTRY,
                 fallback: dict[str, Tarball] | None = None) -> None:
        self.api = api
        self.toolchain = toolchain or {}
        self.fallback = fallback or {}
        """Node and npm of the install that takes the newest versions (Toolchains.fallback_for)."""
        """A JavaScript/TypeScript environment's tarballs by role (node, npm, yarn, pnpm, corepack)."""
        self.npm_registry = npm_registry
        self.cache = cache
        """The cache the environment goes into (its image's ``CACHE_LABEL``)."""
        self.uv = uv
        self.network = network
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.cpus = cpus
        self.progress = progress

    def build(self, det: Detection, base: BaseInfo, key: str, source_tar: Path, staging: Path,
              uv_cache: Path) -> Outcome:
        """Run the steps; writes ``staging/build.log`` and ``staging/root`` (the export). Raises BuildFailed."""
        spec = det.spec
        log_path = staging / "build.log"
        deadline = time.monotonic() + self.timeout_s
        with open(log_path, "wb") as f:
            log = CappedLog(f)
            run = BuildRun(self, log, log_path, deadline)
            log.write(f"bosun environment build {key}\nrepository {det.repository} commit {det.commit}\n"
                      f"base {base.name} (python {base.python})\nspec {spec.canonical()}\n".encode())
            for note in self.network.notes + det.notes:
                log.write(f"note: {note}\n".encode())
            cid = self._create(base, spec, key, uv_cache)
            run.container = cid
            try:
                return self._steps(run, det, base, key, source_tar, staging)
            finally:
                run.stop_watchdog()
                log.flush()
                with contextlib.suppress(Exception):
                    self.api.remove_container(cid, force=True, v=True)

    def _create(self, base: BaseInfo, spec: EnvSpec, key: str, uv_cache: Path | None, *, image: str = "",
                network: str = "bridge") -> str:
        """The build container: of ``base`` (or ``image``) on ``network``, with the installer's cache bound."""
        from docker.types import Mount  # noqa: PLC0415

        # The source and the tools go into anonymous volumes mounted, not declared: a declared volume (the
        # container's ``volumes``) would pass to the committed image, and docker would make (and, unless told,
        # keep) an empty volume for every sandbox of it. Removed with the build container (``v=True``).
        scratch = [Mount(path, None, type="volume", labels={LABEL: key}) for path in ("/workspace", TOOLS)]
        host_config = self.api.create_host_config(
            network_mode=network, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            # exec: builds compile and run probes in a temporary folder (scikit-learn's OpenMP check); docker's tmpfs
            # is noexec unless told.
            tmpfs={"/tmp": "rw,exec,nosuid,nodev,size=4g,mode=1777",
                   "/var/tmp": "rw,exec,nosuid,nodev,size=1g,mode=1777"},
            mem_limit=f"{self.memory_mb}m", memswap_limit=f"{self.memory_mb}m", pids_limit=4096,
            nano_cpus=int(self.cpus * 1e9) if self.cpus > 0 else None, init=True,
            binds={str(uv_cache): {"bind": INSTALL_CACHE, "mode": "rw"}} if uv_cache else None, mounts=scratch,
            log_config={"type": "none", "config": {}})
        created = self.api.create_container(
            image=image or base.docker_tag, command=["sleep", "infinity"], user=f"{BUILD_UID}:{BUILD_UID}",
            working_dir="/workspace", host_config=host_config,
            # the sandbox labels: a build whose process dies is removed by the reaper like any orphan sandbox
            labels={LABEL: key, "bosun.env.build": "1", SANDBOX_LABEL: "1", LABEL_OWNER: owner_tag()},
            name=f"bosun-envbuild-{key}-{int(time.time())}{'-image' if image else ''}",
            use_config_proxy=False)
        return created["Id"]

    def _keep_out(self, run: BuildRun, cid: str) -> None:
        """Before anything runs in the build container: the host (every address of its own), the other containers
        and link-local addresses (a cloud's metadata service) out of its reach, its resolvers and the configured
        registries and proxies excepted (sandbox/netns.py: build_only). Best effort, as the sandboxes' private
        routes: a host that cannot set them says so in the build log, and the build goes on as before."""
        state = self.api.inspect_container(cid)
        gateway, subnet, resolvers = netns.bridge_of(state)
        registries = self.network.registry_addresses()
        try:
            reach = netns.build_only(netns.namespace_of(state), gateway, subnet, resolvers, registries)
        except OSError as exc:
            run.note(f"the build can reach this host and link-local addresses: {exc}")
            return
        mine = {*reach.host, gateway}
        for addr in dict.fromkeys(a for a in reach.dns if a in mine):
            run.note(f"the build can reach this host at {addr} on port 53: its resolver is there")
        for addr in dict.fromkeys(a for a in reach.open if a in mine):
            run.note(f"the build can reach this host at {addr}, every port: a registry or proxy is there")

    def _env(self, spec: EnvSpec, date: str | None = None) -> dict[str, str]:
        env = {"HOME": "/tmp/home", "LANG": "C.UTF-8", "PATH": f"{VENV}/bin:{TOOLS}:{SANDBOX_PATH}",
               "VIRTUAL_ENV": VENV, "UV_CACHE_DIR": INSTALL_CACHE, "UV_PYTHON_DOWNLOADS": "never",
               "UV_NO_PROGRESS": "1", "UV_LINK_MODE": "copy", "UV_HTTP_TIMEOUT": "120",
               "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PYTHONUNBUFFERED": "1",
               "UV_PYTHON": f"{VENV}/bin/python"}
        env.update(self.network.env)
        if spec.scm_version:
            env["SETUPTOOLS_SCM_PRETEND_VERSION"] = spec.scm_version
        if date:
            env["UV_EXCLUDE_NEWER"] = date
        env.update(spec.env)
        return env

    def _steps(self, run: BuildRun, det: Detection, base: BaseInfo, key: str, source_tar: Path,
               staging: Path) -> Outcome:
        spec = det.spec
        api, cid = self.api, run.container
        api.start(cid)
        self._keep_out(run, cid)
        run.start_watchdog()
        if spec.image is not None:
            return self._image(run, det, base, key, source_tar, staging)
        owned = source_tar.with_name("source-owned.tar")
        names = owned_tar(source_tar, owned, BUILD_UID)
        self._copy_in(run, owned, names, {"uv": (self.uv.read_bytes(), 0o755)})
        for i, cmd in enumerate(spec.prepare, 1):
            self.progress(f"building: prepare {i}/{len(spec.prepare)}: {cmd[:80]}")
            run.step(f"prepare {i}: {cmd[:120]}", ["sh", "-c", cmd], self._env(spec))
        if spec.node is not None:
            env = self._node(run, spec, spec.node)
            outcome = self._finish(run, det, base, key, staging, spec, env, None, run.attempts)
            outcome.toolchain = run.switched
            return outcome
        if spec.native is not None:  # Debian's toolchain is in the base; the setup commands fetch the dependencies
            env = self._tool_env(spec, SANDBOX_PATH, {"SSL_CERT_FILE": CA_IN_BUILD, "CARGO_HTTP_CAINFO": CA_IN_BUILD})
            run.step("toolchain", ["sh", "-c", spec.native.versions or "true"], env)
            found = dict(re.findall(r"^([a-z]+) (\S+)", run.last_output, re.M))
            self._part(run, spec)
            outcome = self._finish(run, det, base, key, staging, spec, env, None, [])
            outcome.toolchain = {n: v[:40] for n, v in list(found.items())[:4]}
            return outcome
        self.progress(f"building: virtualenv (python {base.python})")
        python = interpreter(spec.python).path
        run.step("virtualenv", [UV, "venv", "--python", python, VENV], self._env(spec))
        fresh = ["sh", "-c", f"rm -rf {VENV} && {UV} venv --python {python} {VENV}"]
        installed = install(
            run, spec, self._env(spec),
            put_requirements=lambda text: api.put_archive(cid, TOOLS, tools_tar({"requirements.txt": (text.encode(),
                                                                                                        0o644)})),
            fresh_venv=lambda: run.step("virtualenv (again)", fresh, self._env(spec)), progress=self.progress,
            local=local_names(names), sample=collect_sample(spec, [n for n in names if is_test_file(n)]))
        if installed is None:
            raise run.failed("install", "the dependencies could not be installed")
        used = installed.date
        setup_env = self._env(spec, used)
        if used:  # setup commands' `uv pip install` resolve as the install did (same dates, same moved packages)
            api.put_archive(cid, TOOLS, tools_tar({"uv.toml": (uv_config(used, installed.moved).encode(), 0o644)}))
            setup_env["UV_CONFIG_FILE"] = f"{TOOLS}/uv.toml"
            setup_env.pop("UV_EXCLUDE_NEWER", None)
        self._part(run, spec)
        return self._finish(run, det, base, key, staging, spec, setup_env, used, installed.history)

    def _copy_in(self, run: BuildRun, owned: Path, names: list[str], tools: dict[str, tuple[bytes, int]]) -> None:
        """The source (the build user's) into /workspace, the seed script, the source's file list and the CA bundle
        beside ``tools`` into TOOLS."""
        tools = {**tools, "source-files": ("\0".join(names).encode("utf-8", "surrogateescape"), 0o644),
                 "seed.py": (SEED_SCRIPT.encode(), 0o644)}
        if self.network.ca_bundle is not None:
            tools["ca.crt"] = (self.network.ca_bundle, 0o644)
        run.header("copy in", f"the source ({len(names)} files) and the tools")
        with open(owned, "rb") as source:
            copied = self.api.put_archive(run.container, TOOLS, tools_tar(tools)) and \
                self.api.put_archive(run.container, "/workspace", source)
        owned.unlink()
        if not copied:
            raise UnexpectedEnvironment("the docker engine refused to copy the source into the build container")

    def _image(self, run: BuildRun, det: Detection, base: BaseInfo, key: str, source_tar: Path,
               staging: Path) -> Outcome:
        """A declared image environment (environments/image.py): the repository's image (its Dockerfile built with
        the commit's files, or the image named), then the steps of every build in a container of it, all sharing
        the network namespace of the build container (``run.container``: reach limited by ``_keep_out``)."""
        spec = det.spec
        assert spec.image is not None
        holder = run.container
        system = self._system(run, spec.image, key, source_tar, staging, holder)
        work = ""
        try:
            work = self._create(base, spec, key, None, image=system, network=f"container:{holder}")
            run.container = work
            self.api.start(work)
            # /opt/bosun-env (the seed's place) made for the build user, as a base has it
            made = self.api.put_archive(work, "/", tools_tar({}, dirs=(ENV_ROOT.lstrip("/"),)))
            if not made:
                raise UnexpectedEnvironment("the docker engine refused to make /opt/bosun-env in the build container")
            config = self.api.inspect_image(system).get("Config") or {}
            own = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
            env = self._tool_env(spec, own.get("PATH") or SANDBOX_PATH,
                                 {"SSL_CERT_FILE": CA_IN_BUILD, "NODE_EXTRA_CA_CERTS": CA_IN_BUILD},
                                 {k: v for k, v in own.items() if k != "PATH"})
            run.step("image check", ["sh", "-c", IMAGE_CHECK], env)
            python = (run.last_output.strip().splitlines() or [""])[-1].split()
            if len(python) != 2 or not python[0].startswith("/"):  # (the image's own python3 said it)
                raise run.failed("image check", "the image's python3 did not say its path and version")
            owned = source_tar.with_name("source-owned.tar")
            self._copy_in(run, owned, owned_tar(source_tar, owned, BUILD_UID), {})
            for i, cmd in enumerate(spec.prepare, 1):
                run.step(f"prepare {i}: {cmd[:120]}", ["sh", "-c", cmd], env)
            outcome = self._finish(run, det, base, key, staging, spec, env, None, [], python=python[0],
                                   parent=system)
        finally:
            run.container = holder
            if work:
                with contextlib.suppress(Exception):
                    self.api.remove_container(work, force=True, v=True)
            if system != spec.image.image:  # the built system stays as the environment's layers
                with contextlib.suppress(Exception):
                    self.api.remove_image(system, noprune=True)
        outcome.tool_python = python[0]
        outcome.toolchain = {"image": spec.image.image or spec.image.dockerfile, "python": python[1][:20]}
        return outcome

    def _system(self, run: BuildRun, image: ImageSpec, key: str, source_tar: Path, staging: Path, holder: str) -> str:
        """The repository's image: its Dockerfile built (the classic builder, every RUN in ``holder``'s network
        namespace, memory-limited as the build), or the image named (pulled when this engine lacks it)."""
        from docker.errors import APIError, ImageNotFound  # noqa: PLC0415

        if image.image:
            run.header("image", image.image)
            try:
                self.api.inspect_image(image.image)
                return image.image
            except ImageNotFound:
                pass
            self.progress(f"building: pull {image.image}")
            name, _, tag = image.image.rpartition(":") if ":" in image.image.rsplit("/", 1)[-1] else (
                image.image, "", "latest")
            try:
                for event in self.api.pull(name, tag=tag or None, stream=True, decode=True):
                    if event.get("error"):
                        raise run.failed("image", f"{image.image} cannot be pulled: {event['error'][:300]}")
            except APIError as exc:
                raise run.failed("image", f"{image.image} is not on this engine and cannot be pulled: "
                                          f"{exc.explanation or exc}") from None
            return image.image
        tag = f"bosun-envsrc:{key}"
        context = image.context
        dockerfile = posixpath.relpath(image.dockerfile, context or ".")
        run.header("dockerfile", f"docker build -f {image.dockerfile} {context or '.'}"
                   + "".join(f" --build-arg {k}" for k in image.build_args)
                   + (f" --target {image.target}" if image.target else ""))
        self.progress(f"building: docker build -f {image.dockerfile}")
        tar = staging / "context.tar"
        if dockerfile.startswith("../"):  # as docker's own CLI: a Dockerfile outside the context goes into it
            dockerfile = ".bosun.Dockerfile"
        context_tar(source_tar, tar, context, {dockerfile: image.dockerfile} if dockerfile == ".bosun.Dockerfile"
                    else {})
        memory = self.memory_mb * 1024 * 1024
        try:
            with open(tar, "rb") as f:
                for event in self.api.build(
                        fileobj=f, custom_context=True, dockerfile=dockerfile, tag=tag, rm=True, forcerm=True,
                        pull=False, decode=True, buildargs=image.build_args or None, target=image.target or None,
                        network_mode=f"container:{holder}", container_limits={"memory": memory, "memswap": memory},
                        timeout=max(30, int(run.deadline - time.monotonic()))):
                    if "stream" in event:
                        run.log.write(str(event["stream"]).encode("utf-8", "replace"))
                    if event.get("error"):
                        raise run.failed("dockerfile", str(event["error"])[:300])
        except APIError as exc:
            raise run.failed("dockerfile", f"{exc.explanation or exc}"[:300]) from None
        except BuildFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - the engine's read timed out: the build's deadline
            raise run.failed("dockerfile", f"the image build did not finish in time ({exc})"[:300]) from None
        finally:
            tar.unlink(missing_ok=True)
        return tag

    def _part(self, run: BuildRun, spec: EnvSpec) -> None:
        """The JavaScript/TypeScript part beside the main ecosystem (environments/parts.py), in its folder: best
        effort (the main ecosystem's environment is built without it, and the build log says why)."""
        if spec.node_part is None:
            return
        try:
            self._node(run, spec, spec.node_part)
        except (BuildFailed, UnexpectedEnvironment) as exc:
            run.note(f"the JavaScript/TypeScript part in {spec.node_part.root or 'the top'} is not installed "
                     f"({getattr(exc, 'reason', exc)}); the environment is built without it")
            run.part_failed = True

    def _node(self, run: BuildRun, spec: EnvSpec, node: NodeSpec) -> dict[str, str]:
        """Node and its package manager into ENV_ROOT/node, then the project's dependencies as its lockfile pins
        them (tried twice: a registry's hiccup is not the repository's), in the folder of ``node`` (a part's, or
        the top); returns the environment of the steps after (the setup commands)."""
        missing = [role for role in ("node", "npm") if role not in self.toolchain]
        if missing:
            raise UnexpectedEnvironment(f"the build has no {', '.join(missing)} tarball (environments/toolchains.py)")
        self.progress(f"building: node {self.toolchain['node'].version} and {node.package_manager}")
        tarballs = {f"{role}.tgz": (t.path.read_bytes(), 0o644) for role, t in self.toolchain.items()}
        if not self.api.put_archive(run.container, TOOLS, tools_tar(tarballs)):
            raise UnexpectedEnvironment("the docker engine refused to copy the toolchain into the build container")
        env = self._node_env(spec, node)
        script = NODE_TOOLCHAIN.replace("@NODE@", NODE).replace("@TOOLS@", TOOLS)
        run.step("toolchain", ["sh", "-c", script], env)
        attempts = install_attempts(node)
        for i, (cmd, extra, why) in enumerate(attempts, 1):
            if why == NEWEST and self.fallback:  # the newest versions need a Node that still runs them
                tarballs = {f"{role}.tgz": (t.path.read_bytes(), 0o644) for role, t in self.fallback.items()}
                if not self.api.put_archive(run.container, TOOLS, tools_tar(tarballs)):
                    raise UnexpectedEnvironment("the docker engine refused to copy the toolchain into the build "
                                                "container")
                run.step("toolchain (again): the oldest Node still supported, for the newest versions",
                         ["sh", "-c", f"rm -rf {NODE} && {script}"], env)
                run.switched = describe(self.fallback)
            self.progress(f"building: install {i}/{len(attempts)} ({shlex.join(cmd)[:80]})")
            step_env = {k: v for k, v in env.items() if k != "npm_config_before"} | extra
            where = ["sh", "-c", 'cd "$0" && exec "$@"', node.root] if node.root else []
            rc, _ = run.step(f"install {i}: {why}" + (f" (in {node.root})" if node.root else ""), where + cmd,
                             step_env, check=False)
            run.attempts.append(f"{shlex.join(cmd)}{' (before ' + extra['npm_config_before'] + ')' if extra else ''}: "
                                f"{'ok' if rc == 0 else f'exit {rc}'}")
            if rc == 0:
                return env
        raise run.failed("install", "the dependencies could not be installed (every attempt is in the log)")

    def _node_env(self, spec: EnvSpec, node: NodeSpec) -> dict[str, str]:
        """The environment of a JavaScript/TypeScript build's steps: Node first on PATH, the package managers'
        caches in the environment's own installer cache, the proxies and CA bundle, nothing downloaded that the
        build does not reach."""
        env = {"npm_config_cache": f"{INSTALL_CACHE}/npm", "YARN_CACHE_FOLDER": f"{INSTALL_CACHE}/yarn",
               "npm_config_store_dir": f"{INSTALL_CACHE}/pnpm-store", "COREPACK_HOME": f"{ENV_ROOT}/corepack",
               "npm_config_registry": self.npm_registry, **NODE_QUIET}
        if node.before:
            env["npm_config_before"] = node.before
        bins = posixpath.join("/workspace", node.root, "node_modules/.bin")
        return self._tool_env(spec, f"{NODE}/bin:{bins}:{TOOLS}:{SANDBOX_PATH}", {
            "NODE_EXTRA_CA_CERTS": CA_IN_BUILD, "npm_config_cafile": CA_IN_BUILD}, env)

    def _tool_env(self, spec: EnvSpec, path: str, ca: dict[str, str],
                  own: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a build's steps outside Python's installer (Node's, Go's, Rust's): ``path``, the
        tool's ``own`` variables, the proxies, the CA bundle under the tool's ``ca`` variables, the spec's."""
        env = {"HOME": "/tmp/home", "LANG": "C.UTF-8", "PATH": path, **(own or {})}
        env.update({k: v for k, v in self.network.env.items() if k in PROXY_VARS})
        if self.network.ca_bundle is not None:
            env.update(ca)
        env.update(spec.env)
        return env

    def _finish(self, run: BuildRun, det: Detection, base: BaseInfo, key: str, staging: Path, spec: EnvSpec,
                setup_env: dict[str, str], used: str | None, history: list[str], *, python: str = "/usr/bin/python3",
                parent: str = "") -> Outcome:
        """The steps after the install, for every ecosystem: setup, seed, image, export. ``python``: the system's
        interpreter (the seed's); ``parent``: the image the build container runs (default: the base's)."""
        api, cid = self.api, run.container
        for i, cmd in enumerate(spec.setup, 1):
            self.progress(f"building: setup {i}/{len(spec.setup)}: {cmd[:80]}")
            rc, _ = run.step(f"setup {i}: {cmd[:120]}", ["sh", "-c", cmd], setup_env, check=not spec.setup_best_effort)
            if rc != 0:
                run.note(f"setup {i} failed (exit {rc}): it is detection's (a Dockerfile, a devcontainer or tox), not "
                         "a declaration's, so the build goes on without it")
        self.progress("building: seed, image, export")
        seed_env = {**self._env(spec), "PATH": setup_env.get("PATH") or SANDBOX_PATH, "PYTHONDONTWRITEBYTECODE": "1"}
        run.step("seed", [python, f"{TOOLS}/seed.py"], seed_env)
        seed = "seed: kept" in run.last_output
        warnings = [line.split("seed: warning: ", 1)[1] for line in run.last_output.splitlines()
                    if line.startswith("seed: warning: ")]
        tag = f"bosun-env:{key}"
        run.header("image", f"docker commit as {tag}")
        own = spec.sandbox_env() if spec.image is not None else {**interpreter_env(spec.python), **spec.sandbox_env(),
                                                                  "PATH": spec.path()}
        changes = [f"ENV {k}={shlex.quote(v)}" for k, v in own.items() if k not in spec.env]
        changes += ["ENV LANG=C.UTF-8", "ENV HOME=/tmp/home", "WORKDIR /workspace", f"USER {BUILD_UID}:{BUILD_UID}",
                   'CMD ["sleep", "infinity"]', f"LABEL {LABEL}={key}", f"LABEL bosun.base={base.name}",
                   # the build container's sandbox labels must not pass to the image: every container of it
                   # would look like an orphan of the (finished) build to the reaper
                   f"LABEL {SANDBOX_LABEL}=image {LABEL_OWNER}=none bosun.env.build=done",
                   f"LABEL {CACHE_LABEL}={json.dumps(self.cache)}"]
        changes += [f"ENV {k}={shlex.quote(v)}" for k, v in spec.env.items()]
        api.commit(cid, repository="bosun-env", tag=key, changes=changes,
                   message=f"bosun environment {key} for {det.repository}@{det.commit[:12]}")
        exported = self._export(run, tag, staging / "root")
        unignored = self._unignored(run, tag, exported)
        image = api.inspect_image(tag)
        base_img = api.inspect_image(parent or base.docker_tag)
        size = float(image.get("Size") or 0)
        return Outcome(image=tag, exported=exported, seed=seed, date_used=used, attempts=history, warnings=warnings,
                       unignored=unignored, part_failed=run.part_failed,
                       image_mb=round(size / 1e6, 1),
                       layer_mb=round((size - float(base_img.get("Size") or 0)) / 1e6, 1))


    def _unignored(self, run: BuildRun, tag: str, exported: Path) -> list[str]:
        """The seed's files git does not ignore, as the seed script listed them in the export (read as data: the
        build ran the repository's code); a list that is not valid fails the build at step ``seed``."""
        try:
            fd = os.open(exported / "seed-unignored", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return []
        except OSError as exc:
            reason = f"its list of files git does not ignore cannot be read ({exc.strerror})"
        else:
            with os.fdopen(fd, "rb") as f:
                data = f.read(SEED_UNIGNORED_MAX + 1)
            try:
                return parse_unignored(data)
            except ValueError as exc:
                reason = f"its list of files git does not ignore is not valid: {exc}"
        with contextlib.suppress(Exception):
            self.api.remove_image(tag, force=True)
        run.note(reason)
        raise run.failed("seed", reason)

    def _export(self, run: BuildRun, tag: str, exported: Path) -> Path:
        """``ENV_ROOT`` of the build container unpacked at ``exported`` by environments/unpack.py's rules;
        output breaking them fails the build at step ``export`` (the image is removed)."""
        run.header("export", f"{ENV_ROOT} for bwrap")
        try:
            stream, _stat = self.api.get_archive(run.container, ENV_ROOT)
            unpack(io.BufferedReader(StreamFile(iter(stream)), 1 << 20), exported, strip="bosun-env")
        except BosunError as exc:
            with contextlib.suppress(Exception):
                self.api.remove_image(tag, force=True)
            if isinstance(exc, ExportRefused):
                run.note(str(exc))
                raise run.failed("export", str(exc)) from None
            raise
        return exported


