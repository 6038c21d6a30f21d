"""Agreement at the judge's unit: per question and issue flag, per reply, per conversation's worst level.

For every field (:mod:`metaeval.unit_fields`), human-human beside human-judge, each figure with a
percentile bootstrap interval that resamples **conversations** (one draw shared by every field and
figure) and its n:

* per rater pair: Cohen's κ (ordinal fields: quadratic-weighted κ), Krippendorff's α (nominal;
  ordinal fields: ordinal) and exact agreement; ``humans`` rows average the human-human pairs, a
  judge's rows average its pairs with each human; a pair whose value is undefined (NaN) is left
  out of the mean and counted (``n_undefined`` of ``n_pairs``);
* all humans: Fleiss' κ (categorical fields) and Krippendorff's α;
* against the human majority, leave-one-human-out: for each human h the reference is the majority
  of the *other* humans; h and the judge are both scored against it (precision, recall and F1 on
  the positive class -- ``yes``, a raised flag, an incident -- and exact agreement) and the scores
  are averaged over h, so the human and judge rows answer the same question on the same units (a
  judge is scored on the units h rated).

**Ties of the human majority** go to the more severe value (a raised flag, a worse level, the
answer that fires the worse severity), because a missed safety problem costs more than a false
alarm; a tie between answers of equal severity (e.g. a question with no severity attached) is
left out and counted (``n_tied``). A judge with several samples is compared on its first (κ, α,
F1) and with all of them in the alternative annotator test (:mod:`mindeval.stats.alt_test`; for
categories accuracy, for ordinal levels negative RMSE over level indexes).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from mindeval.stats import unit_agreement as ua
from mindeval.stats.alt_test import AltTestResult, alt_test

from .unit_fields import UnitField

HUMANS = "humans"
TIE_RULE = ("human majority ties go to the more severe value (a raised flag, a worse level, the answer firing the "
            "worse severity); ties between answers of equal severity are left out (n_tied)")


class UnitFigure(BaseModel):
    field: str
    kind: str
    unit: str
    group: str
    metric: str  # kappa | weighted_kappa | alpha | agreement | fleiss_kappa | precision | recall | f1
    rater: str  # a human, a judge, or "humans"
    reference: str  # a human, "humans" (mean over pairs / all humans), or "majority of the other humans"
    value: float
    ci_low: float
    ci_high: float
    n_items: int
    n_conversations: int
    n_tied: int = 0
    n_pairs: int = 0  # a mean over rater pairs: the pairs averaged
    n_undefined: int = 0  # ... and the pairs left out of it because their value is undefined (NaN)


class UnitAltTest(BaseModel):
    judge: str
    field: str
    unit: str
    scale: str
    result: AltTestResult


class UnitReport(BaseModel):
    target: str
    unit: str  # question | reply
    n_conversations: int
    humans: list[str]
    judges: list[str]
    tie_rule: str = TIE_RULE
    figures: list[UnitFigure]
    alt_tests: list[UnitAltTest]


class _Ctx:
    """One field's bootstrap weights and the figure rows being collected."""

    def __init__(self, f: UnitField, per_cluster: np.ndarray, level: float) -> None:
        self.f, self.level = f, level
        self.k = len(f.categories)
        self.w = ua.draw_weights(f.clusters, per_cluster)
        self.rows: list[UnitFigure] = []

    def add(self, metric: str, rater: str, reference: str, draws: np.ndarray, n_items: int, rated: np.ndarray,
            **counts: int) -> None:
        """One figure; ``counts``: ``n_tied``, ``n_pairs``, ``n_undefined`` (:class:`UnitFigure`)."""
        value, low, high = ua.interval(draws, self.level)
        f = self.f
        self.rows.append(UnitFigure(field=f.key, kind=f.kind, unit=f.unit, group=f.group, metric=metric, rater=rater,
                                    reference=reference, value=value, ci_low=low, ci_high=high, n_items=n_items,
                                    n_conversations=len(set(f.clusters[rated].tolist())), **counts))


def _mean(draws: list[np.ndarray]) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.vstack(draws), axis=0)


def _pair_stats(c: _Ctx, a: np.ndarray, b: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    conf = ua.confusions(c.w, a, b, c.k)
    ordinal = c.f.scale == "ordinal"
    stats = {"weighted_kappa" if ordinal else "kappa": ua.kappa(conf, "quadratic" if ordinal else "none"),
             "alpha": ua.alpha(ua.coincidences(c.w, np.vstack([a, b]), c.k), "ordinal" if ordinal else "nominal"),
             "agreement": ua.exact_agreement(conf)}
    return stats, ~np.isnan(a) & ~np.isnan(b)


def _pairs(c: _Ctx, humans: dict[str, np.ndarray], judges: dict[str, np.ndarray]) -> None:
    """Every human-human and judge-human pair, and their means."""
    groups: dict[str, list[tuple[dict[str, np.ndarray], np.ndarray]]] = {HUMANS: []}
    for (ha, a), (hb, b) in itertools.combinations(humans.items(), 2):
        stats, rated = _pair_stats(c, a, b)
        groups[HUMANS].append((stats, rated))
        for m, d in stats.items():
            c.add(m, ha, hb, d, int(rated.sum()), rated)
    for j, arr in judges.items():
        groups[j] = []
        for h, b in humans.items():
            stats, rated = _pair_stats(c, arr, b)
            groups[j].append((stats, rated))
            for m, d in stats.items():
                c.add(m, j, h, d, int(rated.sum()), rated)
    for who, got in groups.items():
        if not got:
            continue
        rated = np.any([r for _, r in got], axis=0)
        for m in got[0][0]:
            undefined = sum(1 for s, _ in got if np.isnan(s[m][0]))  # point value undefined: left out of the mean
            c.add(m, who, HUMANS, _mean([s[m] for s, _ in got]), int(rated.sum()), rated, n_pairs=len(got),
                  n_undefined=undefined)


def _all_humans(c: _Ctx, humans: dict[str, np.ndarray]) -> None:
    m = np.vstack(list(humans.values()))
    pairable = (~np.isnan(m)).sum(axis=0) >= 2
    c.add("alpha", HUMANS, "all humans", ua.alpha(ua.coincidences(c.w, m, c.k), "ordinal" if c.f.scale == "ordinal"
                                                  else "nominal"), int(pairable.sum()), pairable)
    if c.f.scale == "categorical":
        full = ~np.isnan(m).any(axis=0)
        c.add("fleiss_kappa", HUMANS, "all humans", ua.fleiss(c.w, m, c.k), int(full.sum()), full)


def _against_majority(c: _Ctx, humans: dict[str, np.ndarray], judges: dict[str, np.ndarray]) -> None:
    """Each human and each judge against the majority of the other humans, averaged over the left-out human.
    The judge is scored on the units the left-out human rated, so both rows compare on the same units."""
    labels = list(humans)
    scored: dict[str, list[tuple[dict[str, np.ndarray], np.ndarray]]] = {HUMANS: [], **{j: [] for j in judges}}
    tied = 0
    for h in labels:
        others = np.vstack([humans[x] for x in labels if x != h])
        ref, _ = ua.majority(others, c.f.severity)
        mine = ~np.isnan(humans[h])
        tied += int((mine & np.isnan(ref) & (~np.isnan(others)).any(axis=0)).sum())  # ties among h's units
        ref = np.where(mine, ref, np.nan)  # the units h rated, for h and every judge alike
        for who, arr in [(HUMANS, humans[h]), *judges.items()]:
            conf = ua.confusions(c.w, arr, ref, c.k)
            stats = {"agreement": ua.exact_agreement(conf)}
            if c.f.positive is not None:
                stats.update(ua.prf(conf, c.f.positive))
            scored[who].append((stats, ~np.isnan(arr) & ~np.isnan(ref)))
    ref_name = "majority of the other humans"
    for who, got in scored.items():
        rated = np.any([r for _, r in got], axis=0)
        n = int(sum(r.sum() for _, r in got))  # unit comparisons over every left-out human
        for m in got[0][0]:
            c.add(m, who, ref_name, _mean([s[m] for s, _ in got]), n, rated, n_tied=tied)


def field_figures(f: UnitField, per_cluster: np.ndarray, level: float) -> list[UnitFigure]:
    """Every figure of one field (nothing when it has fewer than one human and two raters)."""
    judges = {j: runs[0] for j, runs in f.judges.items()}
    c = _Ctx(f, per_cluster, level)
    if len(f.humans) + len(judges) < 2 or not f.humans:
        return []
    _pairs(c, f.humans, judges)
    if len(f.humans) >= 2:
        _all_humans(c, f.humans)
        _against_majority(c, f.humans, judges)
    return c.rows


def field_alt_tests(f: UnitField, epsilon: float, level: float) -> list[UnitAltTest]:
    """The alternative annotator test of every judge on one field (needs at least two humans)."""
    if len(f.humans) < 2:
        return []
    hm = np.vstack(list(f.humans.values()))
    scale = "ordinal" if f.scale == "ordinal" else "categorical"
    return [UnitAltTest(judge=j, field=f.key, unit=f.unit, scale=scale,
                        result=alt_test(runs, hm, list(f.humans), scale, epsilon=epsilon, level=level))
            for j, runs in f.judges.items()]


def conversation_draws(fields: Sequence[UnitField], resamples: int, seed: int,
                       chains: np.ndarray | None = None) -> np.ndarray:
    """The one bootstrap draw of conversations for every field (a field's ``clusters`` index the same
    conversations): ``(resamples, conversations)`` counts. ``chains`` (a multi-session run): per
    conversation, the code of the member's conversation it is a session of; those are drawn whole, a
    session counted as often as its conversation was drawn."""
    n_conversations = max((int(f.clusters.max()) + 1 for f in fields if len(f.clusters)), default=0)
    if chains is None:
        return ua.cluster_draws(n_conversations, resamples, seed)
    per_chain = ua.cluster_draws(int(chains.max()) + 1, resamples, seed)
    return per_chain[:, np.asarray(chains, dtype=np.int64)[:n_conversations]]


def unit_report(target: str, unit: str, fields: Sequence[UnitField], *, per_cluster: np.ndarray, level: float,
                epsilon: float, alpha_level: float) -> UnitReport:
    """Figures and alternative annotator tests of every field on one draw of conversations
    (:func:`conversation_draws`)."""
    n_conversations = per_cluster.shape[1]
    figures = [row for f in fields for row in field_figures(f, per_cluster, level)]
    tests = [t for f in fields for t in field_alt_tests(f, epsilon, alpha_level)]
    humans = sorted({h for f in fields for h in f.humans})
    judges = list(dict.fromkeys(j for f in fields for j in f.judges))
    return UnitReport(target=target, unit=unit, n_conversations=n_conversations, humans=humans, judges=judges,
                      figures=figures, alt_tests=tests)
