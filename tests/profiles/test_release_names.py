"""``official`` names the downloaded release file wherever one is expected; mirrors by file:// or path."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.cli.meta import build_parser as metaeval_parser
from mindeval.cli.meta import main as metaeval_main
from mindeval.profiles import download as dl

FILES = ("profiles.jsonl", "human_annotations.jsonl", "human_user_turns.jsonl")


@pytest.fixture
def mirror(tmp_path, shared_data) -> Path:
    """A copy of the release in tmp, as a mirror directory would hold it."""
    out = tmp_path / "mirror dir"  # a space: file:// URLs must be quoted properly
    out.mkdir()
    for name in FILES:
        shutil.copyfile(shared_data / name, out / name)
    return out


def _turns_sha(mirror: Path) -> str:
    return "human_user_turns.jsonl=" + hashlib.sha256((mirror / "human_user_turns.jsonl").read_bytes()).hexdigest()


@pytest.mark.parametrize("form", ["uri", "path"])
def test_download_from_a_file_mirror(tmp_path, mirror, form, capsys):
    base = mirror.as_uri() if form == "uri" else str(mirror)
    assert main(["data", "download", "--cache-dir", str(tmp_path / "c"), "--base-url", base, "--quiet",
                 "--sha256", _turns_sha(mirror)]) == 0
    assert capsys.readouterr().out.count("downloaded") == 3
    target = dl.official_dir(tmp_path / "c")
    for name in FILES:
        assert (target / name).read_bytes() == (mirror / name).read_bytes()
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["files"]["profiles.jsonl"]["source"] == mirror.as_uri() + "/profiles.jsonl"


def test_a_corrupt_file_mirror_keeps_nothing(tmp_path, mirror, capsys):
    data = bytearray((mirror / "profiles.jsonl").read_bytes())
    data[500] ^= 0xFF
    (mirror / "profiles.jsonl").write_bytes(bytes(data))
    assert main(["data", "download", "--cache-dir", str(tmp_path / "c"), "--base-url", mirror.as_uri(),
                 "--quiet", "profiles.jsonl"]) == 2
    assert capsys.readouterr().err.startswith("error: profiles.jsonl: checksum mismatch")
    assert not (dl.official_dir(tmp_path / "c") / "profiles.jsonl").exists()


@pytest.mark.parametrize(("base", "message"), [
    ("ftp://x", "error: --base-url: base URL must be http://, https://, file:// or a directory (got 'ftp://x')"),
    ("file:///no/such/dir", "error: --base-url: no such directory: /no/such/dir"),
])
def test_bad_mirrors_are_one_line(tmp_path, base, message, capsys):
    assert main(["data", "download", "--cache-dir", str(tmp_path), "--base-url", base]) == 2
    assert capsys.readouterr().err.strip() == message


@pytest.fixture
def downloaded(tmp_path, mirror, monkeypatch) -> Path:
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["data", "download", "--base-url", mirror.as_uri(), "--quiet", "--sha256", _turns_sha(mirror)]) == 0
    return dl.official_dir()


def test_official_before_download_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "empty"))
    assert metaeval_main(["compare", "--humans", "official"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "human_annotations.jsonl is not downloaded yet" in err
    assert "run `mindeval data download` first" in err


def test_official_names_each_release_file(downloaded):
    p = metaeval_parser()
    annotations = str(downloaded / "human_annotations.jsonl")
    assert p.parse_args(["compare", "--humans", "official", "sqlite:///x.db"]).humans == [annotations, "sqlite:///x.db"]
    j = p.parse_args(["judge", "--annotations", "official", "--judge", "fake/judge", "--fewshot-file", "official",
                      "--out", "o"])
    assert j.annotations == annotations and j.fewshot_file == annotations
    r = p.parse_args(["realism", "--human-turns", "official", "--patient", "fake/echo", "--out", "o"])
    assert r.human_turns == str(downloaded / "human_user_turns.jsonl")
    # anything else is left as given
    assert p.parse_args(["compare", "--humans", "my.jsonl"]).humans == ["my.jsonl"]


def test_compare_with_official_equals_compare_with_the_file(downloaded, capsys):
    assert metaeval_main(["compare", "--humans", "official"]) == 0
    by_name = capsys.readouterr().out
    assert metaeval_main(["compare", "--humans", str(downloaded / "human_annotations.jsonl")]) == 0
    assert capsys.readouterr().out == by_name
    assert "| Avg. P | 0.4308 [0.2524, 0.5801] | 0.0885 [-0.0973, 0.2733] | 0.2829 [0.1205, 0.4487] n=59 | 0.3442 [0.1589, 0.5110] |  |" in by_name  # README.md's row


def test_run_draws_fewshot_examples_from_official(downloaded, tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--profiles", "official", "--limit", "1", "--turns", "2", "--patient", "fake/echo",
                 "--clinician", "fake/echo", "--judge", "fake/judge", "--fewshot-file", "official",
                 "--fewshot-k", "2", "--out", str(out), "--quiet"]) == 0
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["fewshot_source"] == str(downloaded / "human_annotations.jsonl")
    assert config["fewshot_k"] == 2


def test_app_imports_the_official_annotations(downloaded, tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'app.db'}"
    assert main(["app", "admin", "--db", db, "create-study", "Authors"]) == 0
    assert main(["app", "admin", "--db", db, "import", "Authors", "official"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --kind: 'official' needs --kind authors (human_annotations.jsonl) or --kind profiles")
    assert main(["app", "admin", "--db", db, "import", "Authors", "official", "--kind", "authors"]) == 0
    assert "imported authors: 60 items linked" in capsys.readouterr().out
