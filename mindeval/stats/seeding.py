"""Seeded random generators derived from a run seed plus stable keys.

Each system (or system pair) gets its own stream, derived from the user's seed and
the key's SHA-256, so results do not depend on the order in which systems are given
or on which other systems are in the leaderboard.
"""

from __future__ import annotations

import hashlib

import numpy as np


def rng_for(seed: int, *keys: str) -> np.random.Generator:
    """A PCG64 generator for ``seed`` and the ordered ``keys`` (same inputs → same stream)."""
    words: list[int] = [int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF]
    for key in keys:
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        words += [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence(words))
