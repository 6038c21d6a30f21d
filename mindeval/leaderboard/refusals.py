"""Each system's refusal rate: refused judge rounds over judged rounds, with its 95% interval and n.

A refused judgment is final (docs/judging.md, "A refused judgment is final"); a system whose
conversations make the judge refuse more often than the others' is flagged: its rate above
the other systems' pooled rate, by a two-sided two-proportion test (p < alpha). Every round counts, so a
sample refused twice and then judged with ``--retry-refused`` adds 3 rounds, 2 refused.
"""

from __future__ import annotations

from pydantic import BaseModel

from ..stats.proportion import two_proportion_pvalue, wilson_interval
from .loading import RunData


class SystemRefusals(BaseModel):
    """``k`` refused of ``n`` judge rounds of one system; ``p_value``: its rate against the others';
    ``flagged``: significantly above them."""

    system: str
    k: int
    n: int
    rate: float
    ci_low: float
    ci_high: float
    p_value: float | None = None  # None: a single system, or no other system's rounds
    flagged: bool = False


def refusal_rates(runs: dict[str, RunData], alpha: float = 0.05) -> list[SystemRefusals]:
    """Per system (label -> its run), the refusal rate with its Wilson 95% interval and the test
    against every other system pooled; systems without judged rounds are left out."""
    counts = {label: (r.n_refused_rounds, r.n_judge_rounds) for label, r in runs.items() if r.n_judge_rounds}
    k_all, n_all = sum(k for k, _ in counts.values()), sum(n for _, n in counts.values())
    out = []
    for label, (k, n) in counts.items():
        lo, hi = wilson_interval(k, n)
        rest_k, rest_n = k_all - k, n_all - n
        p = two_proportion_pvalue(k, n, rest_k, rest_n) if rest_n else None
        out.append(SystemRefusals(system=label, k=k, n=n, rate=k / n, ci_low=lo, ci_high=hi, p_value=p,
                                  flagged=p is not None and p < alpha and k / n > rest_k / rest_n))
    return out


def refusal_cell(r: SystemRefusals | None) -> str:
    """``25% [12%, 45%] (6/24)``, ``FLAGGED p=0.003`` appended when it differs from the others'."""
    if r is None:
        return "n/a"
    flag = f" FLAGGED p={r.p_value:.2g}" if r.flagged and r.p_value is not None else ""
    return f"{100 * r.rate:.0f}% [{100 * r.ci_low:.0f}%, {100 * r.ci_high:.0f}%] ({r.k}/{r.n}){flag}"


def any_refused(runs: dict[str, RunData]) -> bool:
    """Some system had a refused round (the column is shown then; a run without any keeps its table)."""
    return any(r.n_refused_rounds for r in runs.values())


def refusal_warnings(runs: dict[str, RunData], alpha: float = 0.05) -> list[str]:
    """One line per flagged system: its refusal rate differs from the other systems'."""
    return [f"{r.system}: the judge refused {r.k} of its {r.n} rounds ({refusal_cell(r).split(' FLAGGED')[0]}), "
            f"unlike the other systems (two-proportion test p={r.p_value:.2g} < {alpha}): its scores stand on the "
            "rounds the judge did not refuse" for r in refusal_rates(runs, alpha) if r.flagged]


def partial_warnings(runs: dict[str, RunData]) -> list[str]:
    """One line per system judged under the partial rule (``partial_judging``): its coverage and refused
    rounds, beside its figures; the refusal flag above says whether its rate differs from the others'."""
    from ..scoring.coverage import plural, share_cell

    return [f"PARTIAL JUDGING: {label}'s figures count every judged {c.unit}: {share_cell(c.k, c.n)} of the "
            f"{plural(c.unit)} asked were judged ({c.left_out} left out, {c.members_left_out} of {c.members_asked} "
            f"members with none judged); refused judge rounds {share_cell(c.refused, c.rounds)}. A system whose "
            "low-scoring units fail to be judged gains from this rule: compare its coverage and refusal rate"
            for label, r in runs.items() if (c := r.coverage) is not None]
