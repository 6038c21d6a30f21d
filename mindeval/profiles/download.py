"""``mindeval data download``: fetch the authors' data release at a pinned commit, verified.

MindEval implements MindEval (v1): the paper and the data of the authors' repository at
:data:`COMMIT`. That repository's main branch now serves MindEval 2, which this project does
not implement, so the download names a commit, never a branch.

Each file is streamed into a temporary file in the cache directory while its SHA-256 is
computed; only a complete, verified file is moved (``os.replace``) to its final name.
A transfer that is interrupted, truncated or corrupted leaves nothing under the final
name, and stale temporary files are removed on the next run.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from ..errors import MindEvalError
from ..files import sha256_file

REPOSITORY = "SWORDHealth/mind-eval"
COMMIT = "aab6be604e686bd5a158c3f252c3a71c955c28ce"  # MindEval (v1); their main branch is MindEval 2
RELEASE = "MindEval (v1)"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/data"
# Upstream SHA-256 at COMMIT (from the data release README).
UPSTREAM_SHA256: dict[str, str] = {
    "profiles.jsonl": "48bf913b31b98ba5909d42737fe144f5ade99fa74db04b7f850b076e05dbb171",
    "human_annotations.jsonl": "81ce4ce308bacba474045654c68a25b297adfea1c6f3f70a9d00c5abe22296fe",
    "human_user_turns.jsonl": "e3db007e865efd7d3f6ba69b59b57295898f1a0ae60c882942e6c5cfe31301ef",
}
FILES = tuple(UPSTREAM_SHA256)
MANIFEST = "manifest.json"
CHUNK = 1 << 16
DEFAULT_TIMEOUT_S = 60.0
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")

Progress = Callable[[str, int, int | None], None]  # (file name, bytes so far, total or None)


def cache_root(override: str | Path | None = None) -> Path:
    """MindEval's cache root: ``override``, else ``$MINDEVAL_CACHE_DIR``, else ``~/.cache/mindeval``."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get("MINDEVAL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "mindeval"


def official_dir(root: str | Path | None = None) -> Path:
    """Where the release at :data:`COMMIT` is cached: ``<cache root>/official/<commit>/``."""
    return cache_root(root) / "official" / COMMIT


def mirror_url(base: str) -> str:
    """The release's base URL: ``http(s)://…``, ``file:///dir`` or a local directory (as ``file://``)."""
    base = base.rstrip("/")
    if base.startswith(("http://", "https://")):
        return base
    if base.startswith("file://"):
        directory = Path(urllib.request.url2pathname(base.removeprefix("file://")))
    elif "://" not in base and base:
        directory = Path(base).expanduser().resolve()
    else:
        raise MindEvalError(f"base URL must be http://, https://, file:// or a directory (got {base!r})",
                            field="--base-url")
    if not directory.is_dir():
        raise MindEvalError(f"no such directory: {directory}", field="--base-url")
    return directory.as_uri()


def parse_sha_overrides(items: list[str] | None) -> dict[str, str]:
    """``["NAME=HEX", ...]`` → ``{NAME: hex}``; unknown names or bad hex are clear errors."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, hexval = item.partition("=")
        if not sep:
            raise MindEvalError(f"expected NAME=HEX, got {item!r}", field="--sha256")
        if name not in UPSTREAM_SHA256:
            raise MindEvalError(f"unknown file {name!r} (one of {', '.join(FILES)})", field="--sha256")
        if not _HEX64.match(hexval):
            raise MindEvalError(f"{name}: a SHA-256 is 64 hex digits (got {hexval!r})", field="--sha256")
        out[name] = hexval.lower()
    return out


class FileResult(BaseModel):
    name: str
    path: str
    sha256: str
    bytes: int
    status: str  # downloaded | cached
    seconds: float = 0.0


def _clean_stale(directory: Path, name: str) -> None:
    for tmp in directory.glob(f".{name}.*.part"):
        tmp.unlink(missing_ok=True)


def download_file(
    url: str, dest: Path, expected_sha256: str, *, timeout: float = DEFAULT_TIMEOUT_S,
    progress: Progress | None = None,
) -> FileResult:
    """Stream ``url`` to ``dest`` through a temporary file; keep it only if complete and verified."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale(dest.parent, dest.name)
    started = time.perf_counter()
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        got = 0
        with os.fdopen(fd, "wb") as out:
            try:
                resp = urllib.request.urlopen(url, timeout=timeout)  # noqa: S310 (http, https, file)
            except urllib.error.HTTPError as exc:
                raise MindEvalError(f"download failed: HTTP {exc.code} {exc.reason} for {url}",
                                    field=dest.name) from None
            except urllib.error.URLError as exc:
                raise MindEvalError(f"cannot reach {url}: {exc.reason}", field=dest.name) from None
            with resp:
                length = resp.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                while True:
                    block = resp.read(CHUNK)
                    if not block:
                        break
                    out.write(block)
                    h.update(block)
                    got += len(block)
                    if progress:
                        progress(dest.name, got, total)
            out.flush()
            os.fsync(out.fileno())
        if total is not None and got != total:
            raise MindEvalError(
                f"transfer interrupted: received {got} of {total} bytes from {url}; nothing was kept, "
                "re-run the command", field=dest.name,
            )
        digest = h.hexdigest()
        if digest != expected_sha256:
            raise MindEvalError(
                f"checksum mismatch for {url}: expected sha256 {expected_sha256}, got {digest} "
                f"({got} bytes); the file was discarded", field=dest.name,
            )
        os.replace(tmp, dest)
    except TimeoutError as exc:
        tmp.unlink(missing_ok=True)
        raise MindEvalError(f"timed out after {timeout:g}s downloading {url} ({exc})", field=dest.name) from None
    except (OSError, http.client.HTTPException) as exc:
        tmp.unlink(missing_ok=True)
        raise MindEvalError(f"transfer failed for {url}: {type(exc).__name__}: {exc}; nothing was kept",
                            field=dest.name) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return FileResult(name=dest.name, path=str(dest), sha256=digest, bytes=got, status="downloaded",
                      seconds=time.perf_counter() - started)


def download_release(
    *, cache_dir: str | Path | None = None, base_url: str | None = None,
    sha256: dict[str, str] | None = None, files: list[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S, progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
) -> list[FileResult]:
    """Download and verify the release files into ``official_dir(cache_dir)``.

    A file already present with the expected checksum is not downloaded again.
    """
    names = list(files or FILES)
    for n in names:
        if n not in UPSTREAM_SHA256:
            raise MindEvalError(f"unknown file {n!r} (one of {', '.join(FILES)})", field="file")
    expected = {**UPSTREAM_SHA256, **(sha256 or {})}
    base = mirror_url(base_url or DEFAULT_BASE_URL)
    target = official_dir(cache_dir)
    results: list[FileResult] = []
    for name in names:
        dest = target / name
        if dest.is_file() and sha256_file(dest) == expected[name]:
            results.append(FileResult(name=name, path=str(dest), sha256=expected[name],
                                      bytes=dest.stat().st_size, status="cached"))
            if log:
                log(f"{name}: already cached and verified")
            continue
        if log:
            log(f"{name}: downloading {base}/{name}")
        results.append(download_file(f"{base}/{name}", dest, expected[name], timeout=timeout,
                                     progress=progress))
    _write_manifest(target, base, expected, results)
    return results


def _write_manifest(target: Path, base: str, expected: dict[str, str], results: list[FileResult]) -> None:
    path = target / MANIFEST
    data: dict = {"repository": REPOSITORY, "commit": COMMIT, "release": RELEASE, "files": {}}
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            pass
    data["release"] = RELEASE
    for r in results:
        data.setdefault("files", {})[r.name] = {
            "sha256": r.sha256,
            "bytes": r.bytes,
            "source": f"{base}/{r.name}" if r.status == "downloaded"
            else data.get("files", {}).get(r.name, {}).get("source", f"{base}/{r.name}"),
            "upstream_sha256": UPSTREAM_SHA256[r.name],
            "matches_upstream": r.sha256 == UPSTREAM_SHA256[r.name],
        }
    from .sampler import atomic_write

    atomic_write(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())


def read_manifest(directory: Path) -> dict:
    path = directory / MANIFEST
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
