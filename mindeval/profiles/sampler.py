"""Seeded profile sampling: profile ``i`` of seed ``s`` depends only on ``(s, i)`` and the pool.

Each profile gets its own numpy ``Generator`` built from ``SeedSequence(s, spawn_key=(i,))``,
so the first 50 profiles of ``--n 1000`` are the profiles of ``--n 50``, and the output
is byte-identical on any machine. Python's global ``random`` is never used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..errors import MindEvalError
from ..files import atomic_write
from ..records import Profile, ProfileAttributes
from .pool import AttributePool, load_pool
from .rules import sample_attributes

SAMPLER_VERSION = 1  # bump when the order or meaning of draws changes


def profile_rng(seed: int, index: int) -> np.random.Generator:
    """The random source of profile ``index`` under ``seed``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(index,))))


def check_seed(seed: Any) -> int:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise MindEvalError(f"seed must be a non-negative integer (got {seed!r})", field="seed")
    return seed


def sample_profiles(
    n: int, seed: int, *, pool: AttributePool | None = None, start: int = 0
) -> list[Profile]:
    """Sample profiles ``start .. start+n-1`` of ``seed`` (attributes only, no backstory)."""
    if not isinstance(n, int) or n < 1:
        raise MindEvalError(f"n must be a positive integer (got {n!r})", field="n")
    check_seed(seed)
    pool = pool or load_pool()
    out = []
    for i in range(start, start + n):
        attrs = sample_attributes(profile_rng(seed, i), pool)
        out.append(Profile(member_attributes=ProfileAttributes(**attrs)))
    return out


def profiles_jsonl(profiles: list[Profile]) -> bytes:
    """The exact bytes of a profiles.jsonl file (authors' schema, UTF-8, one object per line)."""
    lines = [json.dumps(p.to_json(), ensure_ascii=False) + "\n" for p in profiles]
    return "".join(lines).encode("utf-8")


def sidecar(path: str | Path, suffix: str) -> Path:
    """``out/profiles.jsonl`` + ``meta.json`` → ``out/profiles.meta.json``."""
    p = Path(path)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    return p.with_name(f"{stem}.{suffix}")


def write_sample(path: str | Path, n: int, seed: int, *, pool_dir: str | Path | None = None) -> dict[str, Any]:
    """Sample, write the JSONL atomically and record how it was made in ``<stem>.meta.json``."""
    pool = load_pool(pool_dir)
    profiles = sample_profiles(n, seed, pool=pool)
    data = profiles_jsonl(profiles)
    atomic_write(path, data)
    meta = {
        "kind": "sample",
        "n": n,
        "seed": seed,
        "sampler_version": SAMPLER_VERSION,
        "pool_dir": "bundled" if pool_dir is None else str(pool_dir),
        "pool_sha256": pool.sha256,
        "profiles_sha256": hashlib.sha256(data).hexdigest(),
        "mindeval_version": __version__,
        "numpy_version": np.__version__,
    }
    atomic_write(sidecar(path, "meta.json"), (json.dumps(meta, indent=2) + "\n").encode())
    return meta
