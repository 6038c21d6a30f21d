"""Fig-3 style breakdowns: condition means across systems, with the best and worst system.

A *condition* is a subset of the scored interactions: all of them, severe or
non-severe patients, or the runs sharing one value of a run attribute (interaction
length, clinician prompt, …) when the loaded runs differ in it. For each condition and
criterion the report gives the mean over systems of each system's mean (the bar of
Fig. 3) and the best and worst system (the triangles); ties go to the first name in
alphabetical order. Each system's average in a condition carries its 95% percentile bootstrap
interval over that condition's interactions (``ci_per_system``; the figures draw it, the JSON
leaves it out), with the table's resamples and seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, Field

from ..scoring import InteractionScore, profile_means
from ..stats import bootstrap_mean_ci, rng_for
from ..stats.proportion import CategoricalReport, level_shares
from .loading import RunData, criteria_of
from .table import StatsSettings

AVERAGE = "average"


class Extreme(BaseModel):
    system: str
    score: float


class Condition(BaseModel):
    breakdown: str  # "patients", "turns", "clinician prompt", ...
    condition: str  # "all", "severe", "non-severe", "20", ...
    n_systems: int
    n_interactions: int
    mean: dict[str, float]
    best: dict[str, Extreme]
    worst: dict[str, Extreme]
    per_system: dict[str, dict[str, float]]
    n_per_system: dict[str, int]
    # system -> (low, high) of its average's 95% interval (NaN when not every average is finite)
    ci_per_system: dict[str, tuple[float, float]] = Field(default_factory=dict, exclude=True)


class LabelPanel(BaseModel):
    """One profile label the target declares, by value: each value's condition (scores, for
    every scale) and, for categorical scales, each system's level shares on that value."""

    label: str
    values: list[str]  # as declared
    conditions: list[Condition]  # values with a scored interaction, in declared order
    levels: dict[str, dict[str, CategoricalReport]] = {}  # value -> system -> shares (categorical)


def _system_means(rows: list[InteractionScore]) -> dict[str, float]:
    """A system's means in a condition: the scorer's, over profiles (:func:`mindeval.scoring.profile_means`)."""
    return profile_means(rows, tuple(rows[0].scores))


def _average_ci(rows: list[InteractionScore], settings: StatsSettings, *keys: str) -> tuple[float, float]:
    if AVERAGE not in rows[0].scores:
        return math.nan, math.nan
    values = np.array([r.scores[AVERAGE] for r in rows], dtype=float)
    if not np.all(np.isfinite(values)):
        return math.nan, math.nan
    _, low, high = bootstrap_mean_ci(values, resamples=settings.resamples, level=settings.level,
                                     rng=rng_for(settings.seed, "breakdown", *keys))
    return float(low[0]), float(high[0])


def _condition(
    breakdown: str, name: str, labelled: list[tuple[str, RunData]], keep: Callable[[InteractionScore], bool],
    settings: StatsSettings | None = None,
) -> Condition | None:
    settings = settings or StatsSettings()
    per_system: dict[str, dict[str, float]] = {}
    n_per: dict[str, int] = {}
    cis: dict[str, tuple[float, float]] = {}
    for label, run in labelled:
        rows = [r for r in run.scores if keep(r)]
        if rows:
            per_system[label] = _system_means(rows)
            n_per[label] = len(rows)
            cis[label] = _average_ci(rows, settings, breakdown, name, label)
    if not per_system:
        return None
    mean, best, worst = {}, {}, {}
    for c in criteria_of(labelled[0][1].target):
        vals = sorted(((v[c], s) for s, v in per_system.items() if not math.isnan(v[c])), key=lambda t: t[1])
        if not vals:
            mean[c], best[c], worst[c] = math.nan, Extreme(system="", score=math.nan), Extreme(system="", score=math.nan)
            continue
        mean[c] = sum(v for v, _ in vals) / len(vals)
        b = max(vals, key=lambda t: t[0])  # first maximum in name order
        w = min(vals, key=lambda t: t[0])
        best[c] = Extreme(system=b[1], score=b[0])
        worst[c] = Extreme(system=w[1], score=w[0])
    return Condition(breakdown=breakdown, condition=name, n_systems=len(per_system),
                     n_interactions=sum(n_per.values()), mean=mean, best=best, worst=worst,
                     per_system=per_system, n_per_system=n_per, ci_per_system=cis)


# Run attributes that define across-run conditions, with how to read them.
RUN_ATTRIBUTES: dict[str, Callable[[RunData], str]] = {
    "turns": lambda r: str(r.turns),
    "clinician prompt": lambda r: r.clinician_prompt,
    "judge prompt": lambda r: r.setup.judge_prompt,
    "judge model": lambda r: r.setup.judge_model,
    "patient model": lambda r: r.setup.patient_model,
}


def _sort_key(value: str) -> tuple[int, float, str]:
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, math.inf, value)


def compute_breakdowns(labelled: list[tuple[str, RunData]], by: Sequence[str] = (),
                       settings: StatsSettings | None = None) -> tuple[list[Condition], list[str]]:
    """All conditions that have data; warnings name the ones that are empty. ``by``: profile
    label fields of the target (``--by LABEL``), one condition per declared value."""
    out: list[Condition] = []
    warnings: list[str] = []
    for name, keep in (("all", lambda r: True), ("severe", lambda r: r.severe),
                       ("non-severe", lambda r: not r.severe)):
        cond = _condition("patients", name, labelled, keep, settings)
        if cond is None:
            warnings.append(f"no scored interaction with {name} patients: that breakdown is empty")
        else:
            out.append(cond)
    for attr, read in RUN_ATTRIBUTES.items():
        values = sorted({read(r) for _, r in labelled}, key=_sort_key)
        if len(values) < 2:
            continue
        for v in values:
            subset = [(lab, r) for lab, r in labelled if read(r) == v]
            cond = _condition(attr, v, subset, lambda r: True, settings)
            if cond is not None:
                out.append(cond)
    for field in by:
        conds, empty = _label_conditions(labelled, field, settings)
        out += conds
        warnings += [f"no scored interaction with {field} = {value}: that breakdown is empty" for value in empty]
    return out, warnings


def _has_label(field: str, value: str, tags: dict[str, dict[str, str]]) -> Callable[[InteractionScore], bool]:
    return lambda r: tags.get(r.profile_id, {}).get(field) == value


def _label_conditions(labelled: list[tuple[str, RunData]], field: str,
                      settings: StatsSettings | None = None) -> tuple[list[Condition], list[str]]:
    """One condition per declared value of profile label ``field`` that has data; the empty values."""
    if not labelled:
        return [], []
    target = labelled[0][1].target
    out, empty = [], []
    for value in target.labels.get(field, []):
        cond = _condition(field, value, labelled, _has_label(field, value, target.profile_labels), settings)
        if cond is None:
            empty.append(value)
        else:
            out.append(cond)
    return out, empty


def label_panels(labelled: list[tuple[str, RunData]], settings: StatsSettings | None = None) -> list[LabelPanel]:
    """A panel per profile label the runs' target declares (none for MindEval)."""
    if not labelled:
        return []
    target = labelled[0][1].target
    categorical = target.scale.kind == "categorical"
    scale = [(lv.id, lv.value) for lv in target.scale.levels]
    panels = []
    for field, values in target.labels.items():
        conditions, _ = _label_conditions(labelled, field, settings)
        levels: dict[str, dict[str, CategoricalReport]] = {}
        for value in values if categorical else ():
            keep = _has_label(field, value, target.profile_labels)
            for label, run in labelled:
                rows = [r for r in run.scores if keep(r)]
                if rows:
                    levels.setdefault(value, {})[label] = level_shares(
                        ((r.interaction_id, {ax: None if math.isnan(v) else v for ax, v in r.worst.items()})
                         for r in rows), target.axes, scale)
        panels.append(LabelPanel(label=field, values=list(values), conditions=conditions, levels=levels))
    return panels
