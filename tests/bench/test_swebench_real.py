"""bench/swebench_real.py's keeping of logs for the conformance bench."""

from pathlib import Path

import pytest

from bench import swebench_real


def _logs(root: Path, ids: dict[str, str]) -> Path:
    for instance_id, text in ids.items():
        (root / instance_id).mkdir(parents=True)
        (root / instance_id / "test_output.txt").write_text(text)
    return root


def test_a_subsets_logs_replace_only_the_instances_it_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(swebench_real, "LOGS", tmp_path / "kept")
    swebench_real.keep_logs(_logs(tmp_path / "full", {"a__a-1": "full a", "b__b-1": "full b"}), "gold")
    stale = tmp_path / "kept" / "gold" / "a__a-1" / "stale.txt"
    stale.write_text("from the full run")
    swebench_real.keep_logs(_logs(tmp_path / "subset", {"a__a-1": "subset a"}), "gold")
    kept = tmp_path / "kept" / "gold"
    assert (kept / "a__a-1" / "test_output.txt").read_text() == "subset a"
    assert not stale.exists()  # the judged instance's folder is replaced whole
    assert (kept / "b__b-1" / "test_output.txt").read_text() == "full b"
