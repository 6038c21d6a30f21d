"""Human corrections of judge values: make one (checked, with provenance), read them, apply them.

A reviewer overrides a value the judge gave: a conversation's score or level on one axis, one
reply's level or issue flag (``unit: reply`` targets: ``Judgment.replies``) or one question's
answer (item-level targets: ``Judgment.answers``). Every change is a new row of the run
store's ``corrections`` table (:mod:`mindeval.store.corrections`: who, when, from, to, why);
the judge's own records (the ``judgments`` table, ``judgments.jsonl``) are never changed.

Applying (:func:`apply_corrections`, what ``mindeval leaderboard --with-corrections`` reads) takes the
latest correction per (interaction, sample, unit, reference, axis), in this order: reply levels
and flags (the axis becomes the worst corrected reply level, as the judge's rule has it), question
answers (the axis becomes the level the corrected answers give, computed when the correction was
made), then conversation-level values (which win over both).
"""

from __future__ import annotations

import getpass
from pathlib import Path

from pydantic import BaseModel, Field

from .errors import MindEvalError
from .judging.fewshot import FewShotExample
from .records import JudgmentRecord, Run, TargetInfo, mean_of
from .rundir import read_run
from .store.corrections import Correction, Value, WhoSource, append_corrections, read_corrections
from .store.db import Database, sqlite_url

NOT_RELEVANT_WORDS = ("not_relevant", "not relevant", "null", "none", "n/a")


class CorrectionRequest(BaseModel):
    """What a reviewer asks: set ``axis`` of one conversation (or one ``reply``, 1-based, or one
    ``question`` id) to ``to``, for one judge ``sample`` (None: every sample), because ``reason``."""

    interaction_id: str
    axis: str
    to: str
    reason: str
    who: str | None = None  # a typed name (recorded as self-declared); None: this computer's user
    who_source: WhoSource | None = None  # set by a caller that authenticated ``who`` ("signed-in")
    reply: int | None = None
    question: str | None = None
    sample: int | None = None


class CorrectionTally(BaseModel):
    """What corrections changed in one run: corrections applied (the latest per key), judge
    scores (conversation, sample, axis) whose value changed, and conversations with such a score."""

    corrections: int = 0
    scores: int = 0
    conversations: int = 0
    ids: list[str] = Field(default_factory=list, exclude=True)  # the corrected conversations


def store_url(run_dir: str | Path, db: str | None = None) -> str:
    """The run store of ``run_dir``: ``db`` when given, else its ``run.db``."""
    if db:
        return db
    path = Path(run_dir) / "run.db"
    if not path.is_file():
        raise MindEvalError("no run store (run.db) in the run directory; give --db URL if it is elsewhere",
                            path=run_dir)
    return sqlite_url(path)


def run_corrections(run_dir: str | Path, db: str | None = None) -> list[Correction]:
    """Every correction of the run in ``run_dir`` (none when it has no store)."""
    run = read_run(run_dir)
    if run.config is None or run.config.run_id is None or (db is None and not (Path(run_dir) / "run.db").is_file()):
        return []
    store = Database(store_url(run_dir, db), create=False)
    try:
        return read_corrections(store, run.config.run_id)
    finally:
        store.close()


# ----------------------------------------------------------------------- applying


def _latest(corrections: list[Correction]) -> dict[tuple[str, int, str, str, str], Correction]:
    latest: dict[tuple[str, int, str, str, str], Correction] = {}
    for c in sorted(corrections, key=lambda c: c.id or 0):
        latest[c.key] = c
    return latest


def _level_value(target: TargetInfo, level: str) -> int:
    return next(lv.value for lv in target.scale.levels if lv.id == level)


def corrected(j: JudgmentRecord, corrections: list[Correction], target: TargetInfo) -> JudgmentRecord:
    """``j`` with the latest of ``corrections`` (this judgment's) applied; ``j`` itself unchanged."""
    mine = [c for c in _latest(corrections).values() if c.interaction_id == j.interaction_id and c.sample == j.sample]
    if not mine or j.scores is None:
        return j
    scores = dict(j.scores)
    replies = [r.model_copy(deep=True) for r in j.replies or []]
    answers = dict(j.answers or {})
    for c in (c for c in mine if c.unit == "reply"):
        r = next((r for r in replies if str(r.turn) == c.ref), None)
        if r is None:
            continue
        if c.axis in target.axes:
            r.level = str(c.to_value)
        else:
            r.flags[c.axis] = c.to_value == "yes"
    if any(c.unit == "reply" and c.axis in target.axes for c in mine) and replies:
        scores[target.axes[0]] = min(_level_value(target, r.level) for r in replies)
    for c in sorted((c for c in mine if c.unit == "question"), key=lambda c: c.id or 0):
        answers[c.ref] = str(c.to_value)
        scores[c.axis] = c.derived
    for c in (c for c in mine if c.unit == "conversation"):
        scores[c.axis] = c.to_value
    return j.model_copy(update={"scores": scores, "average": mean_of(scores),
                                "replies": replies if j.replies is not None else None,
                                "answers": answers if j.answers is not None or answers else None})


def apply_corrections(run: Run, corrections: list[Correction]) -> tuple[list[JudgmentRecord], CorrectionTally]:
    """The run's judgments with ``corrections`` applied, and what changed."""
    out: list[JudgmentRecord] = []
    tally = CorrectionTally(corrections=len(_latest(corrections)))
    for j in run.judgments:
        c = corrected(j, corrections, run.target)
        changed = [ax for ax in (j.scores or {}) if (c.scores or {}).get(ax) != (j.scores or {}).get(ax)]
        tally.scores += len(changed)
        if changed and j.interaction_id not in tally.ids:
            tally.ids.append(j.interaction_id)
        out.append(c)
    tally.conversations = len(tally.ids)
    return out, tally


# ----------------------------------------------------------------------- making one


def _score_value(target: TargetInfo, axis: str, text: str, protocol: str) -> Value:
    """A conversation-level value for ``axis`` from the reviewer's text."""
    t = text.strip()
    if t.lower() in NOT_RELEVANT_WORDS:
        if axis not in target.not_relevant:
            raise MindEvalError(f"{axis} cannot be rated not relevant", field="--to")
        return None
    for lv in target.scale.levels:
        if t.lower() in (lv.id.lower(), lv.label.lower()):
            return lv.value
    try:
        v = float(t)
    except ValueError:
        raise MindEvalError(f"{t!r} is not a value of the scale ({_scale_words(target)})", field="--to") from None
    values = target.values()
    if target.scale.kind == "categorical" and v not in values:
        raise MindEvalError(f"{t} is not a value of the scale ({_scale_words(target)})", field="--to")
    if not min(values) <= v <= max(values):
        raise MindEvalError(f"{t} is not a score from {min(values)} to {max(values)}", field="--to")
    if not v.is_integer() and protocol != "paper":
        raise MindEvalError(f"{t} is not a whole number", field="--to")
    return int(v) if v.is_integer() else v


def _scale_words(target: TargetInfo) -> str:
    return ", ".join(f"{lv.id} = {lv.value}" for lv in target.scale.levels)


def _level_id(target: TargetInfo, text: str) -> str:
    t = text.strip().lower()
    for lv in target.scale.levels:
        if t in (lv.id.lower(), lv.label.lower(), str(lv.value)):
            return lv.id
    raise MindEvalError(f"{text!r} is not a level of the scale ({_scale_words(target)})", field="--to")


def _flag_ids(target: TargetInfo) -> list[str]:
    flags = (target.reply_scale or {}).get("flags") or []
    return [str(f["id"]) if isinstance(f, dict) else str(f) for f in flags]


def _reply_change(target: TargetInfo, j: JudgmentRecord, req: CorrectionRequest) -> tuple[str, Value, Value]:
    """``(ref, from, to)`` of a reply correction."""
    if target.unit != "reply" or not j.replies:
        raise MindEvalError(f"target {target.name} judges no single replies", field="--reply")
    assert req.reply is not None
    if not 1 <= req.reply <= len(j.replies):
        raise MindEvalError(f"reply {req.reply} does not exist (the conversation has {len(j.replies)} judged "
                            "replies, numbered from 1)", field="--reply")
    r = j.replies[req.reply - 1]
    if req.axis in target.axes:
        return str(r.turn), r.level, _level_id(target, req.to)
    flags = _flag_ids(target)
    if req.axis not in flags:
        raise MindEvalError(f"{req.axis!r} is neither the axis {target.axes[0]} nor a flag "
                            f"({', '.join(flags) or 'none'})", field="--axis")
    to = req.to.strip().lower()
    if to not in ("yes", "no"):
        raise MindEvalError(f"a flag is yes or no, not {req.to!r}", field="--to")
    return str(r.turn), "yes" if r.flags.get(req.axis) else "no", to


def _question_change(run: Run, j: JudgmentRecord, req: CorrectionRequest) -> tuple[str, Value, Value, Value]:
    """``(ref, from, to, derived axis value)`` of a question correction."""
    from .judging.rubric import NOT_RELEVANT, derive_level
    from .targets import load_target

    target = run.target
    qids = target.questions.get(req.axis)
    if qids is None:
        raise MindEvalError(f"{req.axis!r} has no questions (axes with questions: "
                            f"{', '.join(target.questions) or 'none'})", field="--axis")
    if req.question not in qids:
        raise MindEvalError(f"{req.question!r} is not a question of {req.axis} ({', '.join(qids)})", field="--question")
    loaded = load_target(target.name)
    if loaded.sha256 != target.sha256:
        raise MindEvalError(f"target {target.name} changed since this run (its questions may differ); "
                            "correct question answers with the target version the run used", field="--question")
    g = loaded.guidelines
    axis = next(a for a in g.judge_axes if a.code == req.axis)
    q = next(q for q in axis.questions if q.id == req.question)
    to = req.to.strip().lower().replace(" ", "_")
    if to not in q.answers:
        raise MindEvalError(f"{req.question} is answered {', '.join(q.answers)}, not {req.to!r}", field="--to")
    answers = {**(j.answers or {}), req.question: to}
    try:
        level, _ = derive_level(axis.questions, axis.rule, answers, [(lv.id, lv.value) for lv in g.levels])
    except ValueError as exc:
        raise MindEvalError(f"the corrected answers are incomplete: {exc}; correct that question first",
                            field="--question") from None
    derived = None if level in (None, NOT_RELEVANT) else g.value_of(level)
    return req.question, (j.answers or {}).get(req.question), to, derived


def _reviewer(req: CorrectionRequest) -> tuple[str, WhoSource]:
    """Who makes the correction and how that is known: a typed name is self-declared unless the
    caller says it authenticated it; no name is this computer's user."""
    typed = (req.who or "").strip()
    if typed:
        return typed, req.who_source or "self-declared"
    return getpass.getuser(), "os-user"


def _change(run: Run, j: JudgmentRecord, req: CorrectionRequest, who: tuple[str, WhoSource]) -> Correction:
    target = run.target
    base = dict(run_id=run.config.run_id, interaction_id=j.interaction_id, judge_model=j.judge_model,  # type: ignore[union-attr]
                sample=j.sample, axis=req.axis, reason=req.reason.strip(), who=who[0], who_source=who[1])
    if req.reply is not None:
        ref, old, new = _reply_change(target, j, req)
        return Correction(unit="reply", ref=ref, from_value=old, to_value=new, **base)
    if req.question is not None:
        ref, old, new, derived = _question_change(run, j, req)
        return Correction(unit="question", ref=ref, from_value=old, to_value=new, derived=derived, **base)
    if req.axis not in target.axes:
        raise MindEvalError(f"{req.axis!r} is not an axis of target {target.name} ({', '.join(target.axes)})",
                            field="--axis")
    return Correction(unit="conversation", from_value=(j.scores or {}).get(req.axis),
                      to_value=_score_value(target, req.axis, req.to, j.protocol), **base)


def _samples(run: Run, req: CorrectionRequest) -> list[JudgmentRecord]:
    mine = [j for j in run.judgments if j.interaction_id == req.interaction_id]
    if not mine:
        raise MindEvalError(f"no judgment of interaction {req.interaction_id!r} in this run", field="--interaction")
    if req.sample is not None:
        mine = [j for j in mine if j.sample == req.sample]
        if not mine:
            raise MindEvalError(f"interaction {req.interaction_id!r} has no judge sample {req.sample}",
                                field="--sample")
    failed = [j.sample for j in mine if j.parse_status != "ok"]
    if failed:
        raise MindEvalError(f"judge sample(s) {', '.join(map(str, failed))} of {req.interaction_id!r} failed: "
                            "there is no judge value to correct (give --sample for an ok one)", field="--sample")
    return mine


def correct(run_dir: str | Path, req: CorrectionRequest, db: str | None = None) -> list[Correction]:
    """Record ``req`` against the run in ``run_dir`` (one correction per judge sample it covers) and
    return what was stored. ``from`` is the value in force before (the judge's, or an earlier
    correction's). Nothing of the judge's record changes."""
    if not req.reason.strip():
        raise MindEvalError("a correction needs a reason (why the judge's value is wrong)", field="--reason")
    if req.reply is not None and req.question is not None:
        raise MindEvalError("give --reply or --question, not both", field="--question")
    who = _reviewer(req)
    run = read_run(run_dir)
    if run.config is None or run.config.run_id is None:
        raise MindEvalError("not a run directory (config.json with a run_id not found)", path=run_dir)
    store = Database(store_url(run_dir, db))
    try:
        earlier = read_corrections(store, run.config.run_id)
        changes = [_change(run, corrected(j, earlier, run.target), req, who) for j in _samples(run, req)]
        return append_corrections(store, changes)
    finally:
        store.close()


def describe(c: Correction) -> str:
    """One line: ``who (how known) at: interaction sample N, where, AXIS from → to (reason)``."""
    at = c.at.strftime("%Y-%m-%d %H:%M:%S UTC") if c.at else "?"
    return (f"{c.who_shown()} {at}: {c.interaction_id} sample {c.sample}, {c.where()}, {c.axis} "
            f"{_show(c.from_value)} → {_show(c.to_value)} ({c.reason})")


def _show(v: Value) -> str:
    return "not relevant" if v is None else str(v)



# ----------------------------------------------------------------------- few-shot examples


def corrected_fewshot(run_dir: str | Path, k: int, seed: int, target_name: str) -> tuple[list[FewShotExample], str]:
    """``--fewshot-file RUN_DIR``: ``k`` of the run's corrected conversations (a correction changed one of
    their scores) drawn with ``seed`` (:func:`~mindeval.judging.fewshot.draw_ids`), each with its corrected
    scores (mean over the judge's ok samples per axis); and a SHA-256 of the examples (the run's record).
    A conversation with an axis rated not relevant is left out (an example shows a value per axis)."""
    import hashlib
    import json

    from .judging.fewshot import draw_ids
    from .records import INTAKE_FIELDS

    run = read_run(run_dir)
    if run.config is None:
        raise MindEvalError("not a run directory (config.json not found)", path=run_dir, field="--fewshot-file")
    if run.target.name != target_name:
        raise MindEvalError(f"a run of target {run.target.name}; this run's target is {target_name}",
                            path=run_dir, field="--fewshot-file")
    judgments, tally = apply_corrections(run, run_corrections(run_dir))
    by_id = {i.id: i for i in run.interactions}
    pool: dict[str, FewShotExample] = {}
    for iid in tally.ids:
        samples = [j.scores for j in judgments if j.interaction_id == iid and j.scores is not None]
        if any(v is None for s in samples for v in s.values()):
            continue
        i = by_id[iid]
        pool[iid] = FewShotExample(
            intake={f: str((i.member_attributes or {}).get(f, "")) for f in INTAKE_FIELDS},
            messages=[m.model_dump(include={"role", "content"}) for m in i.messages],
            scores={ax: sum(float(s[ax]) for s in samples) / len(samples) for ax in run.target.axes},  # type: ignore[arg-type]
            interaction_id=iid)
    if k > len(pool):
        raise MindEvalError(f"{len(pool)} corrected conversation(s) to draw {k} few-shot examples from "
                            "(give --fewshot-k or correct more)", path=run_dir, field="--fewshot-file")
    examples = [pool[i] for i in draw_ids(list(pool), k, seed)]
    blob = json.dumps([e.model_dump() for e in examples], sort_keys=True).encode()
    return examples, hashlib.sha256(blob).hexdigest()
