"""Resolve ``--profiles official|demo|FILE`` and the cached files of the authors' release."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import MindEvalError
from ..files import sha256_file
from ..resources import data_dir
from .download import FILES, UPSTREAM_SHA256, official_dir, read_manifest

DEMO_FILE = "demo_profiles.jsonl"
OFFICIAL = "official"  # the name of the downloaded release wherever one of its files is expected


def official_file(name: str, *, cache_dir: str | Path | None = None) -> Path:
    """Path of a downloaded release file, checked against the checksum it was verified with.

    A missing file is an error that tells the user to run ``mindeval data download``.
    """
    if name not in UPSTREAM_SHA256:
        raise MindEvalError(f"unknown release file {name!r} (one of {', '.join(FILES)})")
    directory = official_dir(cache_dir)
    path = directory / name
    if not path.is_file():
        raise MindEvalError(
            f"the authors' {name} is not downloaded yet (looked in {directory}); "
            "run `mindeval data download` first (it honours MINDEVAL_CACHE_DIR)",
            path=path,
        )
    recorded = read_manifest(directory).get("files", {}).get(name, {}).get("sha256")
    expected = recorded or UPSTREAM_SHA256[name]
    actual = sha256_file(path)
    if actual != expected:
        raise MindEvalError(
            f"checksum mismatch (expected {expected}, found {actual}): the cached file changed "
            "since it was verified; run `mindeval data download` again",
            path=path,
        )
    return path


def resolve_profiles_arg(value: str) -> Path:
    """``official`` → the cached 50 benchmark profiles; ``demo`` → the bundled demo; else a path."""
    if value == OFFICIAL:
        return official_file("profiles.jsonl")
    if value == "demo":
        path = data_dir() / DEMO_FILE
        if not path.is_file():
            raise MindEvalError("the bundled demo profiles are missing (broken install?)", path=path)
        return path
    path = Path(value).expanduser()
    if not path.is_file():
        raise MindEvalError(
            "profiles file not found (give a profiles.jsonl path, 'official' or 'demo')", path=path
        )
    return path



def resolve_release_arg(value: str, name: str) -> str:
    """``official`` → the downloaded release file ``name`` (checked); any other value unchanged."""
    return str(official_file(name)) if value == OFFICIAL else value


def release_arg(name: str) -> Callable[[str], str]:
    """An argparse ``type``: a path, a URL, or ``official`` for the downloaded release file ``name``."""

    def parse(text: str) -> str:
        return resolve_release_arg(text, name)

    parse.__name__ = "path"
    return parse
