"""Studies: creation, their items or profiles, and balanced seeded assignment."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from mindeval.config import DEFAULT_PROMPTS
from mindeval.errors import MindEvalError
from mindeval.llm.gateway import EMBEDDED_MODEL
from mindeval.store.db import Database
from mindeval.targets import DEFAULT_TARGET

from . import gold
from .assign import annotator_order, balanced_assignment, mix_gold, stratified_sample
from .common import NotFound
from .models import AnnotatorProgress, AssignReport, StudyInfo, StudyProgress, StudySpec
from .people import find_person
from .ratings import hidden, target_na
from .tables import (
    AnnotatorRow,
    AssignmentRow,
    ItemRow,
    RatingRow,
    RoleplaySessionRow,
    StudyItemRow,
    StudyProfileRow,
    StudyRow,
)

DEFAULT_MINUTES = 25  # the paper's role-play sessions lasted 25 minutes (§3.1)


def create_study(db: Database, spec: StudySpec) -> StudyInfo:
    """Add the study ``spec`` describes (role-play studies default to the embedded clinician)."""
    spec = _checked(spec)
    try:
        with db.write() as s:
            row = StudyRow(
                **spec.model_dump(),
                # other targets' role-play uses the target's own clinician prompt
                clinician_prompt=DEFAULT_PROMPTS["clinician"]
                if spec.kind == "roleplay" and spec.target == DEFAULT_TARGET else None,
            )
            s.add(row)
            s.flush()
            study_id = row.id
    except IntegrityError:
        raise MindEvalError(f"a study named '{spec.name}' already exists", field="name") from None
    return study_info(db, study_id)


def _checked(spec: StudySpec) -> StudySpec:
    """``spec`` with a stripped name and role-play defaults, or a clear error naming the field."""
    name = spec.name.strip()
    if not name:
        raise MindEvalError("a study needs a name", field="name")
    for field in ("name", "description"):
        if "\x00" in (getattr(spec, field) or ""):  # PostgreSQL refuses it; SQLite would store it
            raise MindEvalError(f"the study's {field} holds a NUL character (\\x00)", field=field)
    if spec.kind not in ("rating", "roleplay"):
        raise MindEvalError(f"kind must be 'rating' or 'roleplay', not '{spec.kind}'", field="kind")
    if spec.k < 1:
        raise MindEvalError("k (annotators per item) must be at least 1", field="k")
    if spec.kind != "roleplay":
        if spec.clinician_model or spec.minutes:
            raise MindEvalError("clinician model and minutes apply to role-play studies only", field="kind")
        return spec.model_copy(update={"name": name})
    minutes = spec.minutes or DEFAULT_MINUTES
    if minutes < 1:
        raise MindEvalError("minutes must be at least 1", field="minutes")
    clinician_model = spec.clinician_model or EMBEDDED_MODEL
    from mindeval.llm.gateway import check_model_string

    check_model_string(clinician_model)
    return spec.model_copy(update={"name": name, "minutes": minutes, "clinician_model": clinician_model})


def study_target(db: Database, ref: int | str) -> str:
    """The target reference a study rates with (a built-in name or a target's folder)."""
    with db.read() as s:
        return get_study(s, ref).target


def get_study(s, ref: int | str) -> StudyRow:
    """A study by id or by name."""
    row = None
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        row = s.get(StudyRow, int(ref))
    if row is None and isinstance(ref, str):
        row = s.scalar(select(StudyRow).where(StudyRow.name == ref.strip()))
    if row is None:
        raise NotFound(f"no study '{ref}'", field="study")
    return row


def study_info(db: Database, ref: int | str) -> StudyInfo:
    with db.read() as s:
        row = get_study(s, ref)
        if row.kind == "rating":
            n_items = s.scalar(select(func.count()).select_from(StudyItemRow).where(StudyItemRow.study_id == row.id))
            n_assign = s.scalar(select(func.count()).select_from(AssignmentRow).where(AssignmentRow.study_id == row.id))
        else:
            n_items = s.scalar(select(func.count()).select_from(StudyProfileRow).where(StudyProfileRow.study_id == row.id))
            n_assign = s.scalar(
                select(func.count()).select_from(RoleplaySessionRow).where(RoleplaySessionRow.study_id == row.id)
            )
        return StudyInfo(
            id=row.id, name=row.name, kind=row.kind, target=row.target, description=row.description, k=row.k,
            seed=row.seed, clinician_model=row.clinician_model, minutes=row.minutes,
            n_items=n_items or 0, n_assignments=n_assign or 0,
        )


def list_studies(db: Database) -> list[StudyInfo]:
    with db.read() as s:
        ids = list(s.scalars(select(StudyRow.id).order_by(StudyRow.id)))
    return [study_info(db, i) for i in ids]


def _annotators(s, names: list[str] | None) -> list[AnnotatorRow]:
    q = select(AnnotatorRow).where(AnnotatorRow.active.is_(True), AnnotatorRow.is_admin.is_(False))
    if names:
        rows = []
        for n in names:
            row = find_person(s, n)
            if row is None:
                raise MindEvalError(f"no annotator named '{n}'", field="annotators")
            rows.append(row)
        return rows
    rows = list(s.scalars(q.where(AnnotatorRow.code_hash.is_not(None)).order_by(AnnotatorRow.id)))
    if not rows:
        raise MindEvalError("the workspace has no annotators who can sign in: add some first", field="annotators")
    return rows


def _sample(s, study: StudyRow, items: list[int], n: int, kept: set[int]) -> tuple[list[int], dict[str, int]]:
    """``n`` random conversations per clinician model of a rating study (``stratified_sample``)."""
    if study.kind != "rating":
        raise MindEvalError("--per-system samples conversations of a rating study", field="per_system")
    system = {i: m or "unknown" for i, m in s.execute(
        select(ItemRow.id, ItemRow.clinician_model).where(ItemRow.id.in_(items)))}
    return stratified_sample(items, system, n, study.seed, kept)


def assign(db: Database, study_ref: int | str, *, annotators: list[str] | None = None, k: int | None = None,
           per_system: int | None = None) -> AssignReport:
    """Give every item (or profile) of the study to ``k`` of the chosen annotators, balanced and seeded.

    ``annotators`` (default: every active annotator who can sign in) is the group; ``k``
    (default: the study's) is the number of ratings per item from this group, so items
    already rated by others (imported raters, an earlier team) are assigned afresh.
    Idempotent: the group's existing assignments count, so running it again after adding
    items only assigns the new ones. Each annotator's order is a seeded shuffle.
    """
    with db.write() as s:
        study = get_study(s, study_ref)
        k = k or study.k
        people, failed = _qualified(s, study, _annotators(s, annotators))
        ids = [a.id for a in people]
        names = {a.id: a.name for a in people}
        items, rows, used = _pool(s, study)
        if not items:
            raise MindEvalError(f"study '{study.name}' has nothing to assign yet: import items first", field="study")
        existing: dict[int, set[int]] = defaultdict(set)
        next_pos: dict[int, int] = defaultdict(int)
        for item, who, pos in rows:
            existing[item].add(who)
            next_pos[who] = max(next_pos[who], pos + 1)
        for who, pos in used:
            next_pos[who] = max(next_pos[who], pos + 1)
        sampled: dict[str, int] = {}
        if per_system is not None:
            items, sampled = _sample(s, study, items, per_system, {i for i in items if existing[i] & set(ids)})
        own: dict[int, set[int]] = defaultdict(set)  # a role-player never rates her own session
        if study.kind == "rating":
            for item, who in s.execute(select(RoleplaySessionRow.item_id, RoleplaySessionRow.annotator_id)
                                       .where(RoleplaySessionRow.item_id.in_(items))):
                own[item].add(who)
        pairs = balanced_assignment(items, ids, k, study.seed, existing, own)
        per: dict[int, list[int]] = defaultdict(list)
        for item, who in pairs:
            per[who].append(item)
        n_gold = _write(s, study, per, names, next_pos)
        if k != study.k:
            study.k = k
        seed = study.seed
    got: dict[int, int] = defaultdict(int)
    for item, _who in pairs:
        got[item] += 1
    short = sum(1 for item in items if len(existing[item] & set(ids)) + got[item] < k)
    return AssignReport(created=len(pairs), per_annotator={names[w]: len(v) for w, v in per.items()}, seed=seed,
                        short=short, sampled=sampled, gold=n_gold, failed=failed)


def _write(s, study: StudyRow, per: dict[int, list[int]], names: dict[int, str], next_pos: dict[int, int]) -> int:
    """Add the new assignments (or role-play sessions) in each annotator's seeded order, gold items
    mixed in; returns how many gold items were added."""
    n_gold = 0
    for who, its in per.items():
        order = annotator_order(sorted(its), study.seed, names[who])
        if study.kind == "rating":
            n_gold += _add_rated(s, study, who, names[who], order, next_pos[who])
            continue
        for item in order:
            s.add(RoleplaySessionRow(study_id=study.id, annotator_id=who, study_profile_id=item,
                                     position=next_pos[who], status="not_started"))
            next_pos[who] += 1
    if study.kind == "rating" and study.qualify_n:  # top up qualifications that were short of gold items
        for who in sorted(set(names) - set(per)):
            if next_pos[who]:
                n_gold += _add_rated(s, study, who, names[who], [], next_pos[who])
    return n_gold


def _pool(s, study: StudyRow) -> tuple[list[int], list, list]:
    """What to assign (items or profiles; gold items are mixed in per annotator, never assigned as
    real), the existing (item, annotator, position) rows, and (annotator, last position) of all."""
    if study.kind == "rating":
        golden = gold.gold_ids(s, study.id)
        items = [i for i in s.scalars(select(StudyItemRow.item_id).where(StudyItemRow.study_id == study.id)
                                      .order_by(StudyItemRow.position)) if i not in golden]
        rows = s.execute(select(AssignmentRow.item_id, AssignmentRow.annotator_id, AssignmentRow.position)
                         .where(AssignmentRow.study_id == study.id, AssignmentRow.kind == "real")).all()
        used = s.execute(select(AssignmentRow.annotator_id, func.max(AssignmentRow.position))
                         .where(AssignmentRow.study_id == study.id).group_by(AssignmentRow.annotator_id)).all()
        return items, rows, used
    items = list(s.scalars(select(StudyProfileRow.id).where(StudyProfileRow.study_id == study.id)
                           .order_by(StudyProfileRow.position)))
    rows = s.execute(select(RoleplaySessionRow.study_profile_id, RoleplaySessionRow.annotator_id,
                            RoleplaySessionRow.position).where(RoleplaySessionRow.study_id == study.id)).all()
    return items, rows, []


def _qualified(s, study: StudyRow, people: list[AnnotatorRow]) -> tuple[list[AnnotatorRow], list[str]]:
    """The group without raters who failed the study's qualification; their real items, which
    they never saw, are released (unassigned) so that the group's other raters get them."""
    if study.kind != "rating" or not study.qualify_n:
        return people, []
    na = target_na(study.target)
    failed = [a for a in people if gold.qualification(s, study, a.id, na).status == "failed"]
    for a in failed:
        for row in s.scalars(select(AssignmentRow).where(AssignmentRow.study_id == study.id,
                                                         AssignmentRow.annotator_id == a.id,
                                                         AssignmentRow.kind == "real")):
            if s.scalar(select(RatingRow.id).where(RatingRow.assignment_id == row.id)) is None:
                s.delete(row)
    s.flush()
    return [a for a in people if a not in failed], [a.name for a in failed]


def _add_rated(s, study: StudyRow, who: int, name: str, order: list[int], pos: int) -> int:
    """Add one annotator's new real items from ``pos`` on, with the study's gold items mixed in
    (:func:`~.assign.mix_gold`; qualification items first for a rater who has none yet); returns
    how many gold items were added."""
    had = {i: k for i, k in s.execute(select(AssignmentRow.item_id, AssignmentRow.kind).where(
        AssignmentRow.study_id == study.id, AssignmentRow.annotator_id == who))}
    pool = sorted(gold.gold_ids(s, study.id) - set(had))
    qualify = max(0, (study.qualify_n or 0) - sum(1 for k in had.values() if k == "qualify"))
    mixed = mix_gold(order, pool, study.gold_rate or 0.0, qualify, study.seed, name)
    for item, kind in mixed:
        s.add(AssignmentRow(study_id=study.id, item_id=item, annotator_id=who, position=pos, kind=kind))
        pos += 1
    return sum(1 for _i, k in mixed if k != "real")


def add_roleplay_items(db: Database, rating_ref: int | str, roleplay_ref: int | str) -> int:
    """Put the finished sessions of a role-play study into a rating study; returns how many were new."""
    with db.write() as s:
        rating = get_study(s, rating_ref)
        play = get_study(s, roleplay_ref)
        if rating.kind != "rating" or play.kind != "roleplay":
            raise MindEvalError("give a rating study first, then a role-play study", field="study")
        if rating.target != play.target:
            raise MindEvalError(f"'{play.name}' plays target '{play.target}' but '{rating.name}' rates target "
                                f"'{rating.target}': put the sessions into a rating study of the same target",
                                field="study")
        item_ids = list(s.scalars(
            select(RoleplaySessionRow.item_id).where(RoleplaySessionRow.study_id == play.id,
                                                     RoleplaySessionRow.status == "finished",
                                                     RoleplaySessionRow.item_id.is_not(None))
            .order_by(RoleplaySessionRow.id)))
        linked = set(s.scalars(select(StudyItemRow.item_id).where(StudyItemRow.study_id == rating.id)))
        pos = (s.scalar(select(func.max(StudyItemRow.position)).where(StudyItemRow.study_id == rating.id)) or -1) + 1
        new = 0
        for item_id in item_ids:
            if item_id in linked:
                continue
            s.add(StudyItemRow(study_id=rating.id, item_id=item_id, position=pos))
            pos += 1
            new += 1
        return new


def is_empty(db: Database) -> bool:
    """True when the database has neither studies nor people."""
    with db.read() as s:
        n = (s.scalar(select(func.count()).select_from(StudyRow)) or 0) + \
            (s.scalar(select(func.count()).select_from(AnnotatorRow)) or 0)
    return n == 0


def my_studies(db: Database, annotator_id: int) -> list[StudyProgress]:
    """Studies with work for this person, with done/total."""
    out = []
    with db.read() as s:
        rated = s.execute(
            select(StudyRow, func.count(AssignmentRow.id),
                   func.count(RatingRow.id).filter(RatingRow.state == "submitted"))
            .join(AssignmentRow, AssignmentRow.study_id == StudyRow.id)
            .outerjoin(RatingRow, RatingRow.assignment_id == AssignmentRow.id)
            .where(AssignmentRow.annotator_id == annotator_id).group_by(StudyRow.id).order_by(StudyRow.id)
        ).all()
        played = s.execute(
            select(StudyRow, func.count(RoleplaySessionRow.id),
                   func.count(RoleplaySessionRow.id).filter(RoleplaySessionRow.status == "finished"))
            .join(RoleplaySessionRow, RoleplaySessionRow.study_id == StudyRow.id)
            .where(RoleplaySessionRow.annotator_id == annotator_id).group_by(StudyRow.id).order_by(StudyRow.id)
        ).all()
        rated = [_shown_counts(s, study, annotator_id) or (study, total, done) for study, total, done in rated]
        rated = [(study, total, done) for study, total, done in rated if total]  # nothing visible: not listed
    for study, total, done in list(rated) + list(played):
        out.append(StudyProgress(study_id=study.id, name=study.name, kind=study.kind,
                                 description=study.description, done=done, total=total))
    return sorted(out, key=lambda p: p.study_id)


def _shown_counts(s, study: StudyRow, annotator_id: int) -> tuple[StudyRow, int, int] | None:
    """(study, total, done) counting only the items an annotator can see (her qualification items)
    while her qualification is pending or failed; ``None`` when nothing is hidden."""
    cond = hidden(s, study.id, annotator_id)
    if not cond:
        return None
    total, done = s.execute(
        select(func.count(AssignmentRow.id), func.count(RatingRow.id).filter(RatingRow.state == "submitted"))
        .outerjoin(RatingRow, RatingRow.assignment_id == AssignmentRow.id)
        .where(AssignmentRow.annotator_id == annotator_id, AssignmentRow.study_id == study.id, *cond)).one()
    return study, total, done


def progress(db: Database, study: StudyRow) -> list[AnnotatorProgress]:
    """Per-annotator progress of a study (submitted/drafts, or finished/active sessions)."""
    with db.read() as s:
        if study.kind == "rating":
            rows = s.execute(
                select(AnnotatorRow.name, func.count(AssignmentRow.id),
                       func.count(RatingRow.id).filter(RatingRow.state == "submitted"),
                       func.count(RatingRow.id).filter(RatingRow.state == "draft"))
                .join(AssignmentRow, AssignmentRow.annotator_id == AnnotatorRow.id)
                .outerjoin(RatingRow, RatingRow.assignment_id == AssignmentRow.id)
                .where(AssignmentRow.study_id == study.id)
                .group_by(AnnotatorRow.name).order_by(AnnotatorRow.name)
            ).all()
        else:
            rows = s.execute(
                select(AnnotatorRow.name, func.count(RoleplaySessionRow.id),
                       func.count(RoleplaySessionRow.id).filter(RoleplaySessionRow.status == "finished"),
                       func.count(RoleplaySessionRow.id).filter(RoleplaySessionRow.status == "active"))
                .join(RoleplaySessionRow, RoleplaySessionRow.annotator_id == AnnotatorRow.id)
                .where(RoleplaySessionRow.study_id == study.id)
                .group_by(AnnotatorRow.name).order_by(AnnotatorRow.name)
            ).all()
    return [AnnotatorProgress(name=n, assigned=a, submitted=d, drafts=p) for n, a, d, p in rows]
