"""A target's declared headline score on the leaderboard: value, interval and paired tests.

Each system's rated units are its conversations' dimensions (a not-relevant one is ``None``); a
conversation's level on a dimension is its worst over the judge samples. The score is the
target's formula (``config.json`` ``target.score``, :mod:`mindeval.formula`) over the quantities
of :func:`mindeval.stats.reply_scales.scale_report`, its 95% interval resamples profiles whole
(all of a profile's conversations together: repeats and pooled patient models), and each pair of
systems gets a paired permutation test over the profiles both have that swaps a profile's
conversations between them as a block.
"""

from __future__ import annotations

import itertools
import math

from pydantic import BaseModel

from ..records import TargetInfo
from ..scoring import RunScore, declared_score, formula_of, named_scores, ratings, scale_spec
from ..stats import rng_for
from ..stats.reply_scales import paired_score_test
from ..stats.scale_spec import Rating
from .loading import RunData


class SystemScoreValue(BaseModel):
    system: str
    value: float | None  # None: undefined (e.g. a division by zero)
    ci_low: float | None
    ci_high: float | None
    why: str | None = None  # why the value is undefined (mindeval.formula.Formula.why_undefined)


class ScorePair(BaseModel):
    a: str
    b: str
    n_shared: int
    diff: float | None  # score(a) - score(b)
    p_value: float | None
    significant: bool


class HeadlineScore(BaseModel):
    label: str
    formula: str
    higher_is_better: bool
    systems: list[SystemScoreValue]
    pairs: list[ScorePair]

    def of(self, system: str) -> SystemScoreValue:
        return next(s for s in self.systems if s.system == system)


def run_ratings(run: RunData) -> list[Rating]:
    """The declared score's rated units of a (pooled) run, read by the scorer (:func:`mindeval.scoring.ratings`)."""
    if run.target.unit == "reply":
        return run.reply_ratings
    return ratings(RunScore(target=run.target, conversations=run.scores), where=run.path)


def headline_score(target: TargetInfo, runs: dict[str, RunData], *, resamples: int, seed: int, alpha: float,
                   sided: str, level: float) -> HeadlineScore | None:
    """The declared score of every system (``runs`` by label); ``None`` when the target declares none."""
    if target.score is None:
        return None
    spec = scale_spec(target)
    formula = formula_of(target, spec)
    ratings = {label: run_ratings(r) for label, r in runs.items()}
    criteria = {label: r.criteria for label, r in runs.items()}
    systems = []
    for label, rows in ratings.items():
        est = declared_score(target, rows, criteria[label], resamples=resamples, rng_key=label, seed=seed,
                             level=level)
        ci = est.ci95 or (None, None)
        systems.append(SystemScoreValue(system=label, value=est.value, ci_low=ci[0], ci_high=ci[1], why=est.why))
    pairs = []
    for a, b in itertools.combinations(sorted(ratings), 2):
        t = paired_score_test(spec, formula, [*ratings[a], *criteria[a]], [*ratings[b], *criteria[b]],
                              resamples=resamples,
                              rng=rng_for(seed, "score-pair", f"{a}\n{b}"), sided=sided)
        pairs.append(ScorePair(a=a, b=b, n_shared=t.n_shared, diff=t.diff, p_value=t.p_value,
                               significant=t.p_value is not None and t.p_value < alpha))
    return HeadlineScore(label=target.score.label, formula=target.score.formula,
                         higher_is_better=target.score.higher_is_better, systems=systems, pairs=pairs)


class NamedScoreValues(BaseModel):
    """One of the target's other named scores (target.yaml ``scores``, not the headline): each
    system's value and 95% interval (the same profile resamples as its headline's); no ranking, no tests."""

    name: str
    label: str
    formula: str
    higher_is_better: bool
    systems: list[SystemScoreValue]

    def of(self, system: str) -> SystemScoreValue:
        return next(s for s in self.systems if s.system == system)


def other_scores(target: TargetInfo, runs: dict[str, RunData], *, resamples: int, seed: int,
                 level: float) -> list[NamedScoreValues]:
    """Every named score but the headline, for every system (``runs`` by label)."""
    others = [sc for sc in target.scores if not sc.headline]
    if not others:
        return []
    values: dict[str, list[SystemScoreValue]] = {sc.name: [] for sc in others}
    for label, run in runs.items():
        ests = named_scores(target, run_ratings(run), run.criteria, resamples=resamples, rng_key=label, seed=seed,
                            level=level)
        for sc in others:
            est = ests[sc.name]
            ci = est.ci95 or (None, None)
            values[sc.name].append(SystemScoreValue(system=label, value=est.value, ci_low=ci[0], ci_high=ci[1],
                                                    why=est.why))
    return [NamedScoreValues(name=sc.name, label=sc.label, formula=sc.formula, higher_is_better=sc.higher_is_better,
                             systems=values[sc.name]) for sc in others]


def score_order(score: HeadlineScore, label: str) -> float:
    """Sort key of a system by the score (best first; undefined last)."""
    v = score.of(label).value
    if v is None:
        return math.inf
    return -v if score.higher_is_better else v
