"""The text the judge prompt shows of the guidelines: the rating scale (``${rating_scale}``)
and the rubric of the judge axes (``${rubric}``)."""

from __future__ import annotations

from ..judging.rubric import NOT_RELEVANT
from .axes import JudgeAxis
from .guidelines import Guidelines
from .scales import OrdinalScale


def render_scale(g: Guidelines) -> str:
    """The rating-scale block for the judge prompt's ``${rating_scale}`` field."""
    if isinstance(g.scale, OrdinalScale):
        lines = [g.scale.intro.strip(), "", "RATING SCALE CALIBRATION:"]
        lines += [f"{score} = {text.strip()}" for score, text in g.scale.levels.items()]
    else:
        lines = [g.scale.intro.strip(), "", "RATING LEVELS:"]
        lines += [f"{lv.id} = {lv.label}" + (f": {lv.description.strip()}" if lv.description else "")
                  for lv in g.scale.levels]
    if g.scale.distribution_note:
        lines += ["", g.scale.distribution_note.strip()]
    return "\n".join(lines)


def render_axis(axis: JudgeAxis, g: Guidelines | None = None) -> str:
    """One axis as a tagged ``<criterion code="...">`` block."""
    lines = [
        f'<criterion code="{axis.code}">',
        f"NAME: {axis.name}",
        "",
        "WHAT TO EVALUATE:",
        axis.what_to_evaluate.strip(),
    ]
    labels = {lv.id: lv.label for lv in g.levels} if g is not None and g.scale_kind == "categorical" else {}
    if axis.questions:
        lines += ["", "QUESTIONS (answer each by its id):"]
        lines += [f"- {q.id}: {q.text.strip()} (answer {' | '.join(q.answers)})" for q in axis.questions]
        lines.append("</criterion>")
        return "\n".join(lines)
    for band in axis.anchors:
        if band.band in labels:
            lines += ["", f"LEVEL {band.band} ({labels[band.band]}): {band.heading}"]
        else:
            lines += ["", f"SCORE {band.band}: {band.heading}"]
        lines += [f"- {b.strip()}" for b in band.bullets]
    if axis.not_relevant:
        lines += ["", f"LEVEL {NOT_RELEVANT}: this dimension does not apply to this conversation at all."]
    lines.append("</criterion>")
    return "\n".join(lines)


def render_rubric(g: Guidelines) -> str:
    """The rubric of every judge axis for the judge prompt's ``${rubric}`` field."""
    return "\n\n".join(render_axis(a, g) for a in g.judge_axes)
