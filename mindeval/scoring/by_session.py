"""Figures by session number of a multi-session target (``sessions: N`` > 1).

The rated units the whole-run report reads (:func:`mindeval.scoring.ratings`, and the criterion
results of a target with points) are grouped by the session of their conversation — read back from
the conversation's id (:func:`mindeval.sessions.session_of`; a judge sample ``<id>#<k>`` is its
conversation's) — and each group goes through the same
:func:`~mindeval.stats.reply_scales.scale_report`: per session number, every share, the mean and
p99 weight and the declared score, each with its 95% interval resampling that session's profiles,
and ``conversations`` (n). Nothing here computes a statistic of its own.
"""

from __future__ import annotations

import re

from ..sessions import session_of
from ..stats.reply_scales import ScaleReport, scale_report
from ..stats.scale_spec import CriterionResult, Rating, ScaleSpec
from ..stats.seeding import rng_for

_SAMPLE = re.compile(r"#\d+$")  # a judge sample's conversation: <interaction id>#<sample>


def unit_session(row: Rating | CriterionResult) -> int:
    """The session number (1-based) of a rated unit's conversation."""
    return session_of(_SAMPLE.sub("", row.conversation), row.profile)


def split_by_session(rated: list[Rating], results: list[CriterionResult]
                     ) -> dict[int, tuple[list[Rating], list[CriterionResult]]]:
    """The rated units and criterion results of each session number, in session order."""
    out: dict[int, tuple[list[Rating], list[CriterionResult]]] = {}
    for r in rated:
        out.setdefault(unit_session(r), ([], []))[0].append(r)
    for c in results:
        out.setdefault(unit_session(c), ([], []))[1].append(c)
    return dict(sorted(out.items()))


def session_reports(spec: ScaleSpec, rated: list[Rating], results: list[CriterionResult], *, resamples: int,
                    seed: int, rng_key: str, level: float = 0.95) -> dict[int, ScaleReport]:
    """The scale report of each session number's units (its own resamples of that session's profiles)."""
    return {k: scale_report(spec, r, c, resamples=resamples, rng=rng_for(seed, "by-session", rng_key, str(k)),
                            level=level)
            for k, (r, c) in split_by_session(rated, results).items()}
