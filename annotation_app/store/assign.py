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


def stratified_sample(items: Sequence[Hashable], system: dict[Hashable, str], n: int, seed: int,
                      kept: set[Hashable] = frozenset()) -> tuple[list[Hashable], dict[str, int]]:
    """``n`` items per system drawn uniformly at random (seeded by ``seed`` and the system's name), for
    human ratings that are a random sample of each system's conversations (``leaderboard --humans``).

    Items in ``kept`` (already assigned in an earlier draw) count towards their system's ``n``, so a second
    call tops up rather than redraws. Returns the sample (in ``items`` order) and its size per system
    (a system with fewer than ``n`` items gives all it has)."""
    if n < 1:
        raise MindEvalError("--per-system must be at least 1", field="per_system")
    chosen: set[Hashable] = set()
    sizes: dict[str, int] = {}
    for name in sorted({system[i] for i in items}):
        pool = [i for i in items if system[i] == name]
        have = [i for i in pool if i in kept]
        rest = [i for i in pool if i not in kept]
        extra = random.Random(f"{seed}:{name}").sample(rest, max(0, min(n - len(have), len(rest))))
        chosen.update(have + extra)
        sizes[name] = len(have) + len(extra)
    return [i for i in items if i in chosen], sizes


def mix_gold(real: Sequence[Hashable], gold: Sequence[Hashable], rate: float, qualify: int, seed: int,
             annotator_key: str) -> list[tuple[Hashable, str]]:
    """One annotator's new queue: ``(item, kind)`` with kind ``qualify``, ``gold`` or ``real``.

    ``gold`` are the study's gold items this annotator has not had yet (seeded shuffle).
    The first ``qualify`` of them come first (the qualification); of the rest, as many as make
    a share ``rate`` of the new queue gold (``round(len(real) * rate / (1 - rate))``, at most
    what is left) are shuffled in among ``real``, whose own order is kept when there is no gold.
    """
    if not 0 <= rate < 1:
        raise MindEvalError("the gold rate is a share from 0 up to (not including) 1", field="gold_rate")
    rng = random.Random(f"{seed}:{annotator_key}:gold")
    pool = list(gold)
    rng.shuffle(pool)
    head = [(g, "qualify") for g in pool[:max(qualify, 0)]]
    pool = pool[len(head):]
    n_gold = min(len(pool), round(len(real) * rate / (1 - rate))) if real else 0
    body = [(r, "real") for r in real]
    for g in pool[:n_gold]:
        body.insert(rng.randint(0, len(body)), (g, "gold"))
    return head + body
