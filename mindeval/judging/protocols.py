"""The judge protocols: what each one asks for and how a refused reply is asked again.

Protocols (``Judgment.protocol``):

* ``mindeval`` (default): integer 1-6 scores in one JSON object; few-shot examples (if
  any) drawn with a seed and scored with a ``0`` meaning "not rated".
* ``paper``: *the authors' few-shot examples with our instructions* (see
  :mod:`mindeval.judging.fewshot`): their five few-shot interactions with their scores (a ``0``
  averaged in as zero), one ``Name: score`` line per axis as in their examples, fractional
  scores accepted, and their sampling settings (:data:`mindeval.config.PAPER_JUDGE_SAMPLING`).
  The instructions, rubric and transcript layout are ours, so it is not the authors' judge.
"""

from __future__ import annotations

from ..records import AXES, PROTOCOLS, TRANSCRIPT_FORMATS
from ..targets.guidelines import Guidelines
from ..targets.scales import OrdinalScale
from .answer import ANSWER_KEY


def check_protocol(protocol: str, transcript_format: str) -> None:
    """Refuse an unknown protocol or transcript format (a programming error, not user input)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown judge protocol {protocol!r}; choose one of {PROTOCOLS}")
    if transcript_format not in TRANSCRIPT_FORMATS:
        raise ValueError(f"unknown transcript format {transcript_format!r}; choose one of {TRANSCRIPT_FORMATS}")


def protocol_label(protocol: str, transcript_format: str = "mindeval") -> str:
    """What a run's judge is, in words (summary.json ``judge_protocol_label``)."""
    if transcript_format == "authors":
        return "the authors' template and transcript format as given by the user: forgeable, not hardened"
    if protocol == "paper":
        return "the authors' few-shot examples with our instructions"
    return "MindEval judge"


def retry_instruction(protocol: str, g: Guidelines, nonce: str | None = None) -> str:
    if nonce is None and protocol == "paper":
        names = ", ".join(ax.name for ax in g.judge_axes)
        return (f"Reply again with only the five lines `Name: score`, one for each of {names}, "
                "each score a single number from 1 to 6.")
    if protocol == "paper":
        names = ", ".join(ax.name for ax in g.judge_axes)
        return (f"Reply again with only the line `ANSWER {nonce}`, then the five lines `Name: score`, one for "
                f"each of {names}, each score a single number from 1 to 6, then the line `END {nonce}`.")
    code = f'"{ANSWER_KEY}": "{nonce}" and ' if nonce else ""
    if g.axis_codes == AXES and g.score_values() == (1, 2, 3, 4, 5, 6):
        return (f"Reply again with only the JSON object holding {code}an integer from 1 to 6 for each of "
                "CAC, EPC, AR, TRA and ASCQ.")
    if isinstance(g.scale, OrdinalScale):
        what = f"an integer from {g.scale.min} to {g.scale.max}"
    else:
        what = "the id of one level (" + ", ".join(lv.id for lv in g.levels) + ")"
    return f"Reply again with only the JSON object holding {code}{what} for each of {', '.join(g.axis_codes)}."
