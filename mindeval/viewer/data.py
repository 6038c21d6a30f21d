"""Conversations of run directories, joined with their judgments and the call log's usage."""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, Field

from ..corrections import describe, run_corrections
from ..records import DEFAULT_MEMORY, InteractionRecord, JudgmentRecord, Message, Run, SessionInfo
from ..rundir import read_run
from ..scoring import AVERAGE, as_floats, relevant_scores

SEVERITY = {True: "severe", False: "non-severe"}


class RoleUsage(BaseModel):
    """Calls, tokens and dollars of one role in one conversation (from ``run.db``)."""

    role: str
    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # None: no call had a price


class Conversation(BaseModel):
    """One interaction of a run as the viewer shows it."""

    run: str  # the run directory's name
    run_path: str
    interaction_id: str
    profile_id: str
    profile_name: str = ""
    clinician: str
    patient_model: str | None = None
    judge_model: str | None = None
    status: str
    error: str | None = None
    severe: bool = False
    axes: tuple[str, ...]
    questions: dict[str, list[str]] = Field(default_factory=dict)  # item-level targets: question ids per axis
    messages: list[Message]
    judgments: list[JudgmentRecord] = Field(default_factory=list)
    usage: list[RoleUsage] = Field(default_factory=list)
    session: SessionInfo | None = None  # multi-session targets: which session, the notes it started with
    schedule: dict[str, str] = Field(default_factory=dict)  # its session's drawn schedule (target.yaml schedule)
    memory_title: str = DEFAULT_MEMORY.title  # whose memory the session started with (target.yaml memory.writer)
    # the target's own profile labels of this profile (``concern: everyday``); none: the paper's severity split
    profile_labels: dict[str, str] = Field(default_factory=dict)
    # reviewers' corrections of this conversation's judge values, one line each (mindeval.corrections.describe)
    corrections: list[str] = Field(default_factory=list)

    @property
    def schedule_line(self) -> str:
        """The session's drawn schedule as ``name: value`` pairs (empty when none was drawn)."""
        return " · ".join(f"{k}: {v}" for k, v in self.schedule.items())

    @property
    def memory_line(self) -> str:
        """The heading of the memory a session started with, and how many older entries a bounded
        log left out (``memory.max_entries``)."""
        dropped = self.session.memory_dropped if self.session is not None else None
        return f"{self.memory_title} at the start of this session" + (
            f" ({dropped} older {'entry' if dropped == 1 else 'entries'} left out by the bound)" if dropped else "")

    @property
    def session_label(self) -> str:
        """``session k of N`` (empty for a single-session run)."""
        s = self.session
        return f"session {s.session} of {s.sessions}" if s is not None else ""

    @property
    def key(self) -> str:
        return f"{self.run}/{self.interaction_id}"

    @property
    def label(self) -> str:
        """The profile's label in its target's own words (``concern: everyday``); a target without
        profile labels (MindEval): the paper's severity split, ``severe`` or ``non-severe``."""
        if self.profile_labels:
            return ", ".join(f"{k}: {v}" for k, v in self.profile_labels.items())
        return SEVERITY[self.severe]

    @property
    def failed(self) -> bool:
        """The conversation or any of its judge samples failed, or it was never judged."""
        return (self.status != "complete" or not self.judgments
                or any(j.parse_status != "ok" for j in self.judgments))

    @property
    def errors(self) -> list[str]:
        out = [f"interaction: {self.error}"] if self.error else []
        if self.status != "complete" and not self.error:
            out.append(f"interaction: {self.status}")
        out += [f"judge sample {j.sample}: {j.error or 'reply could not be parsed'}"
                for j in self.judgments if j.parse_status != "ok"]
        if self.status == "complete" and not self.judgments:
            out.append("not judged")
        return out

    def score(self, dimension: str = AVERAGE) -> float | None:
        """The scorer's reading of this conversation's parsed judge samples (:func:`mindeval.scoring.relevant_scores`:
        per dimension the mean of the samples that rated it, ``average`` over its relevant dimensions)."""
        got = [as_floats(j.scores) for j in self.judgments if j.parse_status == "ok" and j.scores]
        if not got or dimension not in (*self.axes, AVERAGE):
            return None
        value = relevant_scores(got, tuple(self.axes))[dimension]
        return None if math.isnan(value) else value

    @property
    def tokens(self) -> int:
        return sum(u.prompt_tokens + u.completion_tokens for u in self.usage)

    @property
    def cost_usd(self) -> float | None:
        costs = [u.cost_usd for u in self.usage if u.cost_usd is not None]
        return sum(costs) if costs else None


def _usage(run: Run) -> dict[str, dict[str, RoleUsage]]:
    """Per interaction id and role, the calls logged in the run's SQLite store (empty without one)."""
    db_path = Path(run.path) / "run.db"
    run_id = run.config.run_id if run.config else None
    if not db_path.is_file() or not run_id:
        return {}
    from sqlalchemy import select

    from ..store import Database, sqlite_url
    from ..store.tables import CallRow

    ids = {i.id for i in run.interactions}
    out: dict[str, dict[str, RoleUsage]] = {}
    db = Database(sqlite_url(db_path))
    try:
        with db.read() as s:
            rows = s.execute(select(CallRow.tag, CallRow.role, CallRow.status, CallRow.prompt_tokens,
                                    CallRow.completion_tokens, CallRow.cost_usd)
                             .where(CallRow.run_id == run_id)).all()
    finally:
        db.close()
    for tag, role, status, prompt, completion, cost in rows:
        head = tag.removeprefix("judge:").rsplit(":", 1)[0] if tag.startswith("judge:") else tag.rsplit(":", 1)[0]
        iid = next((i for i in (head, head.rsplit(":", 1)[0]) if i in ids), None)
        if iid is None:
            continue
        u = out.setdefault(iid, {}).setdefault(role, RoleUsage(role=role))
        u.calls += 1
        u.failed_calls += status != "ok"
        u.prompt_tokens += prompt or 0
        u.completion_tokens += completion or 0
        if cost is not None:
            u.cost_usd = (u.cost_usd or 0.0) + cost
    return out


def _conversation(run: Run, i: InteractionRecord, judgments: list[JudgmentRecord],
                  usage: dict[str, RoleUsage], corrections: list[str]) -> Conversation:
    name = str(i.member_attributes.get("name", "")) if i.member_attributes else ""
    return Conversation(
        profile_labels=run.target.profile_labels.get(i.profile_id, {}), corrections=corrections,
        run=Path(run.path).name, run_path=run.path, interaction_id=i.id, profile_id=i.profile_id,
        profile_name=name, clinician=i.model, patient_model=i.patient_model,
        judge_model=judgments[0].judge_model if judgments else None, status=i.status, error=i.error,
        severe=i.severe, axes=run.axes, questions=run.target.questions, messages=i.messages,
        judgments=sorted(judgments, key=lambda j: j.sample), usage=[usage[r] for r in sorted(usage)],
        session=i.session if i.session is not None and i.session.sessions > 1 else None,  # one session: no boundary
        schedule=(i.session.schedule if i.session is not None else None) or {},
        memory_title=(getattr(run.target, "memory", None) or DEFAULT_MEMORY).title,
    )


def load_conversations(run_dirs: list[str | Path]) -> list[Conversation]:
    """Every interaction of every run directory (read through :func:`mindeval.rundir.read_run`)."""
    out: list[Conversation] = []
    for d in run_dirs:
        run = read_run(d)
        by_id: dict[str, list[JudgmentRecord]] = {}
        for j in run.judgments:
            by_id.setdefault(j.interaction_id, []).append(j)
        usage = _usage(run)
        fixes: dict[str, list[str]] = {}
        for c in run_corrections(d):
            fixes.setdefault(c.interaction_id, []).append(describe(c))
        out += [_conversation(run, i, by_id.get(i.id, []), usage.get(i.id, {}), fixes.get(i.id, []))
                for i in run.interactions]
    return out


def filter_conversations(conversations: list[Conversation], *, failed: bool | None = None,
                         dimension: str = AVERAGE, low: float | None = None, high: float | None = None,
                         labels: list[str] | None = None, runs: list[str] | None = None) -> list[Conversation]:
    """Conversations that match: failed or not, ``low`` ≤ score of ``dimension`` ≤ ``high``, a label, a run.

    A score bound leaves out conversations without a score on that dimension.
    """
    out = []
    for c in conversations:
        if failed is not None and c.failed != failed:
            continue
        if labels and c.label not in labels:
            continue
        if runs and c.run not in runs:
            continue
        if low is not None or high is not None:
            s = c.score(dimension)
            if s is None or (low is not None and s < low) or (high is not None and s > high):
                continue
        out.append(c)
    return out
