"""The shared artifact store on a real nats-server (JetStream Object Store): what one host writes, another host (or
a machine with an empty data dir) reads; large objects stream through; content that does not hash to its ref is
refused; the local cache stays within its bound; a host's older file store is uploaded from on first read."""

from __future__ import annotations

import asyncio
import hashlib
import os

import nats
import pytest

from infra.artifacts import ArtifactMissing, ArtifactStore
from infra.errors import UnexpectedEnvironment
from infra.objectstore import NatsArtifactStore, open_store
from infra.privatestack import free_port
from infra.settings import Settings
from tests.infra.events.conftest import NatsServer


@pytest.fixture(scope="module")
def nats_js(tmp_path_factory):
    server = NatsServer(tmp_path_factory.mktemp("objnats"))
    server.start()
    yield server
    server.stop()


def host(tmp_path, server: NatsServer, name: str, **kw) -> NatsArtifactStore:
    settings = Settings(data_dir=tmp_path / name, nats_port=server.port, artifact_store="nats",
                        artifact_bucket=f"t-{os.getpid()}", **kw)
    store = open_store(settings)
    assert isinstance(store, NatsArtifactStore)
    return store


def test_what_one_host_writes_another_reads(tmp_path, nats_js):
    a, b = host(tmp_path, nats_js, "a"), host(tmp_path, nats_js, "b")
    try:
        ref = a.put_json({"transcript": ["hi", "there"]})
        assert b.get_json(ref) == {"transcript": ["hi", "there"]}
        assert not (tmp_path / "b" / "artifacts").exists()  # b's data dir had nothing: it came from the bucket
        big = tmp_path / "big.bin"
        big.write_bytes(os.urandom(3 * 1024 * 1024 + 17))  # many 128 KB chunks, not a multiple
        ref = a.put_file(big)
        out = tmp_path / "copy.bin"
        b.get_file(ref, out)
        assert out.read_bytes() == big.read_bytes() and ref == "sha256:" + hashlib.sha256(big.read_bytes()).hexdigest()
        with pytest.raises(ArtifactMissing, match="not in the shared store"):
            b.get_bytes("sha256:" + "0" * 64)
    finally:
        a.close()
        b.close()


def test_content_that_does_not_hash_to_its_ref_is_refused(tmp_path, nats_js):
    store = host(tmp_path, nats_js, "c")
    digest = hashlib.sha256(b"the real content").hexdigest()

    async def plant() -> None:  # someone with write access to the bucket puts other bytes under the name
        nc = await nats.connect(nats_js.url)
        obs = await nc.jetstream().object_store(store.bucket) if await _exists(nc, store.bucket) else \
            await nc.jetstream().create_object_store(store.bucket)
        await obs.put(digest, b"something else")
        await nc.close()
    asyncio.run(plant())
    try:
        with pytest.raises(ArtifactMissing, match="does not hash to its name"):
            store.get_bytes(f"sha256:{digest}")
        assert not store._path(digest).exists()  # nothing kept in the cache
    finally:
        store.close()


async def _exists(nc, bucket: str) -> bool:
    try:
        await nc.jetstream().object_store(bucket)
        return True
    except Exception:  # noqa: BLE001
        return False


def test_the_cache_stays_within_its_bound_and_refetches(tmp_path, nats_js):
    store = host(tmp_path, nats_js, "d", artifact_cache_mb=1.0)
    try:
        refs = [store.put_bytes(os.urandom(200_000)) for _ in range(12)]  # 2.4 MB through a 1 MB cache
        cached = sum(f.stat().st_size for f in store.root.rglob("*") if f.is_file())
        assert cached <= 1_000_000
        assert all(len(store.get_bytes(r)) == 200_000 for r in refs)  # the evicted ones come back
    finally:
        store.close()


def test_a_hosts_older_file_store_is_read_and_uploaded(tmp_path, nats_js):
    old = ArtifactStore(tmp_path / "e" / "artifacts")
    ref = old.put_text("written before the switch to nats")
    e = host(tmp_path, nats_js, "e")
    f = host(tmp_path, nats_js, "f")
    try:
        assert e.get_text(ref) == "written before the switch to nats"
        assert f.get_text(ref) == "written before the switch to nats"  # uploaded by e's read
    finally:
        e.close()
        f.close()


def test_no_nats_is_a_clear_error(tmp_path):
    settings = Settings(data_dir=tmp_path / "g", nats_port=free_port(), artifact_store="nats")
    store = open_store(settings)
    try:
        with pytest.raises(UnexpectedEnvironment, match="cannot reach NATS .* BOSUN_NATS_URL"):
            store.put_text("x")
    finally:
        store.close()


def test_a_bad_store_or_bucket_setting_is_refused(monkeypatch):
    from infra.errors import ConfigError
    from infra.settings import load_settings

    monkeypatch.setenv("BOSUN_ARTIFACT_STORE", "s3")
    with pytest.raises(ConfigError, match="BOSUN_ARTIFACT_STORE='s3' is invalid"):
        load_settings()
    monkeypatch.setenv("BOSUN_ARTIFACT_STORE", "nats")
    monkeypatch.setenv("BOSUN_ARTIFACT_BUCKET", "a.b")
    with pytest.raises(ConfigError, match="BOSUN_ARTIFACT_BUCKET='a.b' is invalid"):
        load_settings()


async def test_an_activitys_uploads_go_together_and_settle_before_it_ends(tmp_path, nats_js):
    """Within uploads_settled (every activity of a worker), puts return at once and upload side by side; leaving
    it waits until the bucket has them all, so a ref handed on is readable on any host. A task started inside that
    outlives it uploads before its put returns."""
    from infra.objectstore import uploads_settled

    a, b = host(tmp_path, nats_js, "h"), host(tmp_path, nats_js, "i")
    gate = asyncio.Event()

    async def later() -> str:
        await gate.wait()
        return a.put_text("written by a task that outlived its activity")
    try:
        async with uploads_settled():
            refs = [a.put_text(f"turn {n}") for n in range(20)]
            outliving = asyncio.ensure_future(later())
        assert [b.get_text(r) for r in refs] == [f"turn {n}" for n in range(20)]
        gate.set()
        assert b.get_text(await outliving) == "written by a task that outlived its activity"
    finally:
        a.close()
        b.close()
