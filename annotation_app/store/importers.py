"""Bring interactions, profiles and ratings into a study.

Accepted inputs (detected from the path, or forced with ``kind``):

* ``run`` — a ``mindeval run`` output directory (``interactions.jsonl``, and
  ``judgments.jsonl`` whose scores are kept for the admin only);
* ``interactions`` — a JSONL file of interactions (``id``, ``model``,
  ``member_attributes``, ``messages``), e.g. ``data/demo_transcripts.jsonl``, or the
  authors' interaction layout (``member_profile`` + ``interaction``);
* ``authors`` — the authors' ``human_annotations.jsonl``, including its ratings;
* ``profiles`` — a ``profiles.jsonl`` file, for role-play studies;
* ``ratings`` — the app's own ratings export (``--format jsonl``), at the judge's unit too
  (:mod:`.import_ratings`).

Nothing is dropped silently: every problem in a file is collected and reported as
``file:line:field`` and then nothing at all is imported. Re-importing identical rows
is a no-op, but an id that is already in the workspace with different content is a
problem. Imported ratings belong to imported (inactive) annotators unless the admin
maps a file's annotator to a person explicitly.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mindeval.errors import MindEvalError
from mindeval.judging.authors import (
    JUSTIFICATION,
    RESP,
    SAFETY,
    STATUS,
    USERS,
    is_authors_row,
    load_mapping,
    read_authors,
    row_attributes,
    row_messages,
)
from mindeval.records import (
    CONFIG_FILE,
    INTERACTIONS_FILE,
    JUDGMENTS_FILE,
    InteractionRecord,
    JudgmentRecord,
    TargetInfo,
    profile_from_json,
    read_jsonl,
    validate_row,
)
from mindeval.rundir import run_target
from mindeval.store.db import Database
from mindeval.targets import DEFAULT_TARGET, Target, as_target, target_identity
from mindeval.targets.guidelines import Guidelines

from .import_ratings import import_ratings, is_ratings_row
from .models import ImportReport
from .people import imported_annotator
from .studies import get_study
from .tables import (
    AnnotatorRow,
    AssignmentRow,
    ItemRow,
    RatingRevisionRow,
    RatingRow,
    RatingValueRow,
    StudyItemRow,
    StudyProfileRow,
    StudyRow,
)

KINDS = ("run", "interactions", "authors", "profiles", "ratings")
_AUTHORS_META = ("key_order", "annotator_order")  # our own keys in an authors' item's meta


class ImportProblems(MindEvalError):
    """Every problem found in one import; nothing was imported."""

    def __init__(self, path: Path, problems: list[MindEvalError]) -> None:
        self.problems = problems
        n = len(problems)
        head = f"{path}: {n} problem{'s' if n != 1 else ''}, nothing was imported"
        super().__init__(head + "".join(f"\n  {p}" for p in problems))


class _Problems:
    """Collects problems instead of stopping at the first one."""

    def __init__(self, path: Path) -> None:
        self.path, self.items = path, []

    @contextmanager
    def collect(self) -> Iterator[None]:
        try:
            yield
        except MindEvalError as exc:
            self.items.append(exc)

    def raise_any(self) -> None:
        """Raise the one problem as it is, or all of them together; nothing is then imported."""
        if len(self.items) == 1:
            raise self.items[0]
        if self.items:
            raise ImportProblems(self.path, self.items)


def _rows(path: Path, problems: _Problems) -> list[tuple[int, dict[str, Any]]]:
    rows = list(read_jsonl(path, problems.items))
    if not rows:
        problems.raise_any()
        raise MindEvalError("the file is empty: there is nothing to import", path=path)
    return rows


def _is_authors_interaction(obj: dict[str, Any]) -> bool:
    return isinstance(obj.get("interaction"), list) and "member_profile" in obj and "messages" not in obj


def detect_kind(path: Path) -> str:
    if path.is_dir():
        if (path / "interactions.jsonl").is_file():
            return "run"
        raise MindEvalError("directory has no interactions.jsonl (is it a `mindeval run` output?)", path=path)
    problems = _Problems(path)
    for _n, obj in _rows(path, problems):
        if is_authors_row(obj):
            return "authors"
        if is_ratings_row(obj):
            return "ratings"
        if "messages" in obj or _is_authors_interaction(obj):
            return "interactions"
        if "member_narrative" in obj or "member_attributes" in obj:
            return "profiles"
        break
    raise MindEvalError("cannot tell what this file holds (interactions, profiles or the authors' ratings)", path=path)


def parse_annotator_map(pairs: list[str]) -> dict[str, str]:
    """``["FILE_ID=NAME", ...]`` (blank entries ignored) → ``{file id: person's name}``."""
    mapped: dict[str, str] = {}
    for pair in pairs:
        if not pair.strip():
            continue
        file_id, sep, name = pair.partition("=")
        if not sep or not file_id.strip() or not name.strip():
            raise MindEvalError(f"expected FILE_ID=NAME, not {pair!r}", field="map-annotator")
        mapped[file_id.strip()] = name.strip()
    return mapped


def import_path(db: Database, g: Guidelines, study_ref: int | str, path: str | Path, kind: str | None = None,
                *, map_annotators: dict[str, str] | None = None, target: Target | str | None = None) -> ImportReport:
    """Import a file or run directory into a study (see the module docstring).

    ``g`` and ``target`` (default ``mindeval``) are the study's target's: a run directory of
    another target is refused, and so are the authors' ratings for a target not in their form
    (``authors_release``).
    ``map_annotators`` maps annotator ids of an authors' file to existing people
    whose accounts should hold those ratings.
    """
    p = Path(path)
    name = target.name if isinstance(target, Target) else target or DEFAULT_TARGET  # loaded when needed
    if not p.exists():
        raise MindEvalError("file not found", path=p)
    kind = kind or detect_kind(p)
    if kind not in KINDS:
        raise MindEvalError(f"unknown import kind '{kind}' (one of {', '.join(KINDS)})", field="kind")
    if map_annotators and kind not in ("authors", "ratings"):
        raise MindEvalError("only ratings files have annotators to map", field="map-annotator")
    with db.read() as s:
        study = get_study(s, study_ref)
        study_id, study_kind = study.id, study.kind
    want = "roleplay" if kind == "profiles" else "rating"
    if study_kind != want:
        raise MindEvalError(
            f"{kind} go into a {want} study, but '{study.name}' is a {study_kind} study", path=p, field="study"
        )
    if kind == "profiles":
        return _import_profiles(db, study_id, p)
    if kind == "ratings":
        return import_ratings(db, g, study_id, p, map_annotators or {})
    in_run = p.name == INTERACTIONS_FILE and (p.parent / CONFIG_FILE).is_file()  # a run's own file: as the run
    run_dir = p if kind == "run" else p.parent if in_run else None
    info = run_target(run_dir) if run_dir is not None else None
    if info is not None and info.name != name:
        raise MindEvalError(f"this run is of target '{info.name}' but study '{study.name}' rates target "
                            f"'{name}': import it into a study created with --target {info.name}",
                            path=p, field="target")
    if run_dir is not None and info is not None:  # a run directory always has its target
        _same_version(info, as_target(target), study.name, p)
    if kind == "run" and info is not None:
        judgments = _judgments(p / JUDGMENTS_FILE, info) if (p / JUDGMENTS_FILE).is_file() else {}
        return _import_interactions(db, study_id, p / INTERACTIONS_FILE, "run", judgments)
    if kind == "interactions":
        return _import_interactions(db, study_id, p, "demo" if p.name.startswith("demo_") else "file", {})
    if not as_target(target).manifest.authors_release:
        raise MindEvalError(f"the authors' ratings use the MindEval form, but study '{study.name}' rates target "
                            f"'{name}'", path=p, field="target")
    return _import_authors(db, g, study_id, p, map_annotators or {})


# ------------------------------------------------------------------ helpers


def _same_version(made_with: TargetInfo, rates: Target, study: str, path: Path) -> None:
    """Refuse a run made with another version of the study's target (same name, other files):
    its scale, items or prompts may differ. Compared by the target's hash, as the leaderboard does."""
    if made_with.sha256 == rates.sha256:
        return
    raise MindEvalError(f"this run was made with target {target_identity(made_with)} but study '{study}' rates "
                        f"{target_identity(TargetInfo.model_validate(rates.info()))}: another version of the "
                        "target; import it into a study of that version", path=path, field="target")


def _from_authors_layout(obj: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    """A row of the authors' interaction files (``member_profile`` + ``interaction``) in our layout.

    The profile's narrative and both thinking traces are kept in the item's metadata;
    rows without an ``id`` get one from their content, so re-importing is a no-op.
    """
    renamed = {"member_attributes": "member_profile", "messages": "interaction"}
    try:
        profile = row_attributes({"member_attributes": obj.get("member_profile")}, path, line)
        msgs = row_messages({"messages": obj.get("interaction")}, path, line)
    except MindEvalError as exc:  # name the fields as this file calls them
        field = exc.field or ""
        head = field.split(".")[0]
        raise MindEvalError(exc.message, path=path, line=line, field=renamed.get(head, head) + field[len(head):]) \
            from None
    row = {k: v for k, v in obj.items() if k not in ("member_profile", "interaction")}
    digest = hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    row.setdefault("id", f"authors-{digest}")
    row["member_attributes"] = {k: v for k, v in profile.items() if k != "member_narrative"}
    if "member_narrative" in profile:
        row["member_narrative"] = profile["member_narrative"]
    row["messages"] = msgs
    return row


def _next_position(s, table, study_id: int) -> int:
    cur = s.scalar(select(func.max(table.position)).where(table.study_id == study_id))
    return 0 if cur is None else cur + 1


_COMPARED = {"messages": "transcript", "member_attributes": "member profile", "clinician_model": "clinician model"}


def _add_item(s, report: ImportReport, study_id: int, external_id: str, shown_id: str, path: Path, line: int,
              **fields: Any) -> ItemRow:
    """Find the item by external id or create it; link it to the study either way.

    An existing item with a different transcript, profile or model is a problem: the
    file reuses an id for another interaction.
    """
    item = s.scalar(select(ItemRow).where(ItemRow.external_id == external_id))
    if item is None:
        item = ItemRow(external_id=external_id, **fields)
        s.add(item)
        s.flush()
        report.items_added += 1
    else:
        for key, what in _COMPARED.items():
            if getattr(item, key) != fields[key]:
                origin = (item.meta or {}).get("source_line")
                where = f"{item.source_ref}:{origin}" if origin else item.source_ref
                raise MindEvalError(f"id '{shown_id}' is already in the workspace with a different {what} "
                                    f"(from {where}); give each interaction its own id",
                                    path=path, line=line, field=key)
        report.items_reused += 1
    linked = s.scalar(select(StudyItemRow.id).where(StudyItemRow.study_id == study_id, StudyItemRow.item_id == item.id))
    if linked is None:
        s.add(StudyItemRow(study_id=study_id, item_id=item.id, position=_next_position(s, StudyItemRow, study_id)))
        s.flush()
        report.items_linked += 1
    return item


def _judgments(path: Path, target: TargetInfo) -> dict[str, list[dict[str, Any]]]:
    """Judge scores per interaction, checked against the run's target like every reader does."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in JudgmentRecord.read(path, {"target": target}):
        keep = {"judge_model", "sample", "scores", "average", "parse_status"} | ({"answers"} if j.answers else set()) \
            | ({"replies"} if j.replies else set())
        out[j.interaction_id].append(j.model_dump(mode="json", include=keep))
    return out


# ------------------------------------------------------------------ interactions


def _import_interactions(db: Database, study_id: int, path: Path, source: str,
                         judgments: dict[str, list[dict[str, Any]]]) -> ImportReport:
    report = ImportReport(kind="run" if source == "run" else "interactions")
    problems = _Problems(path)
    rows = _rows(path, problems)
    with db.write() as s:
        for line, obj in rows:
            before = len(problems.items)
            if _is_authors_interaction(obj):
                with problems.collect():
                    obj = _from_authors_layout(obj, path, line)
                if len(problems.items) > before:
                    continue
            with problems.collect():
                if "id" not in obj:
                    raise MindEvalError("missing required field", path=path, line=line, field="id")
                if source == "run":  # a run directory's rows follow the run-directory schema
                    validate_row(InteractionRecord, obj, path=path, line=line)
            status = obj.get("status", "complete")
            if status != "complete":
                report.skipped += 1
                report.warnings.append(f"{path.name}:{line}: skipped interaction {obj.get('id')} with status '{status}'")
                continue
            with problems.collect():
                msgs = row_messages(obj, path, line)
            with problems.collect():
                attrs = row_attributes(obj, path, line)
            if len(problems.items) > before:
                continue
            run_id = obj.get("run_id")
            ext = f"{source}:{run_id}:{obj['id']}" if run_id else f"{source}:{obj['id']}"
            meta: dict[str, Any] = {"source_line": line}
            for key in ("run_id", "profile_id", "patient_model", "severe", "id", "session", "member_narrative",
                        "clinician_thinking_traces", "member_thinking_traces"):
                if key in obj:
                    meta[key] = obj[key]
            if str(obj["id"]) in judgments:
                meta["judgments"] = judgments[str(obj["id"])]
            with problems.collect():
                _add_item(s, report, study_id, ext, str(obj["id"]), path, line, source=source, source_ref=str(path),
                          member_attributes=attrs, messages=msgs, clinician_model=obj.get("model"),
                          patient_kind="model", meta=meta)
        problems.raise_any()  # inside the transaction: nothing is written
    return report


# ------------------------------------------------------------------ profiles


def _import_profiles(db: Database, study_id: int, path: Path) -> ImportReport:
    report = ImportReport(kind="profiles")
    problems = _Problems(path)
    rows = _rows(path, problems)
    with db.write() as s:
        pos = _next_position(s, StudyProfileRow, study_id)
        for line, obj in rows:
            with problems.collect():
                p = profile_from_json(obj, path=path, line=line)
                # profile ids are content hashes: the same id is the same profile
                have = s.scalar(select(StudyProfileRow.id).where(StudyProfileRow.study_id == study_id,
                                                                  StudyProfileRow.profile_id == p.id))
                if have is not None:
                    report.skipped += 1
                    continue
                s.add(StudyProfileRow(study_id=study_id, profile_id=p.id, profile_json=p.to_json(), position=pos))
                s.flush()
                pos += 1
                report.profiles_added += 1
        problems.raise_any()
    return report


# ------------------------------------------------------------------ the authors' ratings


class _Slots:
    """Per-annotator accumulators of one authors' row, remembering first-seen order."""

    def __init__(self, per_user: dict[str, dict[str, Any]], order: list[str]) -> None:
        self.per_user, self.order = per_user, order

    def __call__(self, user: str) -> dict[str, Any]:
        if user not in self.per_user:
            self.per_user[user] = {"values": {}, "extra": {}, "status": {}, "justification": None, "safety": None}
            self.order.append(user)
        return self.per_user[user]


def _authors_keys(mapping_fields: dict[str, str | None]) -> set[str]:
    """The keys of an authors' row that hold ratings we read (and then write back)."""
    keys = {"id", "model", "member_attributes", "messages"}
    for base in [*mapping_fields, JUSTIFICATION, SAFETY]:
        keys.update((base + RESP, base + USERS, base + STATUS))
    return keys


def _import_authors(db: Database, g: Guidelines, study_id: int, path: Path, mapped: dict[str, str]) -> ImportReport:
    mapping = load_mapping(guidelines=g, every_subaxis=True)
    consumed = _authors_keys(mapping.fields)
    report = ImportReport(kind="authors")
    problems = _Problems(path)
    rows = read_authors(path, mapping, problems=problems.items)
    if not rows and not problems.items:
        raise MindEvalError("the file is empty: there is nothing to import", path=path)
    seen_users: set[str] = set()
    with db.write() as s:
        ctx = _AuthorsImport(s=s, study=s.get(StudyRow, study_id), path=path, report=report, g=g, mapped=mapped)
        for row in rows:
            per_user: dict[str, dict[str, Any]] = {}
            order: list[str] = []
            slot = _Slots(per_user, order)
            for user, key, value, status in row.responses:
                rec = slot(user)
                if key in (JUSTIFICATION, SAFETY):
                    rec["justification" if key == JUSTIFICATION else "safety"] = "" if value is None else str(value)
                elif mapping.fields[key] is None:
                    rec["extra"][key] = value
                else:
                    rec["values"][mapping.fields[key]] = value
                rec["status"][key] = status
            seen_users.update(order)
            meta = {k: v for k, v in row.raw.items() if k not in consumed and k not in _AUTHORS_META}
            meta["key_order"] = list(row.raw.keys())
            meta["annotator_order"] = order
            with problems.collect():
                item = _add_item(s, report, study_id, f"authors:{row.raw['id']}", row.id, path, row.line,
                                 source="authors", source_ref=str(path), member_attributes=row.member_attributes,
                                 messages=row.messages, clinician_model=row.model, patient_kind="model",
                                 meta={"authors": meta, "id": row.raw["id"], "source_line": row.line})
                for user in order:
                    _store_imported_rating(ctx, item, user, per_user[user], row.line)
        unknown = sorted(set(mapped) - seen_users)
        if unknown:
            problems.items.append(MindEvalError(
                f"{', '.join(unknown)}: not an annotator in this file", path=path, field="map-annotator"))
        problems.raise_any()
    return report


@dataclass
class _AuthorsImport:
    """What every rating of one authors-format import shares: the session, study, file, report,
    form, the ``--map-annotator`` names and the annotators met so far (by the file's user key)."""

    s: Session
    study: StudyRow
    path: Path
    report: ImportReport
    g: Guidelines
    mapped: dict[str, str]
    people: dict[str, AnnotatorRow] = dataclass_field(default_factory=dict)


def _store_imported_rating(ctx: _AuthorsImport, item: ItemRow, user: str, rec: dict[str, Any], line: int) -> None:
    """One annotator's rating of ``item`` from line ``line``; an identical one already there is kept."""
    s, study, path, report, g, mapped, people = ctx.s, ctx.study, ctx.path, ctx.report, ctx.g, ctx.mapped, ctx.people
    person = people.get(user)
    if person is None:  # once per annotator and import
        try:
            person, new = imported_annotator(s, user, mapped)
        except MindEvalError as exc:
            raise MindEvalError(exc.message, path=path, line=line, field=exc.field) from None
        people[user] = person
        report.annotators_added += int(new)
    statuses = set(rec["status"].values())
    submitted = statuses <= {"submitted", None}
    extra = {"criteria": rec["extra"], "status": rec["status"], "justification_given": rec["justification"] is not None}
    a = s.scalar(select(AssignmentRow).where(AssignmentRow.study_id == study.id, AssignmentRow.item_id == item.id,
                                             AssignmentRow.annotator_id == person.id))
    if a is not None:
        rating = s.scalar(select(RatingRow).where(RatingRow.assignment_id == a.id))
        have = {k: v for k, v in s.execute(select(RatingValueRow.subaxis, RatingValueRow.value)
                                           .where(RatingValueRow.rating_id == rating.id)).all()} if rating else {}
        if rating is not None and have == rec["values"] and rating.justification == (rec["justification"] or "") \
                and rating.extra.get("criteria") == rec["extra"]:
            report.ratings_unchanged += 1
            return
        raise MindEvalError(f"annotator {person.name} already has a different rating of this item in the study",
                            path=path, line=line, field="criterion_1.responses.users")
    pos = s.scalar(select(func.max(AssignmentRow.position)).where(AssignmentRow.study_id == study.id,
                                                                  AssignmentRow.annotator_id == person.id))
    a = AssignmentRow(study_id=study.id, item_id=item.id, annotator_id=person.id, position=0 if pos is None else pos + 1)
    s.add(a)
    s.flush()
    rating = RatingRow(assignment_id=a.id, state="submitted" if submitted else "draft", revision=1 if submitted else 0,
                       version=0, justification=rec["justification"] or "", safety_note=rec["safety"],
                       extra=json.loads(json.dumps(extra)))
    s.add(rating)
    s.flush()
    for sub, v in rec["values"].items():
        s.add(RatingValueRow(rating_id=rating.id, subaxis=sub, value=v))
    if submitted:
        s.add(RatingRevisionRow(rating_id=rating.id, revision=1, action="import", values_json=rec["values"],
                                justification=rating.justification, safety_note=rating.safety_note))
    bad_na = [sub for sub, v in rec["values"].items() if v == 0 and not g.subaxis(sub).allow_na]
    if bad_na:
        report.warnings.append(f"{path.name}:{line}: {user} left {', '.join(bad_na)} unrated (0)")
    report.ratings_added += 1
