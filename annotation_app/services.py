"""The service layer: the only API the pages (and the admin CLI) use.

Every call names the person making it (a :class:`Viewer`); annotator calls only
reach that person's own assignments and sessions, and admin calls require an
admin. Views returned to annotators are blinded (see :mod:`annotation_app.store.models`).
The queries themselves live in :mod:`annotation_app.store`; this layer adds
the permission checks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from annotation_app.store import (
    exporters,
    form_actions,
    gold,
    importers,
    people,
    ratings,
    review,
    signins,
    studies,
    tickets,
)
from annotation_app.store.common import (
    AccessDenied,
    Conflict,
    NotFound,
    RatingIncomplete,
    ReplyFailed,
    SignedOut,
    Stale,
    TimeUp,
)
from annotation_app.store.importers import parse_annotator_map
from annotation_app.store.migrations import upgrade
from annotation_app.store.models import (
    AnnotatorInfo,
    AssignReport,
    FlagView,
    GoldItemView,
    GoldSettings,
    ImportReport,
    ItemView,
    QualificationView,
    QueueEntry,
    RoleplayView,
    SessionEntry,
    SignedIn,
    SignInEvent,
    StudyInfo,
    StudyItemEntry,
    StudyProgress,
    StudyResults,
    StudySpec,
    SubAxisView,
    Viewer,
)
from annotation_app.store.raters import RATERS_FORMAT, RaterTable, rater_table, raters_jsonl
from annotation_app.store.ratings import na_value
from annotation_app.store.signins import SignInThrottled
from mindeval.corrections import CorrectionRequest
from mindeval.errors import MindEvalError
from mindeval.store import Database
from mindeval.targets import DEFAULT_TARGET, Target, builtin_names, load_target
from mindeval.targets.guidelines import Guidelines

from . import results, roleplay

DB_ENV = "MINDEVAL_APP_DB"
DEFAULT_DB_FILE = "mindeval-app.db"
SYSTEM = Viewer(id=0, name="command line", is_admin=True)


def default_db_url() -> str:
    """``$MINDEVAL_APP_DB`` or ``mindeval-app.db`` (SQLite) in the working directory."""
    return os.environ.get(DB_ENV) or f"sqlite:///{Path(DEFAULT_DB_FILE).resolve()}"


class Workspace:
    """One annotation database: opened, migrated to the newest schema, ready to use."""

    def __init__(self, url: str | None = None) -> None:
        self.db = Database(url or default_db_url())
        upgrade(self.db.engine)
        self._targets: dict[str, Target] = {}
        self._assignment_targets: dict[tuple[int, int], str] = {}
        self._actions: dict[tuple[int, str], int] = {}  # (person, browser tab) → highest form action taken here
        self._actions_lock = threading.Lock()

    def target(self, ref: str = DEFAULT_TARGET) -> Target:
        """A target by the reference a study stores (loaded once per workspace)."""
        t = self._targets.get(ref)
        if t is None:
            t = self._targets[ref] = load_target(ref)
        return t

    @staticmethod
    def target_names() -> list[str]:
        """The built-in targets, ``mindeval`` first."""
        names = builtin_names()
        return sorted(names, key=lambda n: (n != DEFAULT_TARGET, n))

    def study_target(self, study: int | str | None = None) -> Target:
        """A study's target (``mindeval`` when no study is given)."""
        return self.target(DEFAULT_TARGET if study is None else studies.study_target(self.db, study))

    def guidelines(self, study: int | str | None = None) -> Guidelines:
        """The guidelines of a study's target (of ``mindeval`` when no study is given)."""
        return self.study_target(study).guidelines

    def _rating_guidelines(self, v: Viewer, assignment_id: int) -> Guidelines:
        """The guidelines of an assignment's study; its target is looked up (ownership checked)
        once per assignment: neither an assignment's study nor a study's target ever changes."""
        ref = self._assignment_targets.get((v.id, assignment_id))
        if ref is None:
            ref = self._assignment_targets[(v.id, assignment_id)] = ratings.assignment_target(
                self.db, v.id, assignment_id)
        return self.target(ref).guidelines

    def close(self) -> None:
        self.db.close()

    def is_empty(self) -> bool:
        return studies.is_empty(self.db)

    # ------------------------------------------------------------ sign-in

    def _live(self, v: Viewer) -> None:
        """Refuse a write from a session that has ended (e.g. signed out in another tab)."""
        people.check_session(self.db, v, SYSTEM.id)

    def _admin(self, v: Viewer) -> None:
        if not v.is_admin:
            raise AccessDenied("only an admin can do this")
        self._live(v)

    def sign_in(self, name: str, code: str, client: str = "") -> SignedIn | None:
        """``None`` when name and code do not match; raises SignInThrottled after repeated failures."""
        return people.sign_in(self.db, name, code, client)

    def signin_events(self, v: Viewer, limit: int = 100) -> list[SignInEvent]:
        """The audit log of failed and throttled sign-ins, newest first (admins)."""
        self._admin(v)
        return signins.recent(self.db, limit)

    def viewer(self, token: str | None) -> Viewer | None:
        return people.viewer_for_token(self.db, token)

    def sign_out(self, token: str) -> None:
        people.sign_out(self.db, token)

    def issue_ticket(self, token: str) -> str:
        """A one-time ticket that any app process on this database exchanges for ``token`` (60 s)."""
        return tickets.issue(self.db, token)

    def redeem_ticket(self, ticket: str | None) -> str | None:
        """The token of a valid ticket, which is used up; else ``None``."""
        return tickets.redeem(self.db, ticket)

    # ------------------------------------------------------------ annotator: overview

    def subaxes(self, study: int | str | None = None) -> list[SubAxisView]:
        """The rating form of a study (of the ``mindeval`` target when no study is given)."""
        return ratings.subaxis_views(self.guidelines(study))

    def my_studies(self, v: Viewer) -> list[StudyProgress]:
        """Studies with work for this person, with done/total."""
        return studies.my_studies(self.db, v.id)

    # ------------------------------------------------------------ form actions

    def first_time(self, v: Viewer, tab: str, seq: int) -> bool:
        """Whether the form action ``seq`` of browser tab ``tab`` (numbered 1, 2, … there) is new for
        this person: ``True`` once in this process (a trigger that reaches it twice, e.g. replayed by
        a rerun cut short, is applied once) and only while no process has recorded it applied
        (:meth:`applied`; a Submit re-sent to another process after this one died)."""
        if not form_actions.is_new(self.db, v.id, tab, seq):
            return False
        with self._actions_lock:
            if seq <= self._actions.get((v.id, tab), 0):
                return False
            self._actions[(v.id, tab)] = seq
            return True

    def applied(self, v: Viewer, tab: str, seq: int) -> None:
        """Record form action ``seq`` of tab ``tab`` applied, for every process (once it is stored:
        a process dying before this leaves the action to the one the browser re-sends it to)."""
        form_actions.mark(self.db, v.id, tab, seq)

    def form_wrote(self, v: Viewer, assignment_id: int, versions: tuple[int, int], tab: str, seq: int) -> None:
        """Record that form state ``seq`` of tab ``tab`` wrote versions ``versions`` (first, last)
        of ``v``'s rating ``assignment_id``, for every process."""
        form_actions.wrote(self.db, v.id, assignment_id, versions, tab, seq)

    def form_writes(self, v: Viewer, assignment_id: int, after: int) -> list[tuple[int, int, str, int]]:
        """``(first, last, tab, seq)``: which form states wrote the versions of ``v``'s rating
        ``assignment_id`` after version ``after``, in order (as far as recorded)."""
        return form_actions.writes_after(self.db, v.id, assignment_id, after)

    # ------------------------------------------------------------ annotator: rating

    def queue(self, v: Viewer, study_id: int) -> list[QueueEntry]:
        return ratings.queue(self.db, v.id, study_id)

    def qualification(self, v: Viewer, study_id: int) -> QualificationView:
        """Where this person stands with the study's qualification (her own only)."""
        return gold.my_qualification(self.db, int(study_id), v.id, na_value(self.guidelines(study_id)))

    def resume_target(self, v: Viewer, study_id: int) -> int | None:
        return ratings.resume_target(self.db, v.id, study_id)

    def item(self, v: Viewer, assignment_id: int) -> ItemView:
        return ratings.item_view(self.db, self._rating_guidelines(v, assignment_id), v.id, assignment_id)

    def save_value(self, v: Viewer, assignment_id: int, subaxis: str, value: int | None, *,
                   version: int | None = None) -> int:
        """Autosave one score; ``version``: the rating version the page shows (an older one than
        stored raises :class:`Stale`). Returns the new version."""
        self._live(v)
        return ratings.save_value(self.db, self._rating_guidelines(v, assignment_id), v.id, assignment_id, subaxis,
                                  value, version=version)

    def save_answer(self, v: Viewer, assignment_id: int, question: str, answer: str | None, *,
                    version: int | None = None) -> int:
        """Autosave one answer to an item-level target's question (levels follow); returns the new version."""
        self._live(v)
        return ratings.save_answer(self.db, self._rating_guidelines(v, assignment_id), v.id, assignment_id,
                                   question, answer, version=version)

    def save_reply(self, v: Viewer, assignment_id: int, turn: int, *, level: str | None = None,
                   flag: str | None = None, on: bool = False, version: int | None = None) -> int:
        """Autosave one reply's level and/or one flag (``unit: reply`` targets); returns the new version."""
        self._live(v)
        return ratings.save_reply(self.db, self._rating_guidelines(v, assignment_id), v.id, assignment_id, turn,
                                  level=level, flag=(flag, on) if flag is not None else None, version=version)

    def save_text(self, v: Viewer, assignment_id: int, *, justification: str | None = None,
                  safety_note: str | None = None, version: int | None = None) -> int:
        self._live(v)
        return ratings.save_text(self.db, v.id, assignment_id, justification=justification, safety_note=safety_note,
                                 version=version)

    def submit(self, v: Viewer, assignment_id: int, *, version: int | None = None) -> int:
        self._live(v)
        return ratings.submit(self.db, self._rating_guidelines(v, assignment_id), v.id, assignment_id, version=version)

    def set_flag(self, v: Viewer, assignment_id: int, flag: str | None, reason: str = "") -> None:
        """Skip an item or flag a problem with it, with a reason (``None`` clears it)."""
        self._live(v)
        ratings.set_flag(self.db, v.id, assignment_id, flag, reason)

    def add_active_time(self, v: Viewer, assignment_id: int, seconds: float) -> None:
        self._live(v)
        ratings.add_active_time(self.db, v.id, assignment_id, seconds)

    def revise(self, v: Viewer, assignment_id: int) -> None:
        self._live(v)
        ratings.revise(self.db, v.id, assignment_id)

    # ------------------------------------------------------------ annotator: role-play

    def sessions(self, v: Viewer, study_id: int) -> list[SessionEntry]:
        return roleplay.sessions(self.db, v.id, study_id)

    def roleplay(self, v: Viewer, session_id: int) -> RoleplayView:
        return roleplay.view(self.db, v.id, session_id)

    def start_session(self, v: Viewer, session_id: int) -> None:
        self._live(v)
        roleplay.start(self.db, v.id, session_id)

    def send_message(self, v: Viewer, session_id: int, text: str, on_text: Callable[[str], None] | None = None) -> bool:
        """Store the message and get the reply; ``True``: queued behind a reply being written."""
        self._live(v)
        return roleplay.send(self.db, v.id, session_id, text, on_text)

    def retry_reply(self, v: Viewer, session_id: int, on_text: Callable[[str], None] | None = None) -> None:
        self._live(v)
        roleplay.reply(self.db, v.id, session_id, on_text)

    def finish_session(self, v: Viewer, session_id: int) -> int:
        self._live(v)
        return roleplay.finish(self.db, v.id, session_id)

    # ------------------------------------------------------------ admin

    def add_annotator(self, v: Viewer, name: str, *, admin: bool = False, code: str | None = None) -> tuple[AnnotatorInfo, str]:
        self._admin(v)
        return people.add_annotator(self.db, name, admin=admin, code=code)

    def reset_code(self, v: Viewer, name: str, code: str | None = None) -> str:
        self._admin(v)
        return people.reset_code(self.db, name, code)

    def annotators(self, v: Viewer) -> list[AnnotatorInfo]:
        self._admin(v)
        return people.list_annotators(self.db)

    def create_study(self, v: Viewer, name: str, kind: str, *, target: str | Path = DEFAULT_TARGET, **kw) -> StudyInfo:
        """A new study rating with ``target``'s form (a built-in name, or a target's folder)."""
        self._admin(v)
        t = load_target(target)
        ref = t.name if t.is_builtin else str(t.root.resolve())
        spec = StudySpec(name=name, kind=kind, target=ref, guidelines_version=t.guidelines.version, **kw)
        return studies.create_study(self.db, spec)

    def studies(self, v: Viewer) -> list[StudyInfo]:
        self._admin(v)
        return studies.list_studies(self.db)

    def study(self, v: Viewer, ref: int | str) -> StudyInfo:
        self._admin(v)
        return studies.study_info(self.db, ref)

    def import_path(self, v: Viewer, study: int | str, path: str | Path, kind: str | None = None, *,
                    map_annotators: dict[str, str] | None = None) -> ImportReport:
        self._admin(v)
        t = self.study_target(study)
        return importers.import_path(self.db, t.guidelines, study, path, kind, map_annotators=map_annotators,
                                     target=t)

    def add_roleplay_items(self, v: Viewer, rating_study: int | str, roleplay_study: int | str) -> int:
        self._admin(v)
        return studies.add_roleplay_items(self.db, rating_study, roleplay_study)

    def assign(self, v: Viewer, study: int | str, *, annotators: list[str] | None = None, k: int | None = None,
               per_system: int | None = None) -> AssignReport:
        self._admin(v)
        return studies.assign(self.db, study, annotators=annotators, k=k, per_system=per_system)

    def flags(self, v: Viewer, study: int | str) -> list[FlagView]:
        """Items annotators skipped or flagged, with their reasons (admins)."""
        self._admin(v)
        return ratings.flagged(self.db, studies.study_info(self.db, study).id)

    def disagreements(self, v: Viewer, study: int | str, min_gap: int = 2) -> list[review.Disagreement]:
        """Items whose raters differ by ``min_gap`` or more on a sub-axis (admins)."""
        self._admin(v)
        return review.disagreements(self.db, self.guidelines(study), study, min_gap)

    def adjudicate(self, v: Viewer, study: int | str, item_id: int, values: dict[str, int], justification: str,
                   safety_note: str | None = None) -> int:
        """Store the adjudicated rating of an item (rater "adjudicated"); returns its revision."""
        self._admin(v)
        return review.adjudicate(self.db, self.guidelines(study), study, item_id, values, justification,
                                 safety_note=safety_note, by=v.name)

    def gold_settings(self, v: Viewer, study: int | str) -> GoldSettings:
        self._admin(v)
        with self.db.read() as s:
            row = studies.get_study(s, study)
        return gold.settings(self.db, row)

    def set_gold_settings(self, v: Viewer, study: int | str, *, gold_rate: float | None = None,
                          qualify_n: int | None = None, qualify_pass: float | None = None) -> GoldSettings:
        """Share of gold items among a rater's items, and the qualification (N gold items, pass share)."""
        self._admin(v)
        return gold.update_settings(self.db, studies.study_info(self.db, study).id, gold_rate=gold_rate,
                                    qualify_n=qualify_n, qualify_pass=qualify_pass)

    def mark_gold(self, v: Viewer, study: int | str, item: str, expected: dict[str, int | str], *,
                  tolerance: int = 0, note: str = "", replace: bool = False) -> bool:
        """Mark an item of the study gold (expected value per sub-axis, tolerance); ``False``: unchanged."""
        self._admin(v)
        g = self.guidelines(study)
        entry = {"item": item, "expected": expected, "tolerance": tolerance, "note": note}
        return bool(gold.mark_entries(self.db, g, na_value(g), studies.study_info(self.db, study).id,
                                      [(f"item '{item}'", entry)], replace))

    def import_gold(self, v: Viewer, study: int | str, path: str | Path, *, replace: bool = False) -> int:
        """Mark the items of a gold file (JSON Lines: item, expected, tolerance, note); all or none."""
        self._admin(v)
        g = self.guidelines(study)
        return gold.mark_entries(self.db, g, na_value(g), studies.study_info(self.db, study).id,
                                 gold.read_file(path), replace)

    def gold_items(self, v: Viewer, study: int | str) -> list[GoldItemView]:
        self._admin(v)
        return gold.gold_items(self.db, studies.study_info(self.db, study).id)

    def study_items(self, v: Viewer, study: int | str) -> list[StudyItemEntry]:
        """A study's items by the ids a gold file names them (``mindeval app admin list items``)."""
        self._admin(v)
        return gold.study_items(self.db, studies.study_info(self.db, study).id)

    def raters(self, v: Viewer, study: int | str) -> RaterTable:
        """Per-rater quality: gold accuracy, time per item, skips, flags, leave-one-out agreement, drift."""
        self._admin(v)
        return rater_table(self.db, self.guidelines(study), study)

    def results(self, v: Viewer, study: int | str) -> StudyResults:
        self._admin(v)
        return results.study_results(self.db, self.guidelines(study), study)

    def _may_correct(self, v: Viewer) -> None:
        if not v.is_admin:
            raise AccessDenied("only an admin can correct a judge's values")

    def judged_items(self, v: Viewer, study: int | str) -> list:
        """Admin: the study's items imported from run directories, with the judge's samples (correctable)."""
        self._may_correct(v)
        from annotation_app.store.judge_answers import judged_items

        return judged_items(self.db, study)

    def correct_judge(self, v: Viewer, study: int | str, item: str, req: CorrectionRequest) -> list:
        """Admin: record a correction of one judge value of ``item`` in its run's store (mindeval.corrections),
        under the signed-in person's name (recorded as signed in); the judge's record is kept."""
        self._may_correct(v)
        from mindeval.corrections import correct

        found = next((x for x in self.judged_items(v, study) if x.item == item), None)
        if found is None:
            raise MindEvalError(f"item {item!r} of this study has no judge record from a run directory")
        return correct(found.run_dir, req.model_copy(update={"interaction_id": found.interaction_id, "who": v.name,
                                                           "who_source": "signed-in"}))

    def judge_corrections(self, v: Viewer, study: int | str) -> list:
        """Admin: the corrections of the study's judged items, oldest first (who, when, from, to, why)."""
        from mindeval.corrections import run_corrections

        items = self.judged_items(v, study)
        ids = {x.interaction_id for x in items}
        return [c for d in dict.fromkeys(x.run_dir for x in items) for c in run_corrections(d) if c.interaction_id in ids]

    def judge_answers(self, v: Viewer, study: int | str) -> list:
        """Admin: the judge's answers to an item-level rubric, per item (why each level was given)."""
        self._admin(v)
        from annotation_app.store.judge_answers import judge_answers

        return judge_answers(self.db, self.guidelines(study), study)

    def export_text(self, v: Viewer, study: int | str, fmt: str) -> str:
        self._admin(v)
        t = self.study_target(study)
        if fmt == RATERS_FORMAT:
            return raters_jsonl(self.db, t.guidelines, study)
        return exporters.export_text(self.db, t.guidelines, study, fmt, t)

    def export_file(self, v: Viewer, study: int | str, fmt: str, out: str | Path) -> int:
        self._admin(v)
        t = self.study_target(study)
        if fmt == RATERS_FORMAT:  # one JSON object per rater
            text = raters_jsonl(self.db, t.guidelines, study)
            Path(out).write_text(text, encoding="utf-8")
            return text.count("\n")
        return exporters.export_file(self.db, t.guidelines, study, fmt, out, t)


__all__ = [
    "DB_ENV", "SYSTEM", "AccessDenied", "Conflict", "MindEvalError", "NotFound", "RatingIncomplete",
    "ReplyFailed", "SignInThrottled", "SignedOut", "Stale", "TimeUp", "Workspace", "default_db_url",
    "parse_annotator_map",
]
