"""The environment cache on this host (``BOSUN_ENV_CACHE``)::

    bases/<name>/rootfs/       a base root filesystem (debootstrap), shared by every environment on it
    bases/<name>/base.json
    envs/<key>/env.json        the record; its presence means the environment is complete
    envs/<key>/build.log       the build's log
    envs/<key>/root/           the environment's /opt/bosun-env (virtualenv, seed): bwrap binds it read-only
    envs/.building-<key>-*/    a build in progress (renamed to envs/<key> when complete, removed when not)
    failed/<key>.log           the log of the last failed build of a key (a failure is never cached as an env)
    uv/<key>/                  the installer's cache, one per environment (0700; only its own builds see it)
    locks/                     one lock per key and per base: concurrent builds of one key wait for each other

Docker images (``bosun-env:<key>``) are the other half of a record; a record whose image is gone is not ready.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from environments.models import EnvRecord
from infra.errors import ConfigError
from sandbox.caches import file_lock

ENV_ID = re.compile(r"^env-([0-9a-f]{20})$")
IMAGE_REPO = "bosun-env"
CACHE_LABEL = "bosun.env.cache"
"""The label naming the cache (its resolved path) an environment's image belongs to: a prune removes only its own
cache's orphan images (and, from the default cache, those built before images carried the label)."""


def default_cache() -> Path:
    """Where the cache lives when BOSUN_ENV_CACHE is unset: machine-wide for root, per user otherwise."""
    if os.geteuid() == 0:
        return Path("/var/cache/bosun/environments")
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "bosun" / "environments"


def key_of(env_id: str) -> str:
    """The key of an environment id; ConfigError for anything that is not one."""
    m = ENV_ID.match(env_id or "") if isinstance(env_id, str) else None
    if m is None:
        raise ConfigError(f"{str(env_id)[:80]!r} is not an environment id (env- and 20 hex digits; "
                          "`bosun env list` shows them)")
    return m.group(1)


class EnvStore:
    """The cache directory (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.envs = self.root / "envs"
        self.failed = self.root / "failed"
        self.locks = self.root / "locks"

    def ensure_dirs(self) -> None:
        for d in (self.root, self.envs, self.failed, self.locks, self.root / "uv"):
            d.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        os.chmod(self.envs, 0o755)

    def env_dir(self, key: str) -> Path:
        return self.envs / key

    def record(self, key: str) -> EnvRecord | None:
        try:
            return EnvRecord.model_validate_json((self.env_dir(key) / "env.json").read_text())
        except (OSError, ValueError):
            return None

    def find(self, env_id: str) -> EnvRecord:
        """The record of ``env_id``; ConfigError when there is none."""
        record = self.record(key_of(env_id))
        if record is None:
            raise ConfigError(f"no environment {env_id} on this host (`bosun env list` shows the built ones; "
                              "`bosun env build --repo PATH` builds one)")
        return record

    def all(self) -> list[EnvRecord]:
        if not self.envs.is_dir():
            return []
        out = []
        for child in sorted(self.envs.iterdir()):
            if not child.name.startswith(".") and (rec := self.record(child.name)) is not None:
                out.append(rec)
        return out

    def lock(self, name: str, *, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
        """The lock of one environment's build (``name``: its key); see ``file_lock``."""
        return file_lock(self.locks / f"{name}.lock", wait=wait)

    def staging(self, key: str) -> Path:
        self.ensure_dirs()
        return Path(tempfile.mkdtemp(dir=self.envs, prefix=f".building-{key}-"))

    def commit(self, staging: Path, record: EnvRecord) -> Path:
        """Make a complete build the cached one: record written last, then one rename."""
        (staging / "env.json").write_text(record.model_dump_json(indent=2))
        os.chmod(staging, 0o755)
        dest = self.env_dir(record.key)
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
        return dest

    def discard(self, staging: Path, key: str, log: Path | None) -> Path | None:
        """Drop a failed build, keeping its log under failed/."""
        kept = None
        if log is not None and log.is_file():
            self.failed.mkdir(parents=True, exist_ok=True)
            kept = self.failed / f"{key}.log"
            shutil.copyfile(log, kept)
        shutil.rmtree(staging, ignore_errors=True)
        return kept

    def touch(self, key: str) -> None:
        with contextlib.suppress(OSError):
            os.utime(self.env_dir(key) / "env.json")

    def set_family(self, record: EnvRecord, family: str) -> EnvRecord:
        """The record with its family written in (a record built before families had none: found by its own key,
        it learns it, so the next commit with the same install inputs finds it too). Best effort: a record that
        cannot be rewritten stays as it was."""
        updated = record.model_copy(update={"family": family})
        path = self.env_dir(record.key) / "env.json"
        tmp = path.with_name(f".env.json.{os.getpid()}.tmp")
        try:
            tmp.write_text(updated.model_dump_json(indent=2))
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            return record
        return updated

    def last_used(self, key: str) -> float:
        try:
            return (self.env_dir(key) / "env.json").stat().st_mtime
        except OSError:
            return 0.0

    def remove_dir(self, key: str) -> bool:
        path = self.env_dir(key)
        if not path.exists():
            return False
        shutil.rmtree(path)
        return True

    def stale_staging(self, older_than_s: float = 6 * 3600) -> list[Path]:
        """Build directories left by a build that died (a worker killed mid-build)."""
        if not self.envs.is_dir():
            return []
        now = time.time()
        return [p for p in self.envs.glob(".building-*") if now - p.stat().st_mtime > older_than_s]

    def uv_cache(self, key: str, uid: int) -> Path:
        """The installer cache of one environment (``key``), owned by the build user, under a folder only root
        can enter (0700): builds of other environments (another repository, a fork) never read or write it."""
        path = self._uv_dir(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        path.mkdir(exist_ok=True)
        os.chmod(path, 0o700)
        if os.geteuid() == 0:
            os.chown(path, uid, uid)
        return path

    def remove_uv_cache(self, key: str) -> None:
        shutil.rmtree(self._uv_dir(key), ignore_errors=True)

    def _uv_dir(self, key: str) -> Path:
        """Where the installer cache of ``key`` is (its name is the key's, kept to safe characters)."""
        return self.root / "uv" / (re.sub(r"[^A-Za-z0-9._-]", "_", key)[:80] or "default")

    def uv_caches(self) -> list[Path]:
        """The installer caches on disk (a build's, while it runs; a failed build's, for its next attempt; and
        those every build kept before 2026-11-26)."""
        root = self.root / "uv"
        return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
