"""Environments on this host, end to end: detect -> key -> cached record, or build (base, container steps, image,
export) -> record. Used by ``bosun env`` and by the task's prepare step.

Concurrency: one lock per key (a second build of the same key waits, then finds it cached); nothing is cached
until it is complete. Disk: after each build the cache is pruned to ``BOSUN_ENV_MAX_GB`` (least recently used
first; environments used within the last hour are kept).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.bases import BASE_BUILD_MAX_S, BUILD_UID, Bases, plan
from environments.builder import Builder
from environments.buildrun import BuildFailed
from environments.declared import Declared, load_overrides, override_for
from environments.detect import detect
from environments.dockerping import image_exists
from environments.models import BUILD_RULES, Detection, EnvRecord, env_id_for
from environments.netconf import build_network
from environments.repofiles import GitTree
from environments.store import CACHE_LABEL, IMAGE_REPO, EnvStore, default_cache, key_of
from environments.toolchains import Toolchains, describe
from infra.errors import ConfigError, UnexpectedEnvironment
from infra.settings import Settings
from sandbox.caches import KEEP_RECENT_S, dir_size_mb, free_mb, prunable, strip_setid

DETECTED_KEEP_S = 7 * 86400
"""A remembered detection older than this goes on the next prune (any change to the detector's code makes every
earlier one unreachable; one still in use is made again in milliseconds)."""
DETECTOR_FILES = ("detect.py", "pydetect.py", "pyconfig.py", "pyci.py", "setuppy.py", "imports.py", "testcmd.py",
                  "declared.py", "interpreters.py", "models.py", "repofiles.py", "standins.py", "ecosystems.py",
                  "node.py", "toolchains.py", "bases.py", "golang.py", "rust.py", "java.py", "image.py", "parts.py")


def _detector_code() -> bytes:
    """The detector's code as this process loaded it: read once, at import. Read at each call, a worker started
    before an upgrade would file what its old code detected under the new code's key, for every later process."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in DETECTOR_FILES:
        with contextlib.suppress(OSError):
            h.update((here / name).read_bytes())
    return h.digest()


DETECTOR_CODE = _detector_code()


def detection_key(commit: str, override: tuple[str, str | Declared] | None, version: str | None = None) -> str:
    """What a remembered detection depends on: the commit, the override (file or declaration), the version given,
    and the detector's own code (``DETECTOR_CODE``)."""
    h = hashlib.sha256(f"{commit}\0{override!r}\0{version!r}\0".encode())
    h.update(DETECTOR_CODE)
    return h.hexdigest()[:32]


def _remove_older(paths: Iterable[Path], age_s: float, dry_run: bool) -> int:
    """Remove the files of ``paths`` last written over ``age_s`` ago (``dry_run``: none); how many are (or would
    be) removed."""
    now, n = time.time(), 0
    for path in paths:
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > age_s:
                n += 1
                if not dry_run:
                    path.unlink()
    return n


def ensure_timeout_s(settings: Settings) -> float:
    """The longest :meth:`Environments.ensure` may take: its own base and build, after waiting for a concurrent
    build of the same environment (which may have built its base too)."""
    return 2 * (settings.env_build_timeout_s + BASE_BUILD_MAX_S)


def uv_binary() -> Path:
    """The uv binary copied into builds (from bosun's own environment: pinned by constraints.txt)."""
    try:
        import uv  # noqa: PLC0415 - optional until a build needs it

        path = Path(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if not found:
            raise UnexpectedEnvironment("building an environment needs uv (pip install uv; `make bootstrap` "
                                        "installs it)") from None
        path = Path(found)
    return path


def docker_api(timeout: int = 600) -> Any:
    """A docker APIClient; UnexpectedEnvironment when no engine answers."""
    try:
        import docker  # noqa: PLC0415

        client = docker.from_env(timeout=timeout)
        client.ping()
        return client.api
    except Exception as exc:  # noqa: BLE001 - any failure means the same here
        raise UnexpectedEnvironment(f"building environments needs a Docker engine (the build runs the repository's "
                                    f"setup code with network, which bosun does only in a container): {exc}"
                                    ) from None


@dataclass
class Prepared:
    """What ``ensure`` gives."""

    record: EnvRecord
    cached: bool
    seconds: float


class Environments:
    """The environments of this host (see the module docstring)."""

    def __init__(self, settings: Settings, *, progress: Callable[[str], None] = lambda _m: None) -> None:
        self.settings = settings
        self.cache = Path(settings.env_cache) if settings.env_cache else default_cache()
        self.store = EnvStore(self.cache)
        self.bases = Bases(self.cache, settings.env_debian_mirror, settings.env_python_sources)
        self.progress = progress
        self._api: Any = None

    @property
    def api(self) -> Any:
        if self._api is None:
            self._api = docker_api()
        return self._api

    # -- detection -------------------------------------------------------------------------------------------

    def detect(self, tree: GitTree, repository: str, *, declared: tuple[str, Declared] | None = None,
               version: str | None = None) -> Detection:
        """The spec of ``tree`` (see environments/detect.py), with the operator's override if any, or
        ``declared``: (what, declaration) given by bosun itself (an evaluation's recipe), which wins over both.
        ``version``: the project's version when its nearest tag does not say (a setuptools_scm project cloned
        without its tags). Remembered per commit (and override, and detector version): a revision is read once."""
        override: tuple[str, str | Declared] | None = declared
        path = override_for(load_overrides(self.settings.env_overrides), repository) if declared is None else None
        if path is not None:
            override = (str(path), path.read_text())
        memo = self.cache / "detected" / f"{detection_key(tree.commit, override, version)}.json"
        try:
            det = Detection.model_validate_json(memo.read_text())
            return det.model_copy(update={"repository": repository})
        except (OSError, ValueError):
            pass
        det = detect(tree, commit_date=tree.commit_date(), repository=repository, commit=tree.commit,
                     tree=tree.tree_id(), version_hint=tree.version_tag() or version, override=override)
        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(det.model_dump_json())
            os.replace(tmp, memo)
        return det

    def detect_repo(self, repo: str, ref: str = "HEAD") -> tuple[Detection, GitTree]:
        tree = GitTree.of_repository(repo, ref)
        return self.detect(tree, str(Path(repo).expanduser().resolve())), tree

    def key(self, det: Detection) -> str:
        """The key of the environment built for ``det`` (as of its own day)."""
        return det.key(self._base_name(det))

    def _base_name(self, det: Detection) -> str:
        name, _suite, _packages = plan(det.spec.python, compilers=det.spec.compilers, apt=det.spec.apt)
        return name

    def lookup(self, det: Detection, *, need_docker: bool | None = None) -> EnvRecord | None:
        """The built environment ``det`` runs in: its own key's, else the newest of its family (the same install
        inputs) resolved as of a moment no later than ``det``'s. A commit that changes no dependency input reuses
        the environment of an earlier one; the commit's date still bounds the resolution."""
        key = self.key(det)
        record = self.cached(key, need_docker=need_docker)
        as_of = det.spec.as_of()
        if as_of is None:
            return record
        family = det.family(self._base_name(det))
        if record is not None:
            return record if record.family else self.store.set_family(record, family)
        kin = [r for r in self.store.all() if r.family == family and r.key != key and (r.spec.as_of() or "") <= as_of]
        for candidate in sorted(kin, key=lambda r: r.spec.as_of() or "", reverse=True):
            if (record := self.cached(candidate.key, need_docker=need_docker)) is not None:
                return record
        return None

    # -- the cache -------------------------------------------------------------------------------------------

    def cached(self, key: str, *, need_docker: bool | None = None) -> EnvRecord | None:
        """The complete record of ``key``, if its halves are still there (``need_docker``: check the image too;
        None: when an engine answers)."""
        record = self.store.record(key)
        if record is None or not Path(record.backend_refs.get("bwrap", "/nonexistent")).is_dir():
            return None
        if need_docker is not False:
            present = image_exists(record.backend_refs.get("docker", ""))
            if present is None:  # not a local socket: ask through the SDK
                try:
                    self.api.inspect_image(record.backend_refs.get("docker", ""))
                    present = True
                except UnexpectedEnvironment:
                    present = False if need_docker else None
                except Exception:  # noqa: BLE001 - gone (pruned by hand): not ready
                    present = False
            if present is False:
                return None
        return record

    # -- building --------------------------------------------------------------------------------------------

    def find(self, det: Detection, *, need_docker: bool | None = None) -> Prepared | None:
        """The environment of ``det`` if it is built (marked used), else None: what a task's preparation and an
        evaluation's instance look up before they decide to build."""
        started = time.monotonic()
        record = self.lookup(det, need_docker=need_docker)
        if record is None:
            return None
        self.store.touch(record.key)
        return Prepared(record, True, time.monotonic() - started)

    def ensure(self, det: Detection, tree: GitTree) -> Prepared:
        """The environment of ``det``: the cached one, or built now. Raises BuildFailed (the repository's
        setup failed: not retried) or UnexpectedEnvironment (this host cannot build: no engine, not root)."""
        started = time.monotonic()
        found = self.find(det)
        if found is not None:
            return found
        key = self.key(det)
        # short of space: room for the build first (not under its lock: a prune takes other environments' locks)
        if free_mb(self.cache) < self.settings.env_min_free_gb * 1000:
            self._bound(key)
        with self.store.lock(key):
            record = self.cached(key)
            if record is not None:
                self.store.touch(key)
                return Prepared(record, True, time.monotonic() - started)
            record = self._build(det, tree, key)
        self._bound(key)
        return Prepared(record, False, time.monotonic() - started)

    def _bound(self, key: str) -> None:
        """Keep the cache within its bounds (``BOSUN_ENV_MAX_GB``, ``BOSUN_ENV_MIN_FREE_GB``), ``key`` kept; a prune
        that fails is no reason to fail the build."""
        with contextlib.suppress(Exception):
            self.prune(max_gb=self.settings.env_max_gb or None, min_free_gb=self.settings.env_min_free_gb,
                       keep=[key])

    def _build(self, det: Detection, tree: GitTree, key: str) -> EnvRecord:
        spec = det.spec
        started = time.monotonic()
        api = self.api
        uv = uv_binary()
        base = self.bases.ensure(spec.python, compilers=spec.compilers, apt=spec.apt, docker=api,
                                 progress=self.progress)
        self.progress(f"building environment {env_id_for(key)} for {det.repository}@{det.commit[:12]} on {base.name} "
                      f"(python {base.python})")
        node = spec.node or spec.node_part
        try:
            toolchain = self.toolchains().for_node(node) if node is not None else {}
        except UnexpectedEnvironment:
            if spec.node is not None:
                raise
            toolchain = {}  # a part's: the environment is built without it (the build log says so)
        try:  # (only the last install attempt needs it: a registry that fails it here fails no build)
            fallback = self.toolchains().fallback_for(node) if node is not None else {}
        except UnexpectedEnvironment:
            fallback = {}
        staging = self.store.staging(key)
        builder = Builder(api, uv=uv, network=build_network(), timeout_s=self.settings.env_build_timeout_s,
                          memory_mb=self.settings.env_build_memory_mb, progress=self.progress,
                          cache=str(self.cache.resolve()), toolchain=toolchain,
                          npm_registry=self.settings.env_npm_registry, fallback=fallback)
        try:
            try:
                source = tree.archive(staging / "source.tar")
            except ConfigError as exc:  # the tree is too big to build from: the repository's, not the host's
                raise BuildFailed("source", str(exc), "") from None
            uv_cache = self.store.uv_cache(key, BUILD_UID)
            try:
                outcome = builder.build(det, base, key, source, staging, uv_cache)
            finally:
                strip_setid(uv_cache)
            for name in ("source.tar", "source-owned.tar"):
                (staging / name).unlink(missing_ok=True)
        except BuildFailed as exc:  # (the repository's: not built again, so its downloads are not needed again)
            self.store.remove_uv_cache(key)
            kept = self.store.discard(staging, key, staging / "build.log")
            raise BuildFailed(exc.step, exc.reason, exc.tail, kept) from None
        except BaseException:  # (the host's, most likely: the installer cache stays an hour for another attempt)
            self.store.discard(staging, key, staging / "build.log")
            raise
        # Built: the installer cache is never read again (a build of this key comes only after the environment
        # is removed), and it is often as large as the environment itself.
        self.store.remove_uv_cache(key)
        if outcome.part_failed and spec.node_part is not None:  # its tests are not run: nothing to run them with
            spec = spec.model_copy(update={"node_part": spec.node_part.model_copy(update={"test": ""})})
            outcome.warnings.append(f"the JavaScript/TypeScript part in {spec.node_part.root or 'the top'} could not "
                                    "be installed (build.log says why): its tests are not run")
        record = EnvRecord(
            env_id=env_id_for(key), key=key, family=det.family(self._base_name(det)),
            python=outcome.toolchain.get("python", base.python) if spec.image else base.python, base=base.name,
            spec=spec, tool_python=outcome.tool_python,
            test_command=spec.test.text, backend_refs={"docker": outcome.image, "bwrap": str(self.store.env_dir(key)
                                                                                          / "root")},
            rootfs="" if spec.image else base.rootfs, seed=outcome.seed, repository=det.repository, commit=det.commit,
            built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            build_s=round(time.monotonic() - started, 1),
            size_mb={"docker_image": outcome.image_mb, "docker_layer": outcome.layer_mb,
                     "bwrap": dir_size_mb(outcome.exported), "base": 0.0},
            exclude_newer_used=outcome.date_used, attempts=outcome.attempts, warnings=outcome.warnings,
            seed_unignored=outcome.unignored, rules=BUILD_RULES, toolchain=describe(toolchain) | outcome.toolchain,
            last_used=time.time())
        self.store.commit(staging, record)
        self.progress(f"environment {record.env_id} ready in {record.build_s:.0f} s (image {outcome.image_mb:.0f} MB,"
                      f" layer {outcome.layer_mb:.0f} MB)")
        return record

    def toolchains(self) -> Toolchains:
        """The toolchain tarballs of this cache (``toolchains/``), from BOSUN_ENV_NPM_REGISTRY."""
        return Toolchains(self.cache / "toolchains", self.settings.env_npm_registry, progress=self.progress)

    def log_of(self, record: EnvRecord) -> Path:
        return self.store.env_dir(record.key) / "build.log"

    # -- removing --------------------------------------------------------------------------------------------

    def remove(self, env_id: str) -> EnvRecord:
        """Remove one environment (its directory and image); ConfigError for an unknown id."""
        key = key_of(env_id)
        record = self.store.find(env_id)
        with self.store.lock(key):
            self.store.remove_dir(key)
            self.store.remove_uv_cache(key)
            with contextlib.suppress(Exception):
                self.api.remove_image(record.backend_refs.get("docker", f"{IMAGE_REPO}:{key}"), force=True)
        return record

    def prune(self, *, max_gb: float | None = None, older_than_days: float | None = None, bases: bool = False,
              keep: list[str] | None = None, dry_run: bool = False, min_free_gb: float = 0.0,
              outdated: bool = False) -> dict[str, Any]:
        """Remove what is not needed: builds that died half-way, installer caches no build is using (a failed
        build's after an hour), old failure logs, images without a record, then environments not used for
        ``older_than_days``, built by older rules (``outdated``: ``BUILD_RULES``), the least recently used beyond
        ``max_gb``, and the least recently used while the cache's file system has less than ``min_free_gb`` free
        (0: no floor) -- never one used within the last hour, nor ``keep``; ``bases``: bases no environment uses.
        Returns what went."""
        out: dict[str, Any] = {"environments": [], "images": [], "staging": [], "bases": [], "uv_caches": [],
                               "detections": 0, "freed_mb": 0.0}
        self._prune_leftovers(out, dry_run)
        records = self.store.all()
        api = None
        with contextlib.suppress(UnexpectedEnvironment):
            api = self.api
        if api is not None:
            self._prune_orphan_images(out, api, {r.backend_refs.get("docker") for r in records}, dry_run)
        self._prune_environments(out, records, keep=set(keep or []), max_gb=max_gb, older_than_days=older_than_days,
                                 min_free_gb=min_free_gb, outdated=outdated, dry_run=dry_run)
        if bases:
            used_bases = {r.base for r in self.store.all()}
            for info in self.bases.all():
                if info.name not in used_bases:
                    out["bases"].append(info.name)
                    out["freed_mb"] += info.size_mb
                    if not dry_run:
                        self.bases.remove(info.name, docker=api)
        uv_root = self.cache / "uv"
        if uv_root.is_dir() and older_than_days is not None:
            now = time.time()
            for d in uv_root.iterdir():
                if now - d.stat().st_mtime > older_than_days * 86400 and not dry_run:
                    shutil.rmtree(d, ignore_errors=True)
        out["freed_mb"] = round(out["freed_mb"], 1)
        return out

    def _prune_leftovers(self, out: dict[str, Any], dry_run: bool) -> None:
        """Builds that died half-way, installer caches no build is using, old failure logs and detections."""
        for path in self.store.stale_staging():
            out["staging"].append(path.name)
            if not dry_run:
                shutil.rmtree(path, ignore_errors=True)
        for path in self.store.uv_caches():
            try:
                if time.time() - path.stat().st_mtime < KEEP_RECENT_S:
                    continue
            except OSError:  # (its build just removed it)
                continue
            with self.store.lock(path.name, wait=False) as free:
                if not free:  # its build is running
                    continue
                out["uv_caches"].append(path.name)
                out["freed_mb"] += dir_size_mb(path)
                if not dry_run:
                    shutil.rmtree(path, ignore_errors=True)
        _remove_older(self.store.failed.glob("*.log"), 30 * 86400, dry_run)
        # detections remembered per commit: a few KB each, one per revision prepared (thousands a day under an
        # evaluation), read again in milliseconds when gone
        out["detections"] = _remove_older((self.cache / "detected").glob("*.json"), DETECTED_KEEP_S, dry_run)

    def _prune_orphan_images(self, out: dict[str, Any], api, known: set, dry_run: bool) -> None:
        """This cache's images that no record names (and that are not a build between its commit and record)."""
        now = time.time()
        here = self.cache.resolve()
        mine, default = str(here), here == default_cache().resolve()
        for image in api.images(name=IMAGE_REPO):
            if now - float(image.get("Created") or now) < KEEP_RECENT_S:
                continue  # a build between its commit and its record (another process's) is not an orphan
            owner = (image.get("Labels") or {}).get(CACHE_LABEL)
            if owner != mine and not (owner is None and default):
                continue  # another cache's (docker's images are the host's, the records are this cache's)
            for tag in image.get("RepoTags") or []:
                if tag not in known:
                    out["images"].append(tag)
                    if not dry_run:
                        with contextlib.suppress(Exception):
                            api.remove_image(tag, force=True)

    def _prune_environments(self, out: dict[str, Any], records: list, *, keep: set[str], max_gb: float | None,
                            older_than_days: float | None, min_free_gb: float, outdated: bool,
                            dry_run: bool) -> None:
        """The environments ``prunable`` names, least recently used first, while the rules still ask."""
        now = time.time()
        usage = sorted(((self.store.last_used(r.key), r) for r in records), key=lambda x: x[0])
        size = {r.key: r.size_mb.get("bwrap", 0.0) + r.size_mb.get("docker_layer", 0.0) for r in records}
        total = sum(size.values())
        # (what removing frees is counted, not measured again: an image's layers go lazily, and a dry run frees
        # nothing)
        free = free_mb(self.cache) + (out["freed_mb"] if dry_run else 0.0)
        for used, record in usage:
            short = min_free_gb > 0 and free < min_free_gb * 1000
            if record.key in keep or not prunable(used, total, now=now, older_than_days=older_than_days,
                                                  max_gb=max_gb, short_of_space=short,
                                                  outdated=outdated and record.outdated):
                continue
            out["environments"].append(record.env_id)
            out["freed_mb"] += size[record.key]
            free += size[record.key]
            total -= size[record.key]
            if not dry_run:
                with contextlib.suppress(ConfigError):
                    self.remove(record.env_id)

