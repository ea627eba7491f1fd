"""The artifact store every host shares: a JetStream Object Store (``BOSUN_ARTIFACT_STORE=nats``), content-addressed
as the file store is, with a bounded local read cache.

A ref is ``sha256:<hex>`` and names the object ``<hex>`` in the bucket ``BOSUN_ARTIFACT_BUCKET``: any host, or a
machine with an empty data dir, reads any run's artifacts by their refs. Writes go to the local cache first (a file
named by its hash, as the file store writes them), then to the bucket; ``put_*`` returns only once the bucket has the
object, so a ref that reaches Temporal's history (an activity's result) is readable everywhere. Reads are served from
the cache, else fetched, checked against the hash their name promises (a bucket anyone else can write to cannot
slip other content under a ref) and kept in the cache. The cache is bounded (``BOSUN_ARTIFACT_CACHE_MB``): the
least recently used files go first; nothing is lost, they are in the bucket. Large objects are streamed in chunks
between file and bucket, never held in memory whole. An artifact the bucket lacks but this host's file store
(``<data dir>/artifacts``, from before the switch to ``nats``) holds is uploaded from there on first read.

The nats-py client is asynchronous and the store's interface is not (it is called from activities, threads and the
CLI alike): one background thread runs an event loop with the connection, and each call waits for its operation
there. Every host that talks to NATS uses :func:`infra.events.bus.connect_nats` (servers, credentials, TLS).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import contextvars
import hashlib
import json
import logging
import os
import secrets
import tempfile
import threading
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from nats.js.api import ObjectInfo, ObjectMeta, ObjectMetaOptions, ObjectStoreConfig, StorageType
from nats.js.errors import (
    BucketNotFoundError,
    NotFoundError,
    ObjectDeletedError,
    ObjectNotFoundError,
)

from infra.artifacts import ArtifactMissing, ArtifactStore, check_ref
from infra.errors import ConfigError, UnexpectedEnvironment
from infra.events.bus import connect_nats, ensure_replicas, retrying
from infra.settings import Settings

log = logging.getLogger("bosun.artifacts")

T = TypeVar("T")
CALL_TIMEOUT_S = 120.0
"""The longest one store operation may wait for NATS (a large object streams for a while)."""
CHUNK = 128 * 1024
"""The object store's chunk size (nats-py's default): an artifact up to this size is one chunk."""
CONNECT_S = 5.0
"""How long the first connection to NATS may take before the store says it cannot reach it."""
PRUNE_EVERY = 0.1
"""The cache is pruned once this share of its bound has been written since the last prune."""


class _Pending:
    """The uploads started within one ``uploads_settled``; closed when it ends (a task that outlives it, started
    inside it, then uploads before its put returns)."""

    def __init__(self) -> None:
        self.futures: list[concurrent.futures.Future] = []
        self.open = True


_PENDING: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar("bosun_pending_uploads", default=None)


@contextlib.asynccontextmanager
async def uploads_settled(timeout_s: float = CALL_TIMEOUT_S):
    """Within it, a put to the shared store returns once the local cache has the artifact and uploads it in the
    background, beside the other puts (an activity's puts then cost one round trip together, not one each);
    leaving it waits until every upload is in the bucket, raising when one failed. An activity's result, and so
    every ref it hands on, is recorded only after that (the worker's interceptor: activities/interceptor.py): no
    other host can be given a ref the bucket does not have yet."""
    pending = _Pending()
    token = _PENDING.set(pending)
    try:
        yield
        if pending.futures:
            try:
                await asyncio.wait_for(asyncio.gather(*(asyncio.wrap_future(f) for f in pending.futures)), timeout_s)
            except TimeoutError:
                raise UnexpectedEnvironment(f"uploads to the shared artifact store did not finish within "
                                            f"{timeout_s:.0f} s") from None
            except UnexpectedEnvironment:
                raise
            except Exception as e:  # noqa: BLE001 - NATS refused or lost it: the activity is tried again
                raise UnexpectedEnvironment(f"an upload to the shared artifact store failed: "
                                            f"{str(e) or type(e).__name__}") from None
    finally:
        pending.open = False
        _PENDING.reset(token)


class NatsBridge:
    """A connection to NATS on an event loop of its own thread, for callers without one (or with a busy one)."""

    def __init__(self, settings: Settings, name: str) -> None:
        self.settings = settings
        self.name = name
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"nats-{name}", daemon=True)
        self._thread.start()
        self._nc: Any = None
        self._connecting: asyncio.Lock | None = None

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coro`` on the bridge's loop; its future."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float = CALL_TIMEOUT_S) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("NatsBridge.run called from its own loop")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout_s)
        except TimeoutError:
            future.cancel()
            raise UnexpectedEnvironment(f"NATS at {self.settings.nats_target} did not answer within "
                                        f"{timeout_s:.0f} s") from None

    async def js(self) -> Any:
        """The JetStream context (connecting on first use; the connection then reconnects on its own)."""
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._nc is None:
                try:  # (a first connection that fails is retried by the client for good: bounded here)
                    self._nc = await asyncio.wait_for(connect_nats(self.settings, name=self.name), CONNECT_S)
                except Exception as e:  # noqa: BLE001 - any failure to connect means the same here
                    raise UnexpectedEnvironment(f"cannot reach NATS at {self.settings.nats_target} for the shared "
                                                f"artifact store ({str(e) or type(e).__name__}); check "
                                                "BOSUN_NATS_URL") from None
        return self._nc.jetstream()

    def close(self) -> None:
        async def _close() -> None:
            if self._nc is not None:
                with contextlib.suppress(Exception):
                    await self._nc.drain()
        with contextlib.suppress(Exception):
            self.run(_close(), timeout_s=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


class NatsArtifactStore(ArtifactStore):
    """The shared store (see the module docstring). ``root`` is the local read cache."""

    shared = True

    def __init__(self, settings: Settings, *, bridge: NatsBridge | None = None) -> None:
        super().__init__(settings.data_dir / "artifacts-cache")
        self.settings = settings
        self.bucket = settings.artifact_bucket
        self.cache_bytes = int(settings.artifact_cache_mb * 1e6)
        self.legacy = ArtifactStore(settings.artifacts_dir)
        """This host's file store from before the switch: read (and uploaded) when the bucket lacks an artifact."""
        self.bridge = bridge or NatsBridge(settings, "bosun-artifacts")
        self._obs: Any = None
        self._remote: set[str] = set()
        """Digests known to be in the bucket (put or fetched by this process): not uploaded again."""
        self._written = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"NatsArtifactStore(bucket={self.bucket!r}, cache={str(self.root)!r})"

    # -- the bucket -----------------------------------------------------------------------------------------------

    async def _bucket(self) -> Any:
        if self._obs is None:
            js = await self.bridge.js()
            try:
                self._obs = await js.object_store(self.bucket)
                await ensure_replicas(js, f"OBJ_{self.bucket}", self.settings.nats_replicas)
            except BucketNotFoundError:
                config = ObjectStoreConfig(bucket=self.bucket, storage=StorageType.FILE,
                                           replicas=self.settings.nats_replicas,
                                           ttl=self.settings.artifact_ttl_days * 86400 or None,
                                           description="bosun artifacts (content-addressed: name = sha256)")
                self._obs = await js.create_object_store(self.bucket, config=config)
        return self._obs

    # The object store's own layout (what nats-py's ObjectStore and the nats CLI read and write): an object's meta
    # is the last message on $O.<bucket>.M.<base64url name>, its chunks the messages on $O.<bucket>.C.<nuid>. An
    # artifact of one chunk (up to CHUNK bytes: most of them) is read and written here with direct gets and plain
    # publishes, which any replica answers, in two round trips; a larger one goes through nats-py's ObjectStore,
    # streamed chunk by chunk.

    def _meta_subject(self, digest: str) -> str:
        return f"$O.{self.bucket}.M.{base64.urlsafe_b64encode(digest.encode()).decode()}"

    async def _info(self, digest: str) -> ObjectInfo | None:
        """The object's meta (None when the bucket has no live object of that name)."""
        await self._bucket()
        js = await self.bridge.js()
        try:
            msg = await js.get_last_msg(f"OBJ_{self.bucket}", self._meta_subject(digest), direct=True)
        except NotFoundError:
            return None
        info = ObjectInfo.from_response(json.loads(msg.data))
        return None if info.deleted else info

    async def _upload(self, digest: str, path: Path) -> None:
        await retrying(lambda: self._put(digest, path))

    async def _put(self, digest: str, path: Path) -> None:
        """Put the object (its name is its content's hash, so a copy another process put already is the same
        content: putting it again costs a chunk the stream keeps until the bucket's limits drop it, and is cheaper
        than asking first). The chunk goes first: a meta never names a chunk the stream lacks."""
        obs = await self._bucket()
        if path.stat().st_size > CHUNK:
            with open(path, "rb") as f:
                await obs.put(digest, f, meta=ObjectMeta(name=digest, options=ObjectMetaOptions(max_chunk_size=CHUNK)))
            return
        js = await self.bridge.js()
        data = path.read_bytes()
        nuid = secrets.token_hex(11)
        if data:  # the chunk first: a meta is never there without its chunk
            await js.publish(f"$O.{self.bucket}.C.{nuid}", data)
        info = ObjectInfo(name=digest, bucket=self.bucket, nuid=nuid, size=len(data), chunks=1 if data else 0,
                          mtime=datetime.now(UTC).isoformat(),
                          digest="SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode(),
                          options=ObjectMetaOptions(max_chunk_size=CHUNK))
        await js.publish(self._meta_subject(digest), json.dumps(info.as_dict()).encode(),
                         headers={"Nats-Rollup": "sub"})

    async def _download(self, digest: str, tmp: Path) -> bool:
        return await retrying(lambda: self._fetch(digest, tmp))

    async def _fetch(self, digest: str, tmp: Path) -> bool:
        info = await self._info(digest)
        if info is None:
            return False
        if (info.chunks or 0) <= 1:
            data = b""
            if info.chunks:
                js = await self.bridge.js()
                data = (await js.get_last_msg(f"OBJ_{self.bucket}", f"$O.{self.bucket}.C.{info.nuid}",
                                              direct=True)).data or b""
            tmp.write_bytes(data)
            return True
        obs = await self._bucket()
        try:
            with open(tmp, "wb") as f:
                await obs.get(digest, writeinto=f)
        except (NotFoundError, ObjectNotFoundError, ObjectDeletedError):
            return False
        return True

    def _ensure_remote(self, digest: str) -> None:
        if digest in self._remote:
            return
        pending = _PENDING.get()
        if pending is None or not pending.open:
            try:
                self.bridge.run(self._upload(digest, self._path(digest)))
            except UnexpectedEnvironment:
                raise
            except Exception as e:  # noqa: BLE001 - NATS refused or lost it
                raise UnexpectedEnvironment(f"an upload to the shared artifact store failed: "
                                            f"{str(e) or type(e).__name__}") from None
            self._remote.add(digest)
            return
        upload = self.bridge.submit(self._upload(digest, self._path(digest)))
        upload.add_done_callback(lambda f: f.cancelled() or f.exception() or self._remote.add(digest))
        pending.futures.append(upload)

    # -- the store's interface --------------------------------------------------------------------------------------

    def put_bytes(self, data: bytes) -> str:
        ref = super().put_bytes(data)
        self._ensure_remote(ref[7:])
        self._count(len(data))
        return ref

    def put_file(self, path: Path) -> str:
        ref = super().put_file(path)
        self._ensure_remote(ref[7:])
        self._count(self._path(ref[7:]).stat().st_size)
        return ref

    def get_bytes(self, ref: str) -> bytes:
        return self._local(ref).read_bytes()

    def get_file(self, ref: str, dest: Path) -> None:
        ArtifactStore.copy_out(self._local(ref), dest)

    def _local(self, ref: str) -> Path:
        """The cached file of ``ref``, fetched (and checked) first when it is not here."""
        digest = check_ref(ref)[7:]
        path = self._path(digest)
        if path.exists():
            with contextlib.suppress(OSError):
                os.utime(path)  # (least recently used goes first)
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=".fetch-")
        os.close(fd)
        tmp = Path(name)
        fetched = False
        try:
            fetched = self.bridge.run(self._download(digest, tmp))
            if not fetched:
                legacy = self.legacy._path(digest)
                if not legacy.exists():
                    raise ArtifactMissing(f"artifact {ref} is not in the shared store (bucket {self.bucket} on "
                                          f"{self.settings.nats_target})")
                ArtifactStore.copy_out(legacy, tmp)
            if _sha256_of(tmp) != digest:
                raise ArtifactMissing(f"artifact {ref}: the content the store gave does not hash to its name "
                                      "(refused)")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        if fetched:
            self._remote.add(digest)
        else:
            self._ensure_remote(digest)  # a legacy artifact goes up now
        self._count(path.stat().st_size)
        return path

    # -- the cache's bound --------------------------------------------------------------------------------------

    def _count(self, size: int) -> None:
        with self._lock:
            self._written += size
            due = self._written > self.cache_bytes * PRUNE_EVERY
            if due:
                self._written = 0
        if due:
            self.prune_cache()

    def prune_cache(self) -> int:
        """Remove the least recently used cached files until the cache is within 80% of its bound; returns how
        many went (they stay in the bucket)."""
        files = []
        for sub in self.root.glob("??"):
            for f in sub.iterdir():
                if f.name.startswith("."):
                    continue
                with contextlib.suppress(OSError):
                    st = f.stat()
                    files.append((st.st_mtime, st.st_size, f))
        total = sum(size for _, size, _ in files)
        removed = 0
        files.sort()
        for _, size, f in files:
            if total <= self.cache_bytes * 0.8:
                break
            f.unlink(missing_ok=True)
            total -= size
            removed += 1
        return removed

    def close(self) -> None:
        self.bridge.close()


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def open_store(settings: Settings) -> ArtifactStore:
    """The artifact store the settings name: ``files`` (this host's data dir) or ``nats`` (shared by every host)."""
    if settings.artifact_store == "nats":
        return NatsArtifactStore(settings)
    if settings.artifact_store == "files":
        return ArtifactStore(settings.artifacts_dir)
    raise ConfigError(f"BOSUN_ARTIFACT_STORE={settings.artifact_store!r}: use files or nats")
