"""`mindeval data download` against a real HTTP server on 127.0.0.1 serving the authors' release.

The server can corrupt a file, cut a transfer short, stall, or answer 404, so every
failure path runs over a real socket. The local human_user_turns.jsonl differs from
upstream (credential fields stripped), so its checksum is overridden with the local one.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mindeval.cli import build_parser, main
from mindeval.errors import MindEvalError
from mindeval.profiles import download as dl
from mindeval.profiles.official import official_file, resolve_profiles_arg


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Server:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                server.requests.append(self.path)
                _, mode, name = self.path.split("/", 2)
                path = server.root / name
                if not path.is_file() or mode not in ("good", "corrupt", "truncate", "stall"):
                    self.send_error(404, "Not Found")
                    return
                body = path.read_bytes()
                if mode == "corrupt":
                    body = body[:1000] + bytes([body[1000] ^ 0xFF]) + body[1001:]
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "stall":
                    self.wfile.write(body[:100])
                    self.wfile.flush()
                    time.sleep(3)
                    return
                if mode == "truncate":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{mode}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(shared_data):
    s = _Server(shared_data)
    yield s
    s.close()


@pytest.fixture
def turns_sha(shared_data) -> str:
    return _sha(shared_data / "human_user_turns.jsonl")


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob(".*.part"))


def test_download_verifies_and_caches_all_files(tmp_path, server, shared_data, turns_sha, monkeypatch):
    monkeypatch.delenv("MINDEVAL_CACHE_DIR", raising=False)
    results = dl.download_release(cache_dir=tmp_path, base_url=server.url("good"),
                                  sha256={"human_user_turns.jsonl": turns_sha})
    target = tmp_path / "official" / dl.COMMIT
    assert [r.status for r in results] == ["downloaded"] * 3
    for name in dl.FILES:
        assert (target / name).read_bytes() == (shared_data / name).read_bytes()
    assert _sha(target / "profiles.jsonl") == dl.UPSTREAM_SHA256["profiles.jsonl"]
    assert _sha(target / "human_annotations.jsonl") == dl.UPSTREAM_SHA256["human_annotations.jsonl"]
    assert _leftovers(target) == []
    manifest = dl.read_manifest(target)
    assert manifest["commit"] == dl.COMMIT
    assert manifest["files"]["human_user_turns.jsonl"]["matches_upstream"] is False
    assert manifest["files"]["profiles.jsonl"]["matches_upstream"] is True

    n = len(server.requests)
    again = dl.download_release(cache_dir=tmp_path, base_url=server.url("good"),
                                sha256={"human_user_turns.jsonl": turns_sha})
    assert [r.status for r in again] == ["cached"] * 3 and len(server.requests) == n


def test_corrupted_file_is_rejected_and_nothing_is_left(tmp_path, server):
    with pytest.raises(MindEvalError, match="checksum mismatch") as exc:
        dl.download_release(cache_dir=tmp_path, base_url=server.url("corrupt"), files=["profiles.jsonl"])
    assert exc.value.field == "profiles.jsonl"
    target = tmp_path / "official" / dl.COMMIT
    assert not (target / "profiles.jsonl").exists()
    assert _leftovers(target) == []


def test_interrupted_transfer_is_rejected_and_nothing_is_left(tmp_path, server):
    with pytest.raises(MindEvalError, match="interrupted: received") as exc:
        dl.download_release(cache_dir=tmp_path, base_url=server.url("truncate"), files=["human_annotations.jsonl"])
    assert "nothing was kept" in str(exc.value)
    target = tmp_path / "official" / dl.COMMIT
    assert list(target.iterdir()) == []


def test_stalled_transfer_times_out(tmp_path, server):
    with pytest.raises(MindEvalError, match="timed out"):
        dl.download_release(cache_dir=tmp_path, base_url=server.url("stall"), files=["profiles.jsonl"],
                            timeout=0.5)
    assert list((tmp_path / "official" / dl.COMMIT).iterdir()) == []


def test_http_error_and_unreachable_server(tmp_path, server):
    with pytest.raises(MindEvalError, match="HTTP 404"):
        dl.download_release(cache_dir=tmp_path, base_url=server.url("missing"), files=["profiles.jsonl"])
    with pytest.raises(MindEvalError, match="cannot reach"):
        dl.download_release(cache_dir=tmp_path, base_url="http://127.0.0.1:9/x", files=["profiles.jsonl"],
                            timeout=2)


def test_user_interrupt_midway_leaves_no_partial_file(tmp_path, server):
    def stop(name, got, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dl.download_release(cache_dir=tmp_path, base_url=server.url("good"), files=["human_annotations.jsonl"],
                            progress=stop)
    assert list((tmp_path / "official" / dl.COMMIT).iterdir()) == []


def test_stale_partial_files_are_cleaned_and_a_changed_file_is_replaced(tmp_path, server, shared_data):
    target = tmp_path / "official" / dl.COMMIT
    target.mkdir(parents=True)
    (target / ".profiles.jsonl.abc123.part").write_bytes(b"half")
    (target / "profiles.jsonl").write_bytes(b"tampered\n")
    (r,) = dl.download_release(cache_dir=tmp_path, base_url=server.url("good"), files=["profiles.jsonl"])
    assert r.status == "downloaded"
    assert (target / "profiles.jsonl").read_bytes() == (shared_data / "profiles.jsonl").read_bytes()
    assert _leftovers(target) == []


def test_cli_download_then_official_profiles_resolve(tmp_path, server, turns_sha, monkeypatch, capsys):
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path))
    with pytest.raises(MindEvalError, match="mindeval data download"):
        resolve_profiles_arg("official")
    rc = main(["data", "download", "--base-url", server.url("good"), "--quiet",
               "--sha256", f"human_user_turns.jsonl={turns_sha}"])
    assert rc == 0
    assert capsys.readouterr().out.count("downloaded") == 3
    path = resolve_profiles_arg("official")
    assert path == tmp_path / "official" / dl.COMMIT / "profiles.jsonl"
    assert official_file("human_annotations.jsonl").is_file()
    assert main(["data", "status"]) == 0
    assert capsys.readouterr().out.count("verified") == 3
    assert main(["profiles", "stats", "official"]) == 0
    assert "48.0% (24)" in capsys.readouterr().out  # 24 of the 50 official profiles are severe
    (tmp_path / "official" / dl.COMMIT / "profiles.jsonl").write_bytes(b"{}\n")
    with pytest.raises(MindEvalError, match="checksum mismatch"):
        resolve_profiles_arg("official")


def test_cli_errors_exit_2_without_traceback(tmp_path, server, capsys):
    assert main(["data", "download", "--cache-dir", str(tmp_path), "--sha256", "profiles.jsonl=abc"]) == 2
    assert "64 hex digits" in capsys.readouterr().err
    assert main(["data", "download", "--cache-dir", str(tmp_path), "--sha256", "other.jsonl=" + "0" * 64]) == 2
    assert "unknown file" in capsys.readouterr().err
    assert main(["data", "download", "--cache-dir", str(tmp_path), "--base-url", server.url("corrupt"),
                 "--quiet", "profiles.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: profiles.jsonl: checksum mismatch") and "Traceback" not in err
    assert main(["data", "download", "--cache-dir", str(tmp_path), "--base-url", "ftp://x"]) == 2


def test_run_uses_the_official_profiles_once_downloaded(tmp_path, server, monkeypatch):
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    dl.download_release(base_url=server.url("good"), files=["profiles.jsonl"])
    out = tmp_path / "run"
    rc = main(["run", "--profiles", "official", "--limit", "1", "--turns", "2", "--patient", "fake/echo",
               "--clinician", "fake/echo", "--judge", "fake/judge", "--out", str(out), "--quiet"])
    assert rc == 0
    line = (out / "interactions.jsonl").read_text().splitlines()[0]
    assert '"Dennis"' in line  # the first official profile


def test_default_cache_location(monkeypatch, tmp_path):
    monkeypatch.delenv("MINDEVAL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert dl.official_dir() == tmp_path / "mindeval" / "official" / dl.COMMIT
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert dl.official_dir() == tmp_path / ".cache" / "mindeval" / "official" / dl.COMMIT
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "c"))
    assert dl.official_dir() == tmp_path / "c" / "official" / dl.COMMIT
    assert dl.official_dir(tmp_path / "d") == tmp_path / "d" / "official" / dl.COMMIT


def test_the_release_is_mindeval_v1_at_a_pinned_commit_never_a_branch(tmp_path, server, turns_sha, capsys):
    """The authors' main branch now serves MindEval 2: the default source names the v1 commit,
    and the command says which release it fetched."""
    assert re.fullmatch(r"[0-9a-f]{40}", dl.COMMIT)
    assert dl.DEFAULT_BASE_URL == f"https://raw.githubusercontent.com/{dl.REPOSITORY}/{dl.COMMIT}/data"
    parser = build_parser()
    assert "MindEval (v1)" in parser.format_help()
    data = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["data"]
    download = next(a for a in data._actions if isinstance(a, argparse._SubParsersAction)).choices["download"]
    text = " ".join(download.format_help().split())
    assert "MindEval (v1)" in text and dl.COMMIT[:7] in text and "MindEval 2" in text and "never a branch" in text
    assert main(["data", "download", "--cache-dir", str(tmp_path), "--base-url", server.url("good"), "--quiet",
                 "--sha256", f"human_user_turns.jsonl={turns_sha}"]) == 0
    assert f"MindEval (v1) ({dl.REPOSITORY} at commit {dl.COMMIT[:7]})" in capsys.readouterr().err
    manifest = dl.read_manifest(tmp_path / "official" / dl.COMMIT)
    assert manifest["release"] == "MindEval (v1)" and manifest["commit"] == dl.COMMIT
