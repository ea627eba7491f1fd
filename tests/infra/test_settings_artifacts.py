import pytest

from infra.artifacts import ArtifactMissing, ArtifactStore, BadRef
from infra.errors import ConfigError
from infra.settings import Settings, load_settings
from tests.conftest import ROOT


def test_settings_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("BOSUN_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BOSUN_TEMPORAL_PORT", "17233")
    monkeypatch.setenv("BOSUN_WORKER_ID", "host-a")
    s = load_settings()
    assert s.data_dir == tmp_path and s.temporal_target == "127.0.0.1:17233"
    assert s.worker_queue == "bosun@host-a"


def test_bad_setting_names_the_variable(monkeypatch):
    monkeypatch.setenv("BOSUN_TEMPORAL_PORT", "seven")
    with pytest.raises(ConfigError, match="BOSUN_TEMPORAL_PORT='seven' is invalid"):
        load_settings()


def test_every_setting_is_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for name in Settings.model_fields:
        assert f"BOSUN_{name.upper()}" in readme, f"BOSUN_{name.upper()} missing from README"


def test_artifacts_are_content_addressed(tmp_path):
    store = ArtifactStore(tmp_path)
    ref = store.put_json({"b": 1, "a": [1, 2]})
    assert ref == store.put_json({"a": [1, 2], "b": 1})
    assert store.get_json(ref) == {"a": [1, 2], "b": 1}
    assert store.get_text(store.put_text("héllo")) == "héllo"
    with pytest.raises(ArtifactMissing, match="not in the store"):
        store.get_bytes("sha256:" + "0" * 64)
    outside = tmp_path.parent / "secret.txt"
    outside.write_text("host secret")
    for bad in ("../../etc/passwd", "sha256:" + "/" * 55 + "etc/shadow", "sha256:" + "/" * 56 + "proc/self/environ",
                "sha256:" + "A" * 64, "sha256:" + "0" * 63 + "/", "sha256:../" + "0" * 61, "sha256:" + "0" * 64 + "\n",
                "sha256:" + str(outside).rjust(64, "/"), "", None, 7):
        with pytest.raises(BadRef, match="not an artifact ref"):
            store.get_bytes(bad)  # type: ignore[arg-type]
    assert not list(tmp_path.rglob(".tmp-*"))
