"""Loaders: human ratings and judge scores as long score frames.

Every source becomes one or more :class:`RaterScores`, whose frame has the columns
``profile_id, system, interaction_id, run, axis, score`` (axis over the target's axes
and ``average``). Raters are matched on ``(profile_id, system)``: the same patient
profile talking to the same clinician system. With a multi-session target the rated unit is a
session: session k > 1 of profile ``P`` is keyed ``P#s<k>`` (:func:`unit_key`), for judges and
humans alike.

Human sources: the authors' ``human_annotations.jsonl`` (through the configurable
criterion → sub-axis mapping), a study of the annotation platform (:func:`load_study`: its
ratings as data, read from the database by the command line), a ratings file
(:func:`load_ratings_file`, one sub-axis rating per row, any target) or any frame of
sub-axis ratings (:func:`humans_from_ratings`). Judge sources: a ``mindeval run``
directory or a ``metaeval judge`` directory (both hold ``judgments.jsonl``; the
target's dimensions come from its ``config.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from mindeval.errors import MindEvalError
from mindeval.judging.authors import (
    AUTHORS_PAPER_RATERS,
    CriteriaMapping,
    authors_by_id,
    authors_profile,
    load_mapping,
    profile_key,
)
from mindeval.records import (
    CONFIG_FILE,
    JUDGMENTS_FILE,
    JudgmentRecord,
    Profile,
    RunConfig,
    TargetInfo,
    read_jsonl,
)
from mindeval.rundir import read_config, read_run, run_target
from mindeval.sessions import unit_key
from mindeval.study_data import HumanScore, HumanScores, StudyRatings

from .rollup import AVERAGE, RATING_COLUMNS, Dimensions, judge_axis_frame, rollup

SCORE_COLUMNS: tuple[str, ...] = ("profile_id", "system", "interaction_id", "run", "axis", "score")


@dataclass
class RaterScores:
    """All scores of one rater (a human, or a judge with one or more runs)."""

    label: str
    kind: Literal["human", "judge"]
    source: str
    frame: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    target: TargetInfo | None = None  # a judge run's target block (human raters: None)

    @property
    def runs(self) -> int:
        return int(self.frame["run"].nunique()) if len(self.frame) else 0


@dataclass
class AnnotatedInteraction:
    """An interaction that humans rated: what a judge needs to score it again."""

    interaction_id: str
    profile_id: str
    system: str
    profile: Profile
    messages: list[dict[str, str]]
    line: int | None = None
    memory: str | None = None  # a session of a multi-session run: the notes its clinician started it with
    schedule: dict[str, str] | None = None  # a run's session with a target.yaml schedule: its drawn values


@dataclass
class HumanSource:
    """Human raters of one source plus the interactions they rated."""

    source: str
    raters: list[RaterScores]
    interactions: dict[str, AnnotatedInteraction]
    ratings: pd.DataFrame
    rater_ids: dict[str, str]
    dims: Dimensions | None = None  # the target rated (annotation studies and ratings files)


def session_memory(row: Mapping[str, Any]) -> str | None:
    """The notes a session's clinician started with, from a row with a run's ``session`` block
    (:class:`mindeval.records.SessionInfo`); ``None`` for a single-session conversation."""
    session = row.get("session")
    memory = session.get("memory") if isinstance(session, Mapping) else None
    return memory if isinstance(memory, str) else None


def session_schedule(row: Mapping[str, Any]) -> dict[str, str] | None:
    """A run's session's drawn schedule (``session.schedule``; the judge template's ``${schedule_<name>}``)."""
    session = row.get("session")
    drawn = session.get("schedule") if isinstance(session, Mapping) else None
    return {str(k): str(v) for k, v in drawn.items()} if isinstance(drawn, Mapping) else None


def _by_session(ratings: pd.DataFrame) -> pd.DataFrame:
    """``ratings`` with each profile id keyed by its session (:func:`unit_key`)."""
    keys = [unit_key(str(p), str(i)) for p, i in zip(ratings["profile_id"], ratings["interaction_id"], strict=True)]
    return ratings.assign(profile_id=keys)


def _axis_scores_to_raters(axis_long: pd.DataFrame, source: str, kind: Literal["human"]) -> list[RaterScores]:
    out: list[RaterScores] = []
    for label, grp in axis_long.groupby("rater", sort=False):
        frame = grp.assign(run=0).loc[:, list(SCORE_COLUMNS)].reset_index(drop=True)
        _check_unique(frame, source, str(label))
        out.append(RaterScores(label=str(label), kind=kind, source=source, frame=frame))
    return out


def _check_unique(frame: pd.DataFrame, source: str, label: str, kind: str = "rater") -> None:
    """Each (profile, system) once per run; ``kind``: who scored (``rater``, a human; ``judge``)."""
    dup = frame.duplicated(subset=["profile_id", "system", "run", "axis"])
    if dup.any():
        row = frame[dup].iloc[0]
        more = " (a run with --repeats: compare one conversation per profile)" if kind == "judge" else ""
        raise MindEvalError(
            f"{kind} {label} scores profile {row['profile_id']} with system {row['system']} "
            f"more than once; each (profile, system) must appear once per run{more}",
            path=source, field="profile_id",
        )


def humans_from_ratings(
    ratings: pd.DataFrame, subaxis_axis: dict[str, str], *, source: str, zeros: str = "missing",
    dims: Dimensions | None = None,
) -> list[RaterScores]:
    """Human raters from a frame of sub-axis ratings (:data:`RATING_COLUMNS`)."""
    axis_long = rollup(_by_session(ratings), subaxis_axis, source=source, zeros=zeros, dims=dims)
    return _axis_scores_to_raters(axis_long, source, "human")


# ------------------------------------------------------------- authors' annotations


def rater_labels(ids: list[str], prefix: str = "P") -> dict[str, str]:
    """Annotator id → ``P1``, ``P2``, …: the authors' four get the paper's numbers, others follow."""
    labels = {uid: f"{prefix}{AUTHORS_PAPER_RATERS.index(uid) + 1}" for uid in ids if uid in AUTHORS_PAPER_RATERS}
    nxt = len(AUTHORS_PAPER_RATERS) + 1 if labels else 1
    for uid in ids:
        if uid not in labels:
            labels[uid] = f"{prefix}{nxt}"
            nxt += 1
    return labels


def load_authors_annotations(
    path: str | Path, mapping: CriteriaMapping | None = None, *, zeros: str = "missing", prefix: str = "P"
) -> HumanSource:
    """Read the authors' ``human_annotations.jsonl``: one row per interaction, 4 raters each.

    Criterion fields hold ``<field>.responses`` (scores, ``0`` = not rated) aligned with
    ``<field>.responses.users`` (annotator ids). The authors' four annotators get the
    paper's labels P1-P4; other annotator ids are numbered after them in order of first
    appearance. ``rater_ids`` keeps label → original id.
    """
    p = Path(path)
    cmap = mapping or load_mapping()
    seen: dict[str, None] = {}
    records: list[tuple[str, str, str, str, str, float]] = []
    interactions: dict[str, AnnotatedInteraction] = {}
    for row in authors_by_id(p, cmap).values():
        profile = authors_profile(row.member_attributes, p, row.line)
        # a run's row names its profile (its sessions are then units P#s<k>: unit_key), as in load_study
        own = row.raw.get("profile_id")
        pid = own if isinstance(own, str) and own else profile_key(row.member_attributes)
        for user, subaxis, score in row.scores(cmap):
            seen.setdefault(user, None)
            records.append((row.id, pid, row.model, user, subaxis, float(score)))
        interactions[row.id] = AnnotatedInteraction(interaction_id=row.id, profile_id=pid, system=row.model,
                                                    profile=profile, messages=row.messages, line=row.line,
                                                    memory=session_memory(row.raw), schedule=session_schedule(row.raw))
    if not interactions:
        raise MindEvalError("no annotated interactions in file", path=p)
    labels = rater_labels(list(seen), prefix)
    ratings = pd.DataFrame.from_records(records, columns=list(RATING_COLUMNS))
    ratings["rater"] = ratings["rater"].map(labels)
    raters = humans_from_ratings(ratings, cmap.subaxis_axis, source=str(p), zeros=zeros)
    raters.sort(key=lambda r: int(r.label[len(prefix):]))
    rater_ids = {lab: uid for uid, lab in labels.items()}
    return HumanSource(source=str(p), raters=raters, interactions=interactions, ratings=ratings, rater_ids=rater_ids)


# ------------------------------------------------------------------ ratings files


def is_ratings_file(path: str | Path) -> bool:
    """A ``.csv`` file, or a ``.jsonl`` file whose first row has ``subaxis_id`` (not the authors' layout)."""
    p = Path(path)
    if p.suffix.lower() == ".csv":
        return True
    if p.suffix.lower() != ".jsonl" or not p.is_file():
        return False
    for _, obj in read_jsonl(p):
        return isinstance(obj, dict) and "subaxis_id" in obj
    return False


def load_ratings_file(path: str | Path, dims: Dimensions, *, prefix: str = "") -> HumanSource:
    """Human ratings of any target from a CSV or JSONL file, one sub-axis rating per row.

    Columns (keys): ``interaction_id, profile_id, system, rater, subaxis_id, score``;
    ``score`` is a number, a level id or label of a categorical scale, or blank/``NA``
    for not rated. ``subaxis_id`` is a sub-axis of the target's human form. Raters keep
    their names (after ``prefix``).
    """
    p = Path(path)
    if not p.is_file():
        raise MindEvalError("ratings file not found", path=p)
    if p.suffix.lower() == ".csv":
        frame = pd.read_csv(p, dtype=str, keep_default_na=False)
        lines = list(range(2, len(frame) + 2))
    else:
        rows = list(read_jsonl(p))
        frame = pd.DataFrame([obj for _, obj in rows])
        lines = [n for n, _ in rows]
    missing = [c for c in RATING_COLUMNS if c not in frame.columns]
    if missing:
        raise MindEvalError(f"ratings lack column(s) {', '.join(missing)}", path=p, line=1, field=missing[0])
    if frame.empty:
        raise MindEvalError("no ratings in file", path=p)
    for col in ("interaction_id", "profile_id", "system", "rater", "subaxis_id"):
        blank = frame[col].isna() | (frame[col].astype(str).str.strip() == "")
        if blank.any():
            raise MindEvalError("missing value", path=p, line=lines[int(blank.to_numpy().argmax())], field=col)
    frame = frame.loc[:, list(RATING_COLUMNS)].astype({c: str for c in RATING_COLUMNS if c != "score"})
    frame["rater"] = prefix + frame["rater"]
    raters = humans_from_ratings(frame, dims.form(), source=str(p), dims=dims)
    return HumanSource(source=str(p), raters=raters, interactions={}, ratings=frame,
                       rater_ids={r.label: r.label[len(prefix):] for r in raters}, dims=dims)


# --------------------------------------------------------------------- judge runs


def _judge_rows(path: Path) -> tuple[list[JudgmentRecord], RunConfig | None, TargetInfo, Path]:
    """The judgments, config, target and judgments file of a run directory (or of a bare
    judgments file: its directory's config, if any)."""
    if path.is_file():
        run_dir, jpath = path.parent, path
        cpath = run_dir / CONFIG_FILE
        config = read_config(cpath) if cpath.is_file() else None
        target = run_target(run_dir)
        return JudgmentRecord.read(jpath, {"target": target}), config, target, jpath
    if not path.is_dir():
        raise MindEvalError("judge run not found", path=path)
    jpath = path / JUDGMENTS_FILE
    if not jpath.is_file():
        raise MindEvalError(f"no {JUDGMENTS_FILE} in this directory (is it a `mindeval run` or `metaeval judge` "
                            "output?)", path=path)
    run = read_run(path)
    return run.judgments, run.config, run.target, jpath


def _recorded(config: RunConfig | None) -> dict[str, Any]:
    """What a judge's scores carry of its run's ``config.json`` (nothing recorded without one)."""
    if config is None:
        return {"fewshot_interaction_ids": [], "prompt": None, "run_id": None}
    return {"fewshot_interaction_ids": list(config.fewshot_interaction_ids or []), "prompt": config.judge_prompt(),
            "run_id": config.run_id}


def load_judge_run(path: str | Path, label: str | None = None) -> list[RaterScores]:
    """Judge scores from a ``mindeval run`` or ``metaeval judge`` output directory.

    One :class:`RaterScores` per judge model in the file; each ``sample`` is a run.
    Failed judgments (no scores) are NaN and counted in ``meta["n_failed"]``. The
    run's target block is ``target``.
    """
    root = Path(path)
    judgments, config, target, jpath = _judge_rows(root)
    axes = tuple(target.axes)
    rows: dict[str, list[dict[str, Any]]] = {}
    for j in judgments:
        row: dict[str, Any] = {"profile_id": unit_key(j.profile_id, j.interaction_id), "system": j.model, "interaction_id": j.interaction_id,
                               "run": j.sample}
        # "not relevant" (None) is NaN like a human's N/A: out of that axis's agreement, counted.
        row.update({ax: np.nan if j.scores is None or j.scores[ax] is None else float(j.scores[ax]) for ax in axes})
        row["_failed"] = j.scores is None
        row["_not_relevant"] = sum(v is None for v in (j.scores or {}).values())
        rows.setdefault(j.judge_model, []).append(row)
    if not rows:
        raise MindEvalError("no judgments in file", path=jpath)
    out: list[RaterScores] = []
    for judge_model, judge_rows in rows.items():
        frame = pd.DataFrame(judge_rows)
        n_failed, n_not_relevant = int(frame.pop("_failed").sum()), int(frame.pop("_not_relevant").sum())
        wide = judge_axis_frame(frame, axes)
        long = wide.melt(
            id_vars=["profile_id", "system", "interaction_id", "run"], value_vars=[*axes, AVERAGE],
            var_name="axis", value_name="score",
        ).loc[:, list(SCORE_COLUMNS)]
        name = label or (config.label if config else None) or judge_model
        if label and len(rows) > 1:
            name = f"{label}:{judge_model}"
        _check_unique(long, str(jpath), name, "judge")
        meta = {
            "judge_model": judge_model, "n_failed": n_failed,
            **({"n_not_relevant": n_not_relevant} if n_not_relevant else {}),
            **_recorded(config),
        }
        out.append(RaterScores(label=str(name), kind="judge", source=str(root), frame=long, meta=meta,
                               target=target))
    return out


# ------------------------------------------------------------ annotation platform


def database_study(source: str, studies: Mapping[str, StudyRatings] | None) -> StudyRatings:
    """The ratings of database ``source`` as its caller read them: metaeval never opens the
    annotation platform's database (the command lines read it with the app's data package)."""
    if studies and source in studies:
        return studies[source]
    from mindeval.store.db import redact_url

    raise MindEvalError("the annotation database was not read: pass the study's ratings as data, "
                        "studies={url: annotation_app.store.read_ratings(url, study)}", path=redact_url(source))


def load_study(
    study_ratings: StudyRatings, *, zeros: str = "missing", prefix: str = "P", dims: Dimensions | None = None,
    adjudicated: bool = False,
) -> HumanSource:
    """The submitted ratings of one study of the annotation platform (read from its database by
    ``annotation_app.store.read_ratings``) as a human source.

    Adjudicated ratings (the admin's decision after a disagreement review) are not a
    rater's own judgement, so they are left out unless ``adjudicated`` is true; then they
    are one more rater, labelled ``adjudicated``.

    Interactions imported from a ``mindeval run`` keep their run's ``profile_id``; others
    (e.g. the authors' file imported into the platform) get :func:`profile_key`.
    Annotators are labelled by name, except the authors' four, who get P1-P4. The
    dimensions are the study's target's (``dims``, when given, must be that target).
    """
    from mindeval.targets import load_target

    source, study_name = study_ratings.source, study_ratings.study
    target = load_target(study_ratings.target)
    own = Dimensions.of_target(target)
    if dims is not None and (dims.target, dims.axes) != (own.target, own.axes):
        raise MindEvalError(f"study {study_name!r} rates target {target.name}, but the judges or --target are "
                            f"target {dims.target}", path=source, field="--study")
    dims = own  # the study's own form (its sub-axes), the same dimensions
    not_rated = study_ratings.na_value
    paper = {uid: f"{prefix}{i}" for i, uid in enumerate(AUTHORS_PAPER_RATERS, start=1)}
    subaxis_axis = dims.form()
    rows: list[tuple[str, str, str, str, str, float]] = []
    interactions: dict[str, AnnotatedInteraction] = {}
    rater_ids: dict[str, str] = {}
    for rec in study_ratings.ratings:
        if rec.adjudicated and not adjudicated:
            continue
        iid = rec.interaction_id
        pid = rec.profile_id or str(profile_key(rec.member_attributes))
        system = rec.clinician_model or "unknown"
        label = paper.get(rec.annotator, rec.annotator)
        rater_ids[label] = rec.annotator
        for sub, value in rec.values.items():
            rows.append((iid, pid, system, label, sub,
                         np.nan if dims.categorical and value == not_rated else float(value)))
        if iid not in interactions:
            try:
                prof = authors_profile(rec.member_attributes, Path(source), 0)
            except MindEvalError:
                prof = None
            if prof is not None:
                interactions[iid] = AnnotatedInteraction(
                    interaction_id=iid, profile_id=pid, system=system, profile=prof, messages=list(rec.messages),
                    memory=rec.memory,
                )
    if not rows:
        raise MindEvalError(f"study {study_name!r} has no submitted ratings", path=source)
    ratings = pd.DataFrame.from_records(rows, columns=list(RATING_COLUMNS))
    raters = humans_from_ratings(ratings, subaxis_axis, source=source, zeros=zeros, dims=dims)
    paper_labels = set(paper.values())
    raters.sort(key=lambda r: (0, int(r.label[len(prefix):])) if r.label in paper_labels else (1, r.label))
    return HumanSource(source=source, raters=raters, interactions=interactions, ratings=ratings, rater_ids=rater_ids,
                       dims=dims)


def human_scores(sources: list[HumanSource]) -> HumanScores:
    """Each rated conversation's mean over its raters per axis: the human side of a human-scale
    leaderboard (plain data for :mod:`mindeval.leaderboard.human_scale`)."""
    frame = pd.concat([r.frame.assign(rater=r.label) for src in sources for r in src.raters],
                      ignore_index=True).dropna(subset=["score"])
    rows: list[HumanScore] = []
    for (pid, system), grp in frame.groupby(["profile_id", "system"], sort=True):
        means = grp.groupby("axis")["score"].mean()
        rows.append(HumanScore(profile_id=str(pid), system=str(system),
                               scores={str(a): float(v) for a, v in means.items()},
                               raters=int(grp["rater"].nunique())))
    return HumanScores(source=", ".join(s.source for s in sources), rows=rows)
