"""The alternative annotator test per judge and dimension, and the one verdict per judge and dimension.

:func:`alt_tests` runs :func:`mindeval.stats.alt_test.alt_test` on every dimension (every axis and
the average score; categories by accuracy, ordinal scores by negative RMSE). :func:`judge_verdicts`
puts, per judge and dimension, the answers to the two questions side by side: *is the judge
non-inferior to the humans?* (the leave-one-out verdict with confidence, its Δ intervals; on a
categorical dimension the range check of Cohen's κ) and *may it replace a human annotator?* (the
alternative annotator test at the chosen ε).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from mindeval.stats.alt_test import DEFAULT_EPSILON, AltTestResult, alt_test

from .confidence import NI_QUESTION, ConfidentVerdict
from .matrices import RANGE_QUESTION, Matrix, MetricOptions, Panel, Scores, Verdict
from .statistics import STATISTICS

AAT_QUESTION = "may it replace a human annotator (alternative annotator test)?"


class JudgeAltTest(BaseModel):
    judge: str
    axis: str
    scale: str
    n_humans: int
    result: AltTestResult

    def line(self) -> str:
        r = self.result
        humans = ", ".join(f"{t.human} {t.p_corrected:.3f} (n={t.n_items})" for t in r.humans)
        grid = ", ".join(f"{e} {w:.2f}" for e, w in r.omega_grid.items())
        return (f"alternative annotator test {self.judge} ({self.axis}, ε = {r.epsilon:g}, level {r.level:g}): "
                f"{AAT_QUESTION} {_loud(r.status)} — ω {r.omega:.2f}, ρ {r.rho:.4f}; "
                f"per human p (Benjamini-Yekutieli): {humans}; ω over ε: {grid}")


def alt_tests(panel: Panel, matrices: dict[str, Matrix], opts: MetricOptions, *, epsilon: float = DEFAULT_EPSILON,
              level: float = 0.05) -> list[JudgeAltTest]:
    """The test for every judge on every dimension with at least two humans."""
    out: list[JudgeAltTest] = []
    for ax, m in matrices.items():
        sc = Scores(panel, ax, opts, m.categorical)
        if len(sc.human) < 2:
            continue
        scale = "categorical" if m.categorical else "ordinal"
        for j, runs in sc.judge.items():
            res = alt_test(runs, sc.all_h, list(sc.human), scale, epsilon=epsilon, level=level)
            out.append(JudgeAltTest(judge=j, axis=ax, scale=scale, n_humans=len(sc.human), result=res))
    return out


def ranking_lines(tests: Sequence[JudgeAltTest], axis: str) -> list[str]:
    """Judges ranked by the advantage probability ρ on ``axis`` (when there are two or more)."""
    rows = sorted((t for t in tests if t.axis == axis), key=lambda t: (-t.result.rho, t.judge))
    if len(rows) < 2:
        return []
    return [f"judges by advantage probability ρ ({axis}): "
            + ", ".join(f"{i}. {t.judge} {t.result.rho:.4f}" for i, t in enumerate(rows, 1))]


class JudgeVerdict(BaseModel):
    """Per judge and dimension: each question asked, its answer and its evidence."""

    judge: str
    axis: str
    answers: list[dict[str, str]]  # {"question", "answer", "evidence"}

    def line(self) -> str:
        return f"verdict {self.judge} ({self.axis}): " + " | ".join(
            f"{a['question']} {_loud(a['answer'])} ({a['evidence']})" for a in self.answers)


def _loud(answer: str) -> str:
    """The answer in capitals, its reason after a colon as written: ``NOT APPLICABLE: 2 humans ...``."""
    head, sep, rest = answer.partition(":")
    return head.upper() + sep + rest


def _ni(v: ConfidentVerdict, opts: MetricOptions) -> dict[str, str]:
    ev = "; ".join(f"Δ{STATISTICS[m.metric].short(opts)} {m.diff:+.4f} [{m.diff_ci[0]:+.4f}, {m.diff_ci[1]:+.4f}], "
                   f"margin {m.margin:g}" for m in v.metrics)
    return {"question": f"{NI_QUESTION[:-1]} ({opts.ci:.0%} confidence)?", "answer": v.outcome, "evidence": ev}


def _range(v: Verdict, opts: MetricOptions) -> dict[str, str]:
    ev = "; ".join(f"{STATISTICS[m].short(opts)} {d['value']:.4f} {d['position']} [{d['low']:.4f}, {d['high']:.4f}]"
                   for m, d in v.metrics.items())
    return {"question": RANGE_QUESTION, "answer": "yes" if v.inside else "no", "evidence": ev}


def _aat(t: JudgeAltTest) -> dict[str, str]:
    r = t.result
    return {"question": f"may it replace a human annotator (alternative annotator test, ε = {r.epsilon:g})?",
            "answer": r.status, "evidence": f"ω {r.omega:.2f} of {t.n_humans} humans, ρ {r.rho:.4f}"}


def judge_verdicts(confident: Sequence[ConfidentVerdict], ranges: Sequence[Verdict], tests: Sequence[JudgeAltTest],
                   opts: MetricOptions) -> list[JudgeVerdict]:
    """One verdict per judge and dimension: non-inferiority (ordinal; else the range check) beside the AAT."""
    keys: dict[tuple[str, str], list[dict[str, str]]] = {}
    ni = {(v.judge, v.axis): v for v in confident}
    for v in ranges:
        if (v.judge, v.axis) not in ni:
            keys.setdefault((v.judge, v.axis), []).append(_range(v, opts))
    for k, v in ni.items():
        keys.setdefault(k, []).append(_ni(v, opts))
    for t in tests:
        keys.setdefault((t.judge, t.axis), []).append(_aat(t))
    judges = {j: i for i, j in enumerate(dict.fromkeys(k[0] for k in keys))}
    axes = {ax: i for i, ax in enumerate(dict.fromkeys(t.axis for t in tests))}
    return [JudgeVerdict(judge=j, axis=ax, answers=a)
            for (j, ax), a in sorted(keys.items(), key=lambda kv: (judges[kv[0][0]], axes.get(kv[0][1], len(axes))))]
