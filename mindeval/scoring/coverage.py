"""Partial judging (``partial_judging: true`` in target.yaml): what counts, and how much was judged.

Under the strict rule (the default) a conversation counts only when every judge sample it was asked
for parsed, every reply of a reply-level sample was judged, and (sessions > 1) every session of its
member counts. Under the partial rule every judged unit counts: a reply-level sample with some replies
judged counts with those replies (its value the worst of them), a conversation counts with its parsed
samples, a member with its counted sessions; a member with no judged unit is left out.

What the partial rule hides is reported beside every figure: the **coverage**, judged units over the
units the judge was asked to rate (replies under reply-level judging, else judge samples), with its
Wilson 95% interval and n, and the refusal rate (``mindeval.judging.refusals``). A clinician could
raise its score by making its worst replies fail to be judged; its coverage and refusal rate show it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, computed_field

from ..records import TargetInfo
from ..stats.proportion import wilson_interval

Sample = Any  # a judge sample as either store writes it (mindeval.scoring.scorer.Sample)


class Unit(Protocol):
    """A conversation of the run (:class:`mindeval.scoring.scorer.Unit`)."""

    interaction_id: str
    profile_id: str
    member: str
    n_replies: int


class Coverage(BaseModel):
    """Under the partial rule: ``k`` units judged of the ``n`` the judge was asked to rate."""

    unit: str  # "reply" | "judge sample"
    k: int
    n: int
    conversations_asked: int = 0  # conversations with a judge round for every requested sample
    members_asked: int = 0
    members_left_out: int = 0  # members asked with no judged unit
    refused: int = 0  # judge rounds that ended refused (mindeval.judging.refusals)
    rounds: int = 0  # every judge round of the samples asked

    @computed_field  # type: ignore[prop-decorator]
    @property
    def share(self) -> float | None:
        return round(self.k / self.n, 4) if self.n else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ci95(self) -> tuple[float, float] | None:
        """The judged share's Wilson 95% interval (None: nothing asked)."""
        ci = self.interval()
        return (round(ci[0], 4), round(ci[1], 4)) if ci else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def refused_share(self) -> float | None:
        return round(self.refused / self.rounds, 4) if self.rounds else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def refused_ci95(self) -> tuple[float, float] | None:
        ci = wilson_interval(self.refused, self.rounds) if self.rounds else None
        return (round(ci[0], 4), round(ci[1], 4)) if ci else None

    @property
    def left_out(self) -> int:
        return self.n - self.k

    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.k, self.n) if self.n else None

    def add(self, other: Coverage) -> Coverage:
        """Two runs' coverage together (a pooled system)."""
        return Coverage(unit=self.unit, **{f: getattr(self, f) + getattr(other, f) for f in (
            "k", "n", "conversations_asked", "members_asked", "members_left_out", "refused", "rounds")})

    def block(self) -> dict[str, Any]:
        """The summary's and leaderboard.json's reading: judged units and refused rounds, each k, n,
        share and its Wilson 95% interval; what was left out."""
        return {"unit": self.unit, **_share(self.k, self.n), "left_out": self.left_out,
                "conversations_asked": self.conversations_asked, "members_asked": self.members_asked,
                "members_left_out": self.members_left_out, "refused_rounds": _share(self.refused, self.rounds)}


def _share(k: int, n: int) -> dict[str, Any]:
    ci = wilson_interval(k, n) if n else None
    return {"k": k, "n": n, "share": round(k / n, 4) if n else None,
            "ci95": [round(ci[0], 4), round(ci[1], 4)] if ci else None}


def plural(unit: str) -> str:
    return "replies" if unit == "reply" else f"{unit}s"


def share_cell(k: int, n: int) -> str:
    """``76% [64%, 85%] (45/59)``: a share with its Wilson 95% interval and n."""
    if not n:
        return "n/a"
    lo, hi = wilson_interval(k, n)
    return f"{100 * k / n:.0f}% [{100 * lo:.0f}%, {100 * hi:.0f}%] ({k}/{n})"


def with_judged_replies(judgments: Iterable[Sample], target: TargetInfo) -> list[Sample]:
    """Reply-level samples under the partial rule: a failed sample with judged replies reads as parsed,
    its value the worst judged reply's (as a complete sample's is); its refusal stays counted apart."""
    value = {lv.id: lv.value for lv in target.scale.levels}
    out = []
    for j in judgments:
        if j.parse_status != "ok" and j.replies:
            worst = min(value[r.level] for r in j.replies)
            update: dict[str, Any] = {"parse_status": "ok", "scores": {target.axes[0]: worst}}
            if "average" in type(j).model_fields:
                update["average"] = float(worst)
            j = j.model_copy(update=update)
        out.append(j)
    return out


def coverage(units: Sequence[Unit], judgments: Sequence[Sample], parsed: dict[str, list[Sample]],
             counted: Sequence[Unit], samples: int, target: TargetInfo) -> Coverage:
    """How many units the judge was asked to rate and rated over ``units`` (the run's conversations,
    or one session's), and its refused rounds (:func:`mindeval.judging.refusals.refusal_counts`)."""
    from ..judging.refusals import refusal_counts

    by_id = {u.interaction_id: u for u in units}
    requested = set(range(samples))
    mine = [j for j in judgments if j.sample in requested and j.interaction_id in by_id]
    asked = {(j.interaction_id, j.sample) for j in mine}
    reply = target.unit == "reply"
    n = sum(by_id[i].n_replies if reply else 1 for i, _ in asked)
    k = sum(len(j.replies or []) if reply else 1 for i, js in parsed.items() if i in by_id
            for j in js if j.sample in requested)
    whole = {i for i, _ in asked if all((i, s) in asked for s in requested)}
    members = {by_id[i].member for i, _ in asked}
    c = refusal_counts(j for j in judgments if j.interaction_id in by_id)  # as the leaderboard's column counts
    return Coverage(unit="reply" if reply else "judge sample", k=k, n=n, conversations_asked=len(whole),
                    members_asked=len(members), members_left_out=len(members - {u.member for u in counted}),
                    refused=c["n_refused_rounds"], rounds=c["n_judge_rounds"])


def session_coverage(units: Sequence[Unit], judgments: Sequence[Sample], parsed: dict[str, list[Sample]],
                     counted: Sequence[Unit], samples: int, target: TargetInfo) -> dict[int, Coverage]:
    """:func:`coverage` per session number of a multi-session run (empty with one session)."""
    if target.sessions < 2:
        return {}
    from ..sessions import session_of

    groups: dict[int, list[Unit]] = {}
    for u in units:
        groups.setdefault(session_of(u.interaction_id, u.profile_id), []).append(u)
    ids = {u.interaction_id for u in counted}
    return {k: coverage(g, judgments, parsed, [u for u in g if u.interaction_id in ids], samples, target)
            for k, g in sorted(groups.items())}


def partial_line(block: dict[str, Any]) -> str:
    """The console's line on the partial rule: coverage, what was left out and the refusal rate."""
    r, unit = block["refused_rounds"], block["unit"]
    return (f"partial judging (target.yaml partial_judging): every judged {unit} counts; judged "
            f"{share_cell(block['k'], block['n'])} of the {plural(unit)} asked, {block['left_out']} left out "
            f"({block['members_left_out']} of {block['members_asked']} members had none judged and are left out); "
            f"refused judge rounds {share_cell(r['k'], r['n'])}")
