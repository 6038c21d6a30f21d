"""Balanced, seeded assignment of items to annotators (pure functions, no database)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

from mindeval.errors import MindEvalError


def balanced_assignment(
    items: Sequence[Hashable],
    annotators: Sequence[Hashable],
    k: int,
    seed: int,
    existing: dict[Hashable, set[Hashable]] | None = None,
    excluded: dict[Hashable, set[Hashable]] | None = None,
) -> list[tuple[Hashable, Hashable]]:
    """New (item, annotator) pairs so that every item has ``k`` distinct annotators of this group.

    ``annotators`` is the group being assigned: only their pairs in ``existing`` count
    towards ``k`` and loads, so items already rated by other people (e.g. imported raters)
    still get ``k`` ratings from the group. Annotators with the lowest current load are
    chosen first (ties broken by the seeded random generator), so loads differ by at most
    one when starting from scratch. An item never goes to an annotator in
    ``excluded[item]`` (e.g. the person who role-played it), so such an item can end up
    with fewer than ``k``.
    """
    if k < 1:
        raise MindEvalError("k must be at least 1", field="k")
    if len(annotators) < k:
        raise MindEvalError(
            f"each item needs {k} ratings from the chosen annotators but only {len(annotators)} "
            f"{'was' if len(annotators) == 1 else 'were'} chosen", field="k"
        )
    group = set(annotators)
    existing = {item: set(who) & group for item, who in (existing or {}).items()}
    excluded = excluded or {}
    rng = random.Random(seed)
    load = {a: 0 for a in annotators}
    for who in existing.values():
        for a in who:
            if a in load:
                load[a] += 1
    order = list(items)
    rng.shuffle(order)
    pairs: list[tuple[Hashable, Hashable]] = []
    for item in order:
        have = set(existing.get(item, set()))
        need = k - len(have)
        if need <= 0:
            continue
        candidates = [a for a in annotators if a not in have and a not in excluded.get(item, ())]
        rng.shuffle(candidates)
        candidates.sort(key=lambda a: load[a])  # stable: random among equal loads
        for a in candidates[:need]:
            pairs.append((item, a))
            load[a] += 1
    return pairs


def annotator_order(items: Sequence[Hashable], seed: int, annotator_key: str) -> list[Hashable]:
    """A per-annotator random order of ``items``, reproducible from (seed, annotator)."""
    out = list(items)
    random.Random(f"{seed}:{annotator_key}").shuffle(out)
    return out
