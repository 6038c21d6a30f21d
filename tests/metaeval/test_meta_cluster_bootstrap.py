"""Multi-session studies in `metaeval compare`: the bootstrap draws a member's sessions together.

The oracle below is written from the definition, not from the implementation: with the panel's one
seeded generator, draw whole conversations (member × system, every session of it) for the
interaction statistics and whole members (every session and system) for MIPSA, expand the sample
and compute the statistic on it; the percentile interval of those values is the interval.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from metaeval.matrices import Panel, build_matrix
from metaeval.sources import RaterScores
from metaeval.statistics import MetricOptions
from metaeval.unit_agreement import conversation_draws
from metaeval.unit_compare import conversation_chains
from metaeval.units import UnitRating
from mindeval.stats import resampled
from mindeval.stats.agreement import PairIndex
from mindeval.stats.seeding import rng_for

SYSTEMS = ("sys/a", "sys/b", "sys/c")


def rater(label: str, scores: dict[tuple[str, str], float]) -> RaterScores:
    rows = [{"profile_id": u, "system": s, "interaction_id": f"{s}:{u}", "run": 0, "axis": "average", "score": v}
            for (u, s), v in scores.items()]
    return RaterScores(label=label, kind="human", source="test", frame=pd.DataFrame(rows))


def study(members: int, sessions: int, seed: int = 0) -> tuple[RaterScores, RaterScores]:
    """Two humans' scores of ``members`` × ``sessions`` × 3 systems; a member's sessions alike
    (a session k > 1 of member M is the unit ``M#s<k>``)."""
    rng = np.random.default_rng(seed)
    a, b = {}, {}
    for m in range(members):
        base = rng.integers(1, 7, size=len(SYSTEMS))
        other = np.clip(base + rng.integers(-1, 2, size=len(SYSTEMS)), 1, 6)
        for k in range(1, sessions + 1):
            unit = f"m{m}" if k == 1 else f"m{m}#s{k}"
            for s, v, w in zip(SYSTEMS, base, other, strict=True):
                a[(unit, s)] = float(v)
                b[(unit, s)] = float(w)
    return rater("H1", a), rater("H2", b)


def oracle(keys: list[tuple[str, str]], x: np.ndarray, y: np.ndarray, resamples: int, seed: int) -> dict:
    """τ-b and MIPSA intervals by drawing members' conversations / members whole (same generator)."""
    rng = rng_for(seed, "metaeval", "bootstrap")
    member = [u.split("#s")[0] for u, _ in keys]
    chains = list(dict.fromkeys(zip(member, (s for _, s in keys), strict=True)))
    of_chain = [[i for i, k in enumerate(zip(member, (s for _, s in keys), strict=True)) if k == c] for c in chains]
    members = list(dict.fromkeys(member))
    units = list(dict.fromkeys(u for u, _ in keys))
    share = {}
    for u in units:  # MIPSA's summand: the share of system pairs both order alike (sign rule)
        idx = [i for i, k in enumerate(keys) if k[0] == u]
        pairs = list(itertools.combinations(idx, 2))
        share[u] = np.mean([np.sign(x[i] - x[j]) == np.sign(y[i] - y[j]) for i, j in pairs])
    chain_draw = rng.integers(0, len(chains), size=(resamples, len(chains)))
    member_draw = rng.integers(0, len(members), size=(resamples, len(members)))
    taus, mipsas = [], []
    for r in range(resamples):
        idx = [i for c in chain_draw[r] for i in of_chain[c]]
        taus.append(kendalltau(x[idx], y[idx]).statistic)
        drawn = [u for m in member_draw[r] for u in units if u.split("#s")[0] == members[m]]
        mipsas.append(np.mean([share[u] for u in drawn]))
    return {"tau": np.percentile(taus, [2.5, 97.5]), "mipsa": np.percentile(mipsas, [2.5, 97.5])}


def test_two_session_intervals_draw_members_whole():
    h1, h2 = study(members=12, sessions=2)
    panel = Panel([h1, h2], [])
    cell = build_matrix(panel, "average", MetricOptions(resamples=300, seed=7)).cell("H1", "H2")
    x, y = panel.matrix_of(h1, "average")[0], panel.matrix_of(h2, "average")[0]
    want = oracle(panel.keys, x, y, 300, 7)
    assert cell.ci["tau"] == pytest.approx(list(want["tau"]), abs=1e-9)
    assert cell.ci["mipsa"] == pytest.approx(list(want["mipsa"]), abs=1e-9)


def test_a_copied_session_does_not_narrow_the_interval():
    """A second session that repeats the first adds no information: drawn with its member, the MIPSA
    interval is the one-session interval (the same draw of members)."""
    one = Panel(list(study(members=15, sessions=1)), [])
    two = Panel(list(study(members=15, sessions=2)), [])
    opts = MetricOptions(resamples=400, seed=3)
    ci1 = build_matrix(one, "average", opts).cell("H1", "H2").ci
    ci2 = build_matrix(two, "average", opts).cell("H1", "H2").ci
    assert ci1["mipsa"] == pytest.approx(ci2["mipsa"], abs=1e-12)


def test_one_session_per_member_is_todays_draw():
    h1, h2 = study(members=10, sessions=1)
    panel = Panel([h1, h2], [])
    assert panel.clusters() is None
    pairs = PairIndex([k[0] for k in panel.keys])
    plain = resampled.Resampler(pairs, pairs.item_profile, 50, rng_for(1, "x"))
    ident = resampled.Resampler(pairs, pairs.item_profile, 50, rng_for(1, "x"), clusters=resampled.Clusters(
        chains=np.arange(pairs.n_items), members=np.arange(pairs.n_profiles)))
    for got, want in ((ident.items, plain.items), (ident.profiles, plain.profiles),
                      (ident.profile_items, plain.profile_items)):
        assert np.array_equal(got, want)


def test_unit_report_draws_a_members_sessions_together():
    ids = ["run-000-ana", "run-000-ana-s2", "run-001-bo", "run-001-bo-s2", "run-002-cy"]
    ratings = [UnitRating(interaction_id=i, rater="judge", profile_id=i.split("-")[2]) for i in ids]
    chains = conversation_chains(ids, ratings)
    assert chains is not None and chains.tolist() == [0, 0, 1, 1, 2]
    assert conversation_chains(ids, []) is None  # no profile id known: each conversation its own

    class Field:
        clusters = np.arange(len(ids))

    draws = conversation_draws([Field()], 40, 5, chains)
    per_chain = np.random.default_rng(5).integers(0, 3, size=(40, 3))
    want = np.stack([np.bincount(row, minlength=3) for row in per_chain])[:, [0, 0, 1, 1, 2]]
    assert np.array_equal(draws, want)
