"""The judge's answer channel and the strict reading of its reply.

The dimensions and their scale come from the target's guidelines (MindEval: five axes,
integers 1-6). A categorical target's judge replies with level ids (a level's label or
its number is accepted too); they are stored as the level's number.

**The answer channel** (docs/judging.md). Every judgment round draws a random *answer
code* (:func:`new_nonce`, ``secrets``; never derived from the transcript), stores it
before the first call (so a resumed run re-sends the identical request and reuses the
stored reply) and appends an instruction (``prompts/judge/answer/*.txt``): the answer is
the JSON object carrying ``"answer_code": "<code>"``, or the lines between ``ANSWER <code>``
and ``END <code>``. Where the provider table says the model supports JSON schemas, the code is also
enforced by ``response_format`` (an ``enum`` of the one code). A block without the code
is never the answer; answer blocks that disagree, or a score after the answer that
disagrees with it, refuse the reply.

``transcript_format="authors"`` renders a user-supplied copy of the authors' template
exactly as their prompt expects (``<member>``/``<therapist>`` tags, ``<output>`` example
blocks, no answer code) and reads the reply their way (the first ``Name: score`` match per
axis): forgeable by any turn, recorded as ``answer_channel="authors"``.

Parsing (:func:`parse_scores`) is tolerant of formatting and never of substance. The
reply is cut into *score blocks* — a JSON object (a trailing comma is tolerated), a run
of ``Name: N`` lines, Markdown table rows, or ``Score: N`` lines under axis headings. A
value that is not a single score on the scale (``7``, ``3-4``, ``3 or 4``, ``good``; a
fraction under the default protocol), a duplicate JSON key or an axis given twice with
different values refuses the reply; scores written as words (``five``) are read. A refused
reply is retried with the reason fed back, up to ``retries`` attempts; after that the
judgment is stored with ``parse_status="failed"`` and no scores — never a default score.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import string
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..llm.gateway import ModelSpec
from ..resources import prompts_dir
from ..targets.guidelines import Guidelines, load_guidelines
from ..targets.scales import OrdinalScale


class JudgeParseError(ValueError):
    """The judge's reply does not contain a valid score for every dimension."""


ANSWER_KEY = "answer_code"
# How the answer was read (``Judgment.answer_channel``): the answer code in the reply text;
# the code enforced by the provider's JSON schema too; the authors' first-match parsing.
CHANNELS = ("nonce", "schema", "authors")
_CODE = r"[0-9a-f]{16}"
ANSWER_CODE_RE = re.compile(rf"^Answer code: ({_CODE})$", re.MULTILINE)


def new_nonce() -> str:
    """A fresh answer code: 64 random bits from the OS (never derived from the transcript)."""
    return secrets.token_hex(8)


def score_schema(g: Guidelines | None = None, nonce: str | None = None,
                 allowed: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """JSON schema for grammar-constrained judges: per dimension an ``enum`` of the allowed
    integers (ordinal; MindEval 1-6) or level ids (categorical); with ``nonce`` also the
    ``answer_code`` key, whose only allowed value is that code. ``allowed`` narrows a
    categorical key to its own answer ids (a question's answers; ``not_relevant`` only where
    that dimension allows it), so the grammar cannot offer an answer the reader refuses."""
    g = g or load_guidelines()
    if isinstance(g.scale, OrdinalScale):
        one: dict[str, Any] = {"type": "integer", "enum": list(g.score_values())}
    else:
        one = {"type": "string", "enum": [lv.id for lv in g.levels]}
    props: dict[str, Any] = {ANSWER_KEY: {"type": "string", "enum": [nonce]}} if nonce else {}
    for ax in g.axis_codes:
        own = (allowed or {}).get(ax) if one["type"] == "string" else None
        props[ax] = {"type": "string", "enum": list(own)} if own else dict(one)
    return {"type": "object", "properties": props, "required": list(props)}


def response_format(g: Guidelines | None = None, nonce: str | None = None,
                    allowed: dict[str, list[str]] | None = None) -> dict[str, Any]:
    schema = score_schema(g, nonce, allowed)
    return {"type": "json_schema", "json_schema": {"name": "mindeval_scores", "schema": schema}}


def supports_schema(spec: ModelSpec) -> bool:
    """True when the judge model accepts a JSON-schema ``response_format`` (the provider table's rule)."""
    from ..llm.providers import supports_schema as table_says

    return table_says(spec.model)


def answer_instruction(nonce: str, protocol: str = "mindeval") -> str:
    """The paragraph appended to the judge prompt that names this round's answer code
    (``prompts/judge/answer/json.txt``, or ``lines.txt`` for ``Name: score`` replies)."""
    ref, _ = answer_prompt_file(protocol)
    body = (prompts_dir() / f"{ref}.txt").read_text(encoding="utf-8").strip("\n")
    return string.Template(body).substitute(answer_code=nonce)


def reply_answer_rules() -> str:
    """Reply-level judging (``unit: reply``): the answer-code rules without the code
    (``prompts/judge/answer/reply_ahead.txt``), shown with the reply shape in the part of the
    request every reply of the run shares, so the per-call end is the code line alone."""
    return (prompts_dir() / "judge" / "answer" / "reply_ahead.txt").read_text(encoding="utf-8").strip("\n")


def reply_answer_code(nonce: str) -> str:
    """The end of a reply-level request whose rules came earlier: the code line and a pointer to
    the rules (``prompts/judge/answer/reply_code.txt``)."""
    body = (prompts_dir() / "judge" / "answer" / "reply_code.txt").read_text(encoding="utf-8").strip("\n")
    return string.Template(body).substitute(answer_code=nonce)


def answer_prompt_file(protocol: str = "mindeval", unit: str = "conversation") -> tuple[str, str]:
    """``(ref, sha256)`` of the answer-code instruction a protocol appends (recorded in config.json).
    ``unit="reply"`` (JSON answers): the rules ahead and the code line at the end (one hash over
    both files and ``json.txt``, which a template without ``${output_format}`` gets instead)."""
    name = "lines" if protocol == "paper" else "json"
    body = (prompts_dir() / "judge" / "answer" / f"{name}.txt").read_bytes()
    if unit == "reply" and name == "json":
        for part in ("reply_ahead", "reply_code"):
            body += b"\0" + (prompts_dir() / "judge" / "answer" / f"{part}.txt").read_bytes()
        return "judge/answer/reply", hashlib.sha256(body).hexdigest()
    return f"judge/answer/{name}", hashlib.sha256(body).hexdigest()


# ----------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class _Scale:
    """What a score may be: ``lo``..``hi`` (ordinal) or one of ``levels`` (categorical)."""

    lo: int = 1
    hi: int = 6
    levels: tuple[tuple[str, int], ...] = ()  # (lower-case id / label / number, value), longest first

    @property
    def categorical(self) -> bool:
        return bool(self.levels)

    def level(self, text: str) -> tuple[int, str] | None:
        """``(value, rest of text)`` when ``text`` starts with a level id, label or number."""
        low = text.lower()
        for key, value in self.levels:
            if low.startswith(key) and (len(low) == len(key) or not (low[len(key)].isalnum() or low[len(key)] == "_")):
                return value, text[len(key):]
        return None


def _scale(g: Guidelines) -> _Scale:
    if isinstance(g.scale, OrdinalScale):
        return _Scale(g.scale.min, g.scale.max)
    keys: dict[str, int] = {}
    for lv in g.levels:
        for k in (lv.id, lv.id.replace("_", " "), lv.label, str(lv.value)):
            keys[k.lower()] = lv.value
    return _Scale(0, 0, tuple(sorted(keys.items(), key=lambda kv: -len(kv[0]))))


def _aliases(g: Guidelines) -> dict[str, str]:
    out: dict[str, str] = {}
    names = {ax.code: ax.name for ax in g.judge_axes}
    for i, code in enumerate(g.axis_codes, start=1):
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


_NUM = r"-?\d+(?:\.\d+)?"
_ALT_RE = re.compile(r"^(?:[-–—~/]|to\b|or\b|and\b)\s*(.*)$", re.IGNORECASE)
# Whole scores written as words; read only when the word is the whole value (``five``,
# ``Five.``, ``five/6``, ``five (strong)``), never in ``one or two`` / ``one of the best``.
WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
         "eight": 8, "nine": 9, "ten": 10}
_WORD = "|".join(WORDS)


@lru_cache(maxsize=8)
def _value_re(hi: int) -> re.Pattern[str]:
    """A score, optionally ``/ hi`` (``4/6``), then the rest of the line."""
    return re.compile(rf"^[\s*_`]*({_NUM})\s*(?:/\s*{hi}(?:\.0+)?)?[\s*_`]*(.*)$")


@lru_cache(maxsize=8)
def _word_re(hi: int) -> re.Pattern[str]:
    return re.compile(rf"^[\s*_`\"']*({_WORD})[\s*_`\"']*(?:/\s*{hi}(?:\.0+)?)?[\s*_`\"']*(?:$|[.,;]\s*$|\s*\(|\s+[-–—]\s+(?!\d|(?:{_WORD})\b))",
                      re.IGNORECASE)


_RANGE_RE = re.compile(r"^(?:[-–—~/]|to\b|or\b|and\b)\s*\d", re.IGNORECASE)


def _number(value: Any, axis: str, protocol: str, sc: _Scale) -> float:
    if isinstance(value, bool):
        raise JudgeParseError(f"{axis}: {value!r} is not a score")
    if isinstance(value, dict):
        for key in ("score", "level") if sc.categorical else ("score",):
            if key in value:
                return _number(value[key], axis, protocol, sc)
    if isinstance(value, str):
        return _line_value(value, axis, protocol, sc)
    if not isinstance(value, int | float):
        raise JudgeParseError(f"{axis}: {value!r} is not an integer score")
    if sc.categorical:
        if float(value).is_integer() and int(value) in {v for _, v in sc.levels}:
            return int(value)
        raise JudgeParseError(f"{axis}: {value!r} is not one of the levels")
    if not sc.lo <= value <= sc.hi:
        raise JudgeParseError(f"{axis}: {value:g} is outside {sc.lo}-{sc.hi}")
    if protocol != "paper" and not float(value).is_integer():
        raise JudgeParseError(f"{axis}: {value:g} is not an integer score")
    return int(value) if float(value).is_integer() else float(value)


def _line_value(rest: str, axis: str, protocol: str, sc: _Scale) -> float:
    """The score at the start of ``rest`` (a line after ``Name:``); ranges and alternatives refused."""
    if sc.categorical:
        hit = sc.level(rest.strip().strip("*_`\"' "))
        if hit is None:
            raise JudgeParseError(f"{axis}: {rest.strip()!r} is not one of the levels")
        alt = _ALT_RE.match(re.sub(r"^[\s*_`\"']+", "", hit[1]))
        if alt and sc.level(alt.group(1).strip("*_`\"' ")):
            raise JudgeParseError(f"{axis}: {rest.strip()!r} gives more than one level")
        return hit[0]
    if (w := _word_re(sc.hi).match(rest)):
        return _number(WORDS[w.group(1).lower()], axis, protocol, sc)
    m = _value_re(sc.hi).match(rest)
    if not m:
        raise JudgeParseError(f"{axis}: {rest.strip()!r} is not a score")
    tail = m.group(2).strip()
    if tail and _RANGE_RE.match(tail):
        raise JudgeParseError(f"{axis}: {rest.strip()!r} is a range, not a single score")
    raw = m.group(1)
    return _number(float(raw) if "." in raw else int(raw), axis, protocol, sc)


@dataclass
class _Block:
    """Scores found together in one place of the reply (in reply order)."""

    start: int
    scores: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    rationale: str | None = None
    answer: bool = False  # carries this reply's answer code
    end: int | None = None  # end of the answer region holding it (line blocks)


def _object_end(text: str, start: int) -> int | None:
    """End of the ``{...}`` opened at ``start`` (string-aware brace matching), or None when unclosed."""
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _json_objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """``(start, end, object)`` of every outermost JSON object in ``text``.

    A ``{`` that opens no readable object (a stray brace in the judge's reasoning, a truncated
    draft) is skipped and the search goes on from the next one, so it never hides a later object.
    Each ``{`` is decoded in place (linear time however many stray braces); an object that fails
    only on a trailing comma is read again without it."""
    out, pos = [], 0
    while (start := text.find("{", pos)) >= 0:
        obj: Any = None
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            if text[exc.pos:exc.pos + 1] in ("}", "]") and text[start:exc.pos].rstrip().endswith(",") and (end := _object_end(text, start) or 0):
                obj = _load_object(text[start:end])
        if not isinstance(obj, dict):
            pos = start + 1
            continue
        out.append((start, end, obj))
        pos = end
    return out


def _is_code(value: Any, nonce: str | None) -> bool:
    """``value`` is the round's answer code (any case, spaces around it allowed)."""
    return bool(nonce) and isinstance(value, str) and value.strip().lower() == nonce.lower()  # type: ignore[union-attr]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: a key given twice with different values is marked, never resolved."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            out.setdefault("\0duplicate", key)
        out.setdefault(key, value)
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs)


def _load_object(segment: str) -> dict[str, Any] | None:
    for candidate in (segment, re.sub(r",\s*([}\]])", r"\1", segment)):
        try:
            obj = json.loads(candidate, object_pairs_hook=_pairs)
        except json.JSONDecodeError:
            continue
        return obj if isinstance(obj, dict) else None
    return None


def _json_blocks(text: str, aliases: dict[str, str], protocol: str, sc: _Scale,
                 nonce: str | None) -> tuple[list[_Block], list[tuple[int, int]]]:
    blocks, spans = [], []
    for start, end, obj in _json_objects(text):
        spans.append((start, end))
        block = _Block(start, answer=_is_code(obj.get(ANSWER_KEY), nonce))
        flat = dict(obj)
        for nested in ("scores", "ratings"):
            if isinstance(obj.get(nested), dict):
                flat.update((k, v) for k, v in obj[nested].items() if k != "\0duplicate")
                if "\0duplicate" in obj[nested]:
                    flat.setdefault("\0duplicate", obj[nested]["\0duplicate"])
        if "\0duplicate" in flat:
            block.error = f"the key {flat.pop(chr(0) + 'duplicate')!r} is given twice with different values"
        for key, value in flat.items():
            code = _lookup(aliases, str(key))
            if code:
                try:
                    score = _number(value, code, protocol, sc)
                except JudgeParseError as exc:
                    block.error = block.error or str(exc)
                    continue
                if code in block.scores and block.scores[code] != score:
                    block.error = block.error or f"{code} is given twice with different values"
                block.scores[code] = score
            elif _norm(str(key)) in ("rationale", "justification", "explanation", "reasoning"):
                block.rationale = str(value)
        if block.scores or block.error:
            blocks.append(block)
    return blocks, spans


_NAME = r"[A-Za-z][A-Za-z0-9 &_()\-/]*?"
_LINE_RE = re.compile(rf"^\s*(?:\d+[.)]\s*)?[-*#>\s]*[*_`]*\s*({_NAME})\s*[*_`]*\s*[:=\-–]\s*"
                      rf"([*_`\s]*(?:-?\d|(?:{_WORD})\b).*)$", re.IGNORECASE)
_HEADING_RE = re.compile(rf"^\s*(?:#+\s*)?(?:\d+[.)]\s*)?[*_`]*\s*({_NAME})\s*[*_`]*\s*:?\s*[*_`]*\s*$")
_LEVEL_LINE_RE = re.compile(rf"^\s*(?:\d+[.)]\s*)?[-*#>\s]*[*_`]*\s*({_NAME})\s*[*_`]*\s*[:=\-–]\s*(.+)$")
_SCORE_LINE_RE = re.compile(r"^\s*[-*>\s]*[*_`]*\s*(?:score|rating)\s*[*_`]*\s*[:=]\s*(.*)$", re.IGNORECASE)

Hit = tuple[int, str, float | None, str | None]  # offset, axis, score (None: unreadable), error


def _line_hits(text: str, aliases: dict[str, str], protocol: str, skip: list[tuple[int, int]],
               sc: _Scale) -> list[Hit]:
    """``(offset, axis, score or None, error)`` for every axis score given outside JSON objects."""
    hits: list[Hit] = []
    heading: tuple[str, int] | None = None  # axis of a bare heading line, lines since
    offset = 0
    for line in text.splitlines(keepends=True):
        pos, offset = offset, offset + len(line)
        if any(a <= pos < b for a, b in skip):
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if heading is not None:
            heading = (heading[0], heading[1] + 1)
            if heading[1] > 3:
                heading = None
        item: tuple[str, str] | None = None
        if stripped.startswith("|"):
            cells = [c.strip(" *_`") for c in stripped.strip("|").split("|")]
            code = _lookup(aliases, cells[0]) if cells else None
            values = [c for c in cells[1:] if (sc.level(c) if sc.categorical else re.match(rf"^{_NUM}", c))]
            if code and values:
                item = (code, values[0])
        elif heading and (m := _SCORE_LINE_RE.match(stripped)):
            item = (heading[0], m.group(1))
            heading = None
        elif sc.categorical and (m := _LEVEL_LINE_RE.match(line)) and (code := _lookup(aliases, m.group(1))) \
                and sc.level(m.group(2).strip().strip("*_`\"' ")):
            item = (code, m.group(2))
        elif not sc.categorical and (m := _LINE_RE.match(line)) and (code := _lookup(aliases, m.group(1))):
            item = (code, m.group(2))
        elif (m := _HEADING_RE.match(line)) and (code := _lookup(aliases, m.group(1))):
            heading = (code, 0)
        if item is None:
            continue
        try:
            hits.append((pos, item[0], _line_value(item[1], item[0], protocol, sc), None))
        except JudgeParseError as exc:
            hits.append((pos, item[0], None, str(exc)))
    return hits


def _regions(text: str, nonce: str | None) -> list[tuple[int, int]]:
    """Spans between an ``ANSWER <code>`` line and its ``END <code>`` line (or the reply's end)."""
    if not nonce:
        return []
    out, pos = [], 0
    code = f"(?i:{re.escape(nonce)})"  # the code in any case
    begin = re.compile(rf"^[\s*_`#>]*ANSWER[\s:]+{code}[\s*_`]*$", re.MULTILINE)
    end = re.compile(rf"^[\s*_`#>]*END[\s:]+{code}[\s*_`]*$", re.MULTILINE)
    while (b := begin.search(text, pos)):
        e = end.search(text, b.end())
        stop = e.start() if e else len(text)
        out.append((b.end(), stop))
        pos = e.end() if e else len(text)
    return out


def _line_blocks(hits: list[Hit], regions: list[tuple[int, int]]) -> list[_Block]:
    """Hits grouped into blocks: a block ends where an axis repeats or a region starts or ends.

    Inside an answer region an axis given again with another value is an error, not a new block."""
    def region_of(pos: int) -> int | None:
        return next((i for i, (a, b) in enumerate(regions) if a <= pos < b), None)

    blocks: list[_Block] = []
    current: _Block | None = None
    current_region: int | None = None
    for pos, code, score, error in hits:
        region = region_of(pos)
        inside = region is not None
        if current is None or region != current_region or (not inside and code in current.scores):
            current, current_region = _Block(pos, answer=inside, end=regions[region][1] if inside else None), region
            blocks.append(current)
        if error:
            current.error = current.error or error
            current.scores[code] = float("nan")
        elif code in current.scores and current.scores[code] != score:
            current.error = current.error or f"{code} is given twice with different values"
        else:
            current.scores[code] = score  # type: ignore[assignment]
    return blocks


def _same(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)


def _merged(answers: list[_Block]) -> dict[str, float]:
    """The answer blocks' scores together; an axis they give with different values is refused."""
    merged: dict[str, float] = {}
    for b in answers:
        for ax, v in b.scores.items():
            if ax in merged and not _same(merged[ax], v):
                raise JudgeParseError(f"the reply gives {ax} twice with different values "
                                      f"({format_value(merged[ax])} and {format_value(v)})")
            merged.setdefault(ax, v)
    return merged


def _check_later_blocks(blocks: list[_Block], first: int, merged: dict[str, float]) -> None:
    """No block that is not an answer, from the first answer on, may give a score that disagrees with it."""
    for b in blocks:
        if b.answer or b.start < first:
            continue
        for ax, v in b.scores.items():
            if v == v and ax in merged and not _same(merged[ax], v):
                raise JudgeParseError(f"a score after the answer disagrees with it ({ax}: "
                                      f"{format_value(merged[ax])}, then {format_value(v)})")


def parse_scores(
    text: str, guidelines: Guidelines | None = None, *, protocol: str = "mindeval", nonce: str | None = None
) -> tuple[dict[str, float], str | None]:
    """The judge's score per dimension (and a rationale if given), or :class:`JudgeParseError`.

    With ``nonce`` (the answer channel) the answer is what carries the code: a JSON object
    with ``"answer_code": nonce`` or lines between ``ANSWER nonce`` and ``END nonce``;
    other blocks before it are ignored (quotes, drafts). Without ``nonce`` every block is
    an answer. Either way: answer blocks must be complete and agree, and no score after
    the first answer block may disagree with it. Dimensions and scale are the guidelines'
    (default: MindEval's); categorical levels come back as their numbers."""
    g = guidelines or load_guidelines()
    aliases, sc, codes = _aliases(g), _scale(g), g.axis_codes
    regions = _regions(text, nonce)
    json_blocks, spans = _json_blocks(text, aliases, protocol, sc, nonce)
    for b in json_blocks:
        b.answer = b.answer or any(a <= b.start < e for a, e in regions)
    blocks = sorted(json_blocks + _line_blocks(_line_hits(text, aliases, protocol, spans, sc), regions),
                    key=lambda b: b.start)
    if not blocks:
        raise JudgeParseError("no scores found in the reply")
    answers = [b for b in blocks if b.answer] if nonce else blocks
    if not answers:
        raise JudgeParseError(f"no answer carries this reply's answer code {nonce}")
    for b in answers:
        if b.error:
            raise JudgeParseError(b.error)
    if nonce and any(b.answer and not b.scores for b in blocks):
        raise JudgeParseError("an answer block holds no scores")
    merged = _merged(answers)
    complete = [b for b in answers if all(ax in b.scores for ax in codes)]
    if not complete:
        missing = [ax for ax in codes if ax not in merged] or [ax for ax in codes if ax not in answers[-1].scores]
        raise JudgeParseError(f"missing score(s) for {', '.join(missing)}")
    first = min(b.start for b in answers)
    _check_later_blocks(blocks, first, merged)
    for m in _inline_re(tuple(codes), tuple(ax.name for ax in g.judge_axes)).finditer(text, first):
        if any(b.answer and b.start <= m.start() < _block_end(text, b) for b in blocks) and nonce:
            continue
        code = _lookup(aliases, m.group(1))
        try:
            v = _line_value(m.group(2), code or "", protocol, sc) if code else None
        except JudgeParseError:
            continue
        if code and v is not None and code in merged and not _same(merged[code], v):
            raise JudgeParseError(f"a score after the answer disagrees with it ({code}: "
                                  f"{format_value(merged[code])}, then {format_value(v)})")
    chosen = complete[0]
    rationale = next((b.rationale for b in answers if b.rationale), None)
    return {ax: chosen.scores[ax] for ax in codes}, rationale


@lru_cache(maxsize=8)
def _inline_re(codes: tuple[str, ...], names: tuple[str, ...]) -> re.Pattern[str]:
    """``Axis: value`` anywhere in a line (a correction such as "Actually, revise: AR: 4")."""
    keys = "|".join(re.escape(k) for k in sorted({*codes, *names}, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z])({keys})(?![A-Za-z])\s*[*_`]*\s*[:=]\s*([*_`\s]*(?:{_NUM}|(?:{_WORD})\b)[^\n]*)",
                      re.IGNORECASE)


def _block_end(text: str, b: _Block) -> int:
    """Where an answer block ends: its JSON object's closing brace, else its region's end."""
    if text.startswith("{", b.start):
        return _object_end(text, b.start) or len(text)
    return len(text) if b.end is None else b.end


def format_value(v: float) -> str:
    return f"{v:g}"


def parse_authors(text: str, guidelines: Guidelines | None = None) -> dict[str, float]:
    """The authors' reading of a reply: per axis the **first** ``Name: score`` match anywhere
    in the text (forgeable: a quoted line earlier in the reply wins)."""
    g = guidelines or load_guidelines()
    out: dict[str, float] = {}
    for ax in g.judge_axes:
        m = re.search(rf"{re.escape(ax.name)}:\s*({_NUM})", text)
        if m is None:
            raise JudgeParseError(f"missing score for {ax.name}")
        value = float(m.group(1))
        if not 1 <= value <= 6:
            raise JudgeParseError(f"{ax.code}: {value:g} is outside 1-6")
        out[ax.code] = int(value) if value.is_integer() else value
    return out
