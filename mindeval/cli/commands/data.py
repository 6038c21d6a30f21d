"""``mindeval data``: download and inspect the authors' data release (pinned commit, verified)."""

from __future__ import annotations

import argparse
import sys
import time

from ...profiles.download import COMMIT, RELEASE, REPOSITORY
from .. import out_dir
from ..fields import seconds

_V1 = (f"MindEval implements {RELEASE}: the files of {REPOSITORY} at commit {COMMIT[:7]}, never a branch "
       "(the authors' main branch now serves MindEval 2).")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="download the authors' MindEval (v1) data release (profiles, human annotations)",
                       description=f"Fetch the authors' MindEval (v1) release at its pinned commit into the cache "
                       f"and verify its SHA-256 checksums. {_V1} See docs/profiles.md.")
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION")
    p.set_defaults(func=lambda args: _help(p))

    d = dsub.add_parser("download", help="download and verify profiles.jsonl and the human data",
                        description=f"{_V1} Files go to <cache>/official/<commit>/ where <cache> is --cache-dir, "
                        "else $MINDEVAL_CACHE_DIR, else ~/.cache/mindeval. Verified files are kept; "
                        "an interrupted or corrupted transfer leaves nothing behind.")
    d.add_argument("files", nargs="*", metavar="FILE",
                   help="only these files (profiles.jsonl, human_annotations.jsonl, human_user_turns.jsonl)")
    d.add_argument("--cache-dir", type=out_dir("--cache-dir"), default=None, metavar="DIR", help="cache root")
    d.add_argument("--base-url", default=None, metavar="URL",
                   help="where FILE is fetched as URL/FILE (default: GitHub raw at the pinned commit)")
    d.add_argument("--sha256", action="append", default=[], metavar="FILE=HEX",
                   help="expected checksum for FILE instead of the upstream one (repeatable)")
    d.add_argument("--timeout", type=seconds("--timeout"), default=60.0, metavar="S", help="network timeout in seconds")
    d.add_argument("--quiet", action="store_true", help="no progress output")
    d.set_defaults(func=_download)

    s = dsub.add_parser("status", help="show the cache directory and which files are present and verified")
    s.add_argument("--cache-dir", type=out_dir("--cache-dir"), default=None, metavar="DIR", help="cache root")
    s.set_defaults(func=_status)


def _help(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


class _Bar:
    """Progress on stderr, at most a few updates per second."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.last = 0.0

    def __call__(self, name: str, got: int, total: int | None) -> None:
        now = time.monotonic()
        if self.quiet or (now - self.last < 0.25 and got != total):
            return
        self.last = now
        of = f" of {total / 1e6:.1f} MB" if total else ""
        print(f"\r  {name}: {got / 1e6:.1f} MB{of}", end="", file=sys.stderr, flush=True)
        if total and got == total:
            print(file=sys.stderr)


def _download(args: argparse.Namespace) -> int:
    from ...profiles.download import download_release, official_dir, parse_sha_overrides

    overrides = parse_sha_overrides(args.sha256)
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    results = download_release(cache_dir=args.cache_dir, base_url=args.base_url, sha256=overrides,
                               files=args.files or None, timeout=args.timeout, progress=_Bar(args.quiet), log=log)
    for r in results:
        rate = f", {r.bytes / 1e6 / r.seconds:.1f} MB/s" if r.status == "downloaded" and r.seconds > 0 else ""
        print(f"{r.status:10s} {r.name}  sha256 {r.sha256[:16]}…  {r.bytes} bytes{rate}")
    target = official_dir(args.cache_dir)
    print(f"verified files of {RELEASE} ({REPOSITORY} at commit {COMMIT[:7]}) are in {target}", file=sys.stderr)
    if args.cache_dir is not None:
        print(f"to use them: export MINDEVAL_CACHE_DIR={args.cache_dir}", file=sys.stderr)
    return 0


def _status(args: argparse.Namespace) -> int:
    from ...files import sha256_file
    from ...profiles.download import FILES, UPSTREAM_SHA256, official_dir, read_manifest

    target = official_dir(args.cache_dir)
    print(f"cache: {target}")
    recorded = read_manifest(target).get("files", {})
    missing = 0
    for name in FILES:
        path = target / name
        if not path.is_file():
            missing += 1
            print(f"  missing   {name}")
            continue
        actual = sha256_file(path)
        expected = recorded.get(name, {}).get("sha256", UPSTREAM_SHA256[name])
        state = "verified" if actual == expected else "CHANGED"
        upstream = "" if actual == UPSTREAM_SHA256[name] else " (differs from upstream: overridden checksum)"
        print(f"  {state:9s} {name}{upstream}")
    if missing:
        print("run `mindeval data download` to fetch missing files", file=sys.stderr)
    return 0
