"""`--profiles official|demo|FILE` resolution."""

from __future__ import annotations

import pytest

from mindeval.errors import MindEvalError
from mindeval.profiles.download import COMMIT
from mindeval.profiles.official import official_file, resolve_profiles_arg


def test_demo_and_paths(tmp_path, demo_profiles_path):
    assert resolve_profiles_arg("demo").resolve() == demo_profiles_path.resolve()
    f = tmp_path / "mine.jsonl"
    f.write_text("{}\n")
    assert resolve_profiles_arg(str(f)) == f
    with pytest.raises(MindEvalError, match="profiles file not found") as exc:
        resolve_profiles_arg(str(tmp_path / "absent.jsonl"))
    assert exc.value.path == str(tmp_path / "absent.jsonl")


def test_official_missing_tells_the_user_to_download(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path))
    with pytest.raises(MindEvalError) as exc:
        resolve_profiles_arg("official")
    msg = str(exc.value)
    assert "mindeval data download" in msg and str(tmp_path / "official" / COMMIT) in msg
    with pytest.raises(MindEvalError, match="unknown release file"):
        official_file("secrets.txt")


def test_official_checks_the_recorded_checksum(tmp_path, monkeypatch, shared_data):
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path))
    target = tmp_path / "official" / COMMIT
    target.mkdir(parents=True)
    (target / "profiles.jsonl").write_bytes((shared_data / "profiles.jsonl").read_bytes())
    assert resolve_profiles_arg("official") == target / "profiles.jsonl"  # matches upstream
    (target / "profiles.jsonl").write_bytes(b"edited\n")
    with pytest.raises(MindEvalError, match="checksum mismatch"):
        resolve_profiles_arg("official")
