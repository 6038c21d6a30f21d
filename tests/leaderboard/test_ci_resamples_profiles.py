"""The leaderboard's intervals resample what its header says: profiles (a profile's conversations
averaged first), not interactions. Oracle: a system whose every profile has two conversations with
equal scores (one per patient model, pooled into one row) has exactly the interval of the same system
with one conversation per profile; resampling interactions would have drawn 24 conversations instead
of 12 profiles and narrowed it."""

from __future__ import annotations

from leaderboard_rundirs import write_run

from mindeval.leaderboard import StatsSettings, build_leaderboard
from mindeval.leaderboard.render import settings_line


def test_the_interval_resamples_profiles_and_the_header_says_so(tmp_path):
    ids = [f"p{i:02d}" for i in range(12)]
    scores = {p: [(i % 6) + 1, (i * 5) % 6 + 1, 4, (i * 7) % 6 + 1, 3] for i, p in enumerate(ids)}
    single = write_run(tmp_path / "one", "vendor/model-a", scores, profile_ids=ids)
    pooled = [write_run(tmp_path / f"two-{k}", "vendor/model-a", scores, profile_ids=ids, patient=patient,
                        run_id=f"run-two-{k}") for k, patient in enumerate(("fake/echo", "fake/slow"))]
    settings = StatsSettings(resamples=2000, seed=3)
    one = build_leaderboard([single], settings)
    two = build_leaderboard(pooled, settings)
    a, b = one.table.systems[0], two.table.systems[0]
    assert (a.n, b.n) == (12, 12) and [p.patient_models for p in two.pooled] == [["fake/echo", "fake/slow"]]
    for crit, r in a.results.items():
        assert (b.results[crit].mean, b.results[crit].ci_low, b.results[crit].ci_high) == (r.mean, r.ci_low, r.ci_high)
    line = settings_line(two)
    assert "percentile bootstrap over profiles" in line and "interactions" not in line
