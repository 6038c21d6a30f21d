"""Human scale of multi-session studies: the unit is a session, the PPI standard error clustered by member
(docs/leaderboard.md, "Human scale"; mindeval.stats.ppi)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from mindeval.leaderboard.human_scale import human_scale
from mindeval.leaderboard.loading import InteractionScore
from mindeval.stats.ppi import Groups, ppi_mean
from mindeval.study_data import HumanScore, HumanScores

# A small table: member, rated?, human y, judge f (sessions A1, A2, ... of members A-D).
TABLE = [("A", True, 4, 3), ("A", True, 5, 4), ("B", True, 2, 2), ("B", False, None, 3),
         ("C", True, 3, 3), ("C", True, 4, 5), ("D", False, None, 2), ("D", False, None, 3)]


def parts():
    rated = [r for r in TABLE if r[1]]
    rest = [r for r in TABLE if not r[1]]
    return ([r[2] for r in rated], [r[3] for r in rated], [r[3] for r in rest],
            Groups(rated=[r[0] for r in rated], unrated=[r[0] for r in rest]))


def test_clustered_ppi_by_hand():
    y, f, f_all, groups = parts()
    # λ = 1. ȳ = 18/5, f̄ rated = 17/5, f̄ unrated = 8/3: estimate 8/3 + 18/5 - 17/5 = 2.8667.
    # Members' contributions ψ_g = c_U Σ_unrated (f - 8/3)/3 + c_L Σ_rated ((y - f) - 1/5)/5 with
    # c_L² = 3/2 (3 rated members), c_U² = 2 (2 members with unrated sessions):
    c_l, c_u = math.sqrt(3 / 2), math.sqrt(2)
    psi = [c_l * (0.8 + 0.8) / 5, c_u * (1 / 3) / 3 + c_l * (-0.2) / 5, c_l * (-0.2 - 1.2) / 5, c_u * (-2 / 3 + 1 / 3) / 3]
    se = math.sqrt(sum(p * p for p in psi))
    half = stats.t.ppf(0.975, 3 - 1) * se  # t with (rated members - 1) degrees of freedom
    got = ppi_mean(y, f, f_all, lam=1.0, groups=groups)
    assert got.estimate == pytest.approx(8 / 3 + 1 / 5, abs=1e-12)
    assert (got.ci_low, got.ci_high) == pytest.approx((got.estimate - half, got.estimate + half), abs=1e-12)
    # λ = 0, the humans alone: ψ_g = c_L Σ_rated (y - 18/5)/5 per member.
    psi0 = [c_l * (0.4 + 1.4) / 5, c_l * (-1.6) / 5, c_l * (-0.6 + 0.4) / 5, 0.0]
    half0 = stats.t.ppf(0.975, 2) * math.sqrt(sum(p * p for p in psi0))
    got0 = ppi_mean(y, f, f_all, lam=0.0, groups=groups)
    assert (got0.estimate, got0.ci_high - got0.estimate) == pytest.approx((18 / 5, half0), abs=1e-12)


def test_tuned_weight_minimises_the_clustered_variance():
    y, f, f_all, groups = parts()
    tuned = ppi_mean(y, f, f_all, groups=groups)
    widths = [(lam, ppi_mean(y, f, f_all, lam=lam, groups=groups)) for lam in np.linspace(0, 1, 101)]
    best = min(widths, key=lambda w: w[1].ci_high - w[1].ci_low)
    assert 0 <= tuned.lam <= 1 and abs(tuned.lam - best[0]) <= 0.01
    assert tuned.ci_high - tuned.ci_low <= best[1].ci_high - best[1].ci_low + 1e-12


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_one_session_per_member_is_plain_ppi(lam):
    rng = np.random.default_rng(4)
    y, f, f_all = rng.normal(3, 1, 15), rng.normal(3, 1, 15), rng.normal(3, 1, 40)
    single = Groups(rated=[f"m{i}" for i in range(15)], unrated=[f"u{i}" for i in range(40)])
    plain, clustered = ppi_mean(y, f, f_all, lam=lam), ppi_mean(y, f, f_all, lam=lam, groups=single)
    assert (clustered.estimate, clustered.ci_low, clustered.ci_high) == pytest.approx(
        (plain.estimate, plain.ci_low, plain.ci_high), abs=1e-12)


def test_clustered_interval_covers_where_the_session_one_undercovers():
    """Members' sessions strongly alike: treating sessions as independent undercovers, the clustered
    interval keeps about its level (400 studies of 12 rated of 30 members × 3 sessions)."""
    rng = np.random.default_rng(0)
    hit_cl = hit_iid = 0
    trials = 400
    for _ in range(trials):
        member = rng.normal(0, 1, 30)
        human = member[:, None] + rng.normal(0, 0.3, (30, 3))
        judge = human + rng.normal(0, 0.8, (30, 3))
        names = np.repeat(np.arange(30), 3).astype(str)
        rated = np.repeat(np.arange(30) < 12, 3)
        y, f, f_all = human.ravel()[rated], judge.ravel()[rated], judge.ravel()[~rated]
        g = Groups(rated=names[rated], unrated=names[~rated])
        cl, iid = ppi_mean(y, f, f_all, groups=g), ppi_mean(y, f, f_all)
        hit_cl += cl.ci_low <= 0 <= cl.ci_high
        hit_iid += iid.ci_low <= 0 <= iid.ci_high
    assert hit_cl / trials >= 0.92 and hit_iid / trials < 0.85


def test_human_scale_of_a_multi_session_run():
    """Two sessions per member: humans' ratings of sessions (``P#s2``) match the judge's sessions and the
    interval is clustered by member."""
    members = [f"p{i:02d}" for i in range(12)]
    rng = np.random.default_rng(1)
    judge, human = {}, {}
    for m in members:
        for k in (1, 2):
            unit = m if k == 1 else f"{m}#s2"
            judge[unit] = float(rng.integers(1, 7))
            human[unit] = judge[unit] + 1.0
    scores = [InteractionScore(interaction_id=f"run-{m}" + ("" if k == 1 else "-s2"), profile_id=m, severe=False,
                               n_samples=1, scores={"average": judge[m if k == 1 else f"{m}#s2"]})
              for m in members for k in (1, 2)]
    rated = [u for u in judge if u.split("#")[0] in members[:8]]  # 16 sessions of 8 members
    humans = HumanScores(source="h.csv", rows=[HumanScore(profile_id=u, system="vendor/a",
                                                          scores={"average": human[u]}, raters=2) for u in rated])
    table = SimpleNamespace(systems=[SimpleNamespace(label="A", results={"average": SimpleNamespace(mean=3.0)})],
                            criteria=["average"])
    runs = {"A": SimpleNamespace(clinician_model="vendor/a", scores=scores)}
    [h], _ = human_scale(table, runs, humans)
    assert (h.n_rated, h.n_rated_members, h.n_scored) == (16, 8, 24)
    y = [human[u] for u in rated]
    f = [judge[u] for u in rated]
    f_all = [judge[u] for u in judge if u not in rated]
    groups = Groups(rated=[u.split("#")[0] for u in rated], unrated=[u.split("#")[0] for u in judge if u not in rated])
    want = ppi_mean(y, f, f_all, groups=groups)
    assert h.ppi == want and h.humans == ppi_mean(y, f, f_all, lam=0.0, groups=groups)
