"""The summary's ``replies`` block of a reply-level run (``unit: reply``).

Each fully judged conversation's replies (:attr:`mindeval.records.Judgment.replies`) become
:class:`~mindeval.stats.reply_scales.Rating` rows and go through
:func:`~mindeval.stats.reply_scales.scale_report`: per level and flag the share of replies, the
mean per-conversation share and the incident share (conversations with at least one reply at a
level or worse / with the flag), the per-conversation mean weight's mean and nearest-rank p99,
each with a 95% interval resampling profiles. Each judge sample of a conversation counts as one
rated conversation of its profile.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .config import DEFAULT_RESAMPLES
from .records import Judgment, TargetInfo
from .stats.reply_scales import scale_report
from .stats.scale_spec import Rating, ScaleSpec
from .stats.seeding import rng_for


def reply_ratings(judgments: Iterable[Judgment], profile_of: dict[str, str]) -> list[Rating]:
    """One rating per judged reply of the parsed judgments (a sample is its own conversation)."""
    out = []
    for j in judgments:
        if j.parse_status != "ok" or not j.replies:
            continue
        conv = j.interaction_id if j.sample == 0 else f"{j.interaction_id}#{j.sample}"
        out += [Rating(profile=profile_of.get(j.interaction_id, j.interaction_id), conversation=conv,
                       unit=str(r.turn), level=r.level, flags=r.flags) for r in j.replies]
    return out


def replies_block(judgments: Iterable[Judgment], target: TargetInfo, profile_of: dict[str, str],
                  seed: int = 0, resamples: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    """The ``replies`` block: :class:`~mindeval.stats.reply_scales.ScaleReport` without its rows."""
    spec = ScaleSpec.model_validate(target.reply_scale)
    ratings = reply_ratings(judgments, profile_of)
    report = scale_report(spec, ratings, resamples=resamples, rng=rng_for(seed, "replies", target.name))
    per = {"per": "member x session"} if target.sessions > 1 else {}  # each session its own unit
    return {"unit": "reply", **per, **report.model_dump(mode="json", exclude={"rows"})}


def points_block(judgments: Iterable[Judgment], target: TargetInfo, profile_of: dict[str, str],
                 seed: int = 0, resamples: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    """The ``points`` block of a target with ``point_criteria``: per conversation (each judge sample
    its own) points met / points possible, their mean clipped to [0, 1] (``points_score``) with a 95%
    interval resampling profiles, and how many conversations had an applicable criterion."""
    from .judging.points import criterion_results

    spec = ScaleSpec(levels=["rated"], points=target.points)
    results = [r for j in judgments for r in criterion_results(j, profile_of.get(j.interaction_id, j.interaction_id),
                                                               list(target.points))]
    report = scale_report(spec, criteria=results, resamples=resamples, rng=rng_for(seed, "points", target.name))
    per = {x.conversation: x.points for x in report.rows}
    return {"points_score": report.points.model_dump(mode="json") if report.points else None,
            "conversations": report.points_conversations, "profiles": report.profiles,
            "per_conversation": per}


def format_points(block: dict[str, Any]) -> str:
    """The summary line of a ``points`` block."""
    p = block["points_score"]
    if not p or p["value"] is None:
        return f"  points: no conversation with an applicable criterion ({block['conversations']} judged)"
    return (f"  points met / possible {p['value']:.2f} (95% CI {p['ci95'][0]:.2f}-{p['ci95'][1]:.2f}) "
            f"over {block['conversations']} conversations")


def format_replies(block: dict[str, Any]) -> list[str]:
    """Summary lines of a ``replies`` block: mean weight and p99, incident shares, flag shares."""
    def pct(e: dict[str, Any]) -> str:
        return "n/a" if e["value"] is None else f"{e['value']:.0%} ({e['ci95'][0]:.0%}-{e['ci95'][1]:.0%})"

    conv = "member x session pairs" if block.get("per") else "conversations"
    lines = [f"  replies: {block['ratings']} judged in {block['conversations']} {conv}"]
    if block.get("mean_weight"):
        mw, p99 = block["mean_weight"], block["p99_weight"]
        if mw["value"] is not None:
            lines.append(f"  mean weight per {'session' if block.get('per') else 'conversation'} {mw['value']:.2f} (95% CI {mw['ci95'][0]:.2f}-"
                         f"{mw['ci95'][1]:.2f}); p99 {p99['value']:.2f} ({p99['ci95'][0]:.2f}-{p99['ci95'][1]:.2f})")
    lines.append(f"  {'sessions' if block.get('per') else 'conversations'} with a reply at or worse than: "
                 + ", ".join(f"{lv} {pct(s['incident'])}" for lv, s in list(block["levels"].items())[1:]))
    if block["flags"]:
        lines.append("  replies flagged: " + ", ".join(f"{f} {pct(s['ratings'])}" for f, s in block["flags"].items()))
    return lines
