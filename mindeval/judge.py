"""The judge: one call over the whole transcript, strict parsing, retries, recorded failures.

Parsing is tolerant of formatting (JSON, fenced JSON, ``Name: 4`` lines, axis codes or
names) and never of substance: a missing axis, a value outside 1-6, a non-integer or
two different values for one axis is a parse failure. A reply that cannot be parsed is
retried with the reason fed back, up to ``retries`` attempts; after that the judgment is
stored with ``parse_status="failed"`` and no scores — never a default score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from .errors import ModelCallError
from .guidelines import Guidelines, load_guidelines, render_rubric, render_scale
from .llm.gateway import ModelSpec
from .prompts import PromptTemplate
from .records import AXES, Judgment, Profile
from .store.calls import CallLog

SPEAKER = {"user": "Member", "assistant": "Therapist"}


class JudgeParseError(ValueError):
    """The judge's reply does not contain five valid 1-6 integer scores."""


class FewShotExample(BaseModel):
    """An annotated interaction shown to the judge (scores: the annotators' mean)."""

    intake: dict[str, str]
    messages: list[dict[str, str]]
    scores: dict[str, float]


def score_schema() -> dict[str, Any]:
    """JSON schema for grammar-constrained judges: integers 1-6 as an enum."""
    props = {ax: {"type": "integer", "enum": [1, 2, 3, 4, 5, 6]} for ax in AXES}
    return {"type": "object", "properties": props, "required": list(AXES)}


def response_format() -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "mindeval_scores", "schema": score_schema()}}


# ----------------------------------------------------------------------------- parsing


def _aliases(g: Guidelines | None) -> dict[str, str]:
    out: dict[str, str] = {}
    names = {ax.code: ax.name for ax in g.judge_axes} if g else {}
    for i, code in enumerate(AXES, start=1):
        keys = {code, f"criterion_{i}", f"criterion {i}", f"criterion{i}"}
        if code in names:
            keys.add(names[code])
            keys.add(names[code].split("(")[0].strip())
        for k in keys:
            out[_norm(k)] = code
    return out


def _lookup(aliases: dict[str, str], key: str) -> str | None:
    return aliases.get(_norm(key)) or aliases.get(_norm(re.sub(r"\(.*?\)", "", key)))


def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", key.lower().replace("&", "and"))


def _to_score(value: Any, axis: str) -> int:
    if isinstance(value, bool):
        raise JudgeParseError(f"{axis}: {value!r} is not a score")
    if isinstance(value, int):
        score = value
    elif isinstance(value, float) and value.is_integer():
        score = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[1-6]\s*(/\s*6)?\s*", value):
        score = int(value.strip()[0])
    elif isinstance(value, dict) and "score" in value:
        return _to_score(value["score"], axis)
    else:
        raise JudgeParseError(f"{axis}: {value!r} is not an integer score")
    if not 1 <= score <= 6:
        raise JudgeParseError(f"{axis}: {score} is outside 1-6")
    return score


def _json_objects(text: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch != "{":
            continue
        try:
            obj, _ = decoder.raw_decode(text[i:])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def parse_scores(text: str, guidelines: Guidelines | None = None) -> tuple[dict[str, int], str | None]:
    """Extract the five axis scores (and a rationale if given) from a judge reply."""
    aliases = _aliases(guidelines or load_guidelines())
    for obj in _json_objects(text):
        found: dict[str, int] = {}
        rationale = None
        flat = dict(obj)
        for nested in ("scores", "ratings"):
            if isinstance(obj.get(nested), dict):
                flat.update(obj[nested])
        for key, value in flat.items():
            code = _lookup(aliases, str(key))
            if code:
                score = _to_score(value, code)
                if code in found and found[code] != score:
                    raise JudgeParseError(f"{code} is given twice with different values")
                found[code] = score
            elif _norm(str(key)) in ("rationale", "justification", "explanation", "reasoning"):
                rationale = str(value)
        if found:
            missing = [ax for ax in AXES if ax not in found]
            if missing:
                raise JudgeParseError(f"missing score(s) for {', '.join(missing)}")
            return found, rationale
    # Plain "Name: 4" lines.
    found = {}
    line_re = re.compile(r"^\s*[-*#>\s]*\**\s*([A-Za-z][A-Za-z0-9 &_()\-/]*?)\s*\**\s*[:=\-–]\s*\**\s*(-?\d+(?:\.\d+)?)\b")
    for line in text.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        code = _lookup(aliases, m.group(1))
        if not code:
            continue
        raw = m.group(2)
        score = _to_score(float(raw) if "." in raw else int(raw), code)
        if code in found and found[code] != score:
            raise JudgeParseError(f"{code} is given twice with different values")
        found[code] = score
    if not found:
        raise JudgeParseError("no scores found in the reply")
    missing = [ax for ax in AXES if ax not in found]
    if missing:
        raise JudgeParseError(f"missing score(s) for {', '.join(missing)}")
    return found, None


# --------------------------------------------------------------------------- rendering


def render_conversation(messages: Sequence[dict[str, str]]) -> str:
    return "\n\n".join(f"{SPEAKER.get(m['role'], m['role'])}: {m['content']}" for m in messages)


def _intake_block(intake: dict[str, str]) -> str:
    return "\n".join(f"- {k.replace('_', ' ').capitalize()}: {v}" for k, v in intake.items())


def render_fewshot(examples: Sequence[FewShotExample]) -> str:
    """The examples block placed before the new instance (empty when there are none)."""
    if not examples:
        return ""
    blocks = []
    for i, ex in enumerate(examples, start=1):
        scores = json.dumps({ax: round(ex.scores[ax], 2) for ax in AXES})
        blocks.append(
            f"<example_{i}>\n<member_details>\n{_intake_block(ex.intake)}\n</member_details>\n"
            f"<conversation>\n{render_conversation(ex.messages)}\n</conversation>\n"
            f"Ratings: {scores}\n</example_{i}>"
        )
    return "Here are rated examples:\n\n" + "\n\n".join(blocks) + "\n"


def build_judge_messages(
    tpl: PromptTemplate,
    profile: Profile,
    messages: Sequence[dict[str, str]],
    fewshot: Sequence[FewShotExample] = (),
    guidelines: Guidelines | None = None,
) -> list[dict[str, str]]:
    g = guidelines or load_guidelines()
    values = dict(profile.intake())
    values.update(
        rating_scale=render_scale(g),
        rubric=render_rubric(g),
        fewshot_examples=render_fewshot(fewshot),
        conversation=render_conversation(messages),
    )
    return [{"role": "user", "content": tpl.render(values)}]


# ----------------------------------------------------------------------------- judging


async def judge_transcript(
    log: CallLog,
    spec: ModelSpec,
    tpl: PromptTemplate,
    profile: Profile,
    messages: Sequence[dict[str, str]],
    interaction_id: str,
    *,
    sample: int = 0,
    retries: int = 3,
    fewshot: Sequence[FewShotExample] = (),
    seed: int = 0,
    guidelines: Guidelines | None = None,
    round_: int = 0,
) -> Judgment:
    """Judge one transcript; every attempt is a stored call, so re-running repeats none.

    ``round_`` > 0 re-judges after a recorded failure with fresh attempts (new requests).
    """
    g = guidelines or load_guidelines()
    base = build_judge_messages(tpl, profile, messages, fewshot, g)
    rf = response_format() if spec.provider in ("local",) else None
    history = list(base)
    last_raw, last_error = "", "no attempt made"
    for attempt in range(max(1, retries)):
        try:
            again = f"r{round_}:" if round_ else ""
            call = await log.call(
                "judge", spec, history, response_format=rf, seed=seed + 1000 * sample + attempt + 100 * round_,
                tag=f"judge:{interaction_id}:{sample}:{again}{attempt}",
            )
        except ModelCallError as exc:
            last_error = f"model call failed: {exc}"
            continue
        last_raw = call.completion.text
        try:
            scores, rationale = parse_scores(last_raw, g)
        except JudgeParseError as exc:
            last_error = str(exc)
            history = base + [
                {"role": "assistant", "content": last_raw},
                {
                    "role": "user",
                    "content": f"Your reply could not be read ({exc}). Reply again with only the JSON "
                    "object holding an integer from 1 to 6 for each of CAC, EPC, AR, TRA and ASCQ.",
                },
            ]
            continue
        return Judgment(
            interaction_id=interaction_id, judge_model=spec.model, sample=sample, scores=scores,
            raw_text=last_raw, rationale=rationale, parse_status="ok", attempts=attempt + 1,
        )
    return Judgment(
        interaction_id=interaction_id, judge_model=spec.model, sample=sample, scores=None,
        raw_text=last_raw, parse_status="failed", attempts=max(1, retries), error=last_error,
    )
