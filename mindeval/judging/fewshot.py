"""Judge few-shot examples from an annotated file (the authors' ``human_annotations.jsonl`` schema).

* :func:`draw_ids` is the ONE few-shot draw: ``k`` ids sampled with ``seed`` from the
  sorted interaction ids. ``mindeval run --judge-fewshot F --fewshot-k K --seed S`` and
  ``metaeval judge`` both call it, so the same file, k and seed pick the same examples.
* An example's scores are the annotators' mean per axis: each annotator's axis score is
  the mean of the sub-axes they rated, then averaged over annotators, computed exactly
  (:func:`mindeval.judging.authors.axis_means`). ``zeros="missing"`` (default) skips a ``0``
  ("not rated"); ``zeros="zero"`` averages it in as zero, as the authors did.
* :func:`paper_fewshot` gives the five interactions of the authors' judge prompt, in
  their order, scored their way (``zeros="zero"``), for ``--judge-protocol paper`` (the
  authors' few-shot examples with our instructions) and ``--transcript-format authors``
  (rendered in their layout by :func:`mindeval.judging.render.render_fewshot`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from ..errors import MindEvalError
from ..records import INTAKE_FIELDS
from .authors import AUTHORS_FEWSHOT_IDS, AuthorsRow, authors_by_id, axis_means, load_mapping


class FewShotExample(BaseModel):
    """An annotated interaction shown to the judge (scores: the annotators' mean)."""

    intake: dict[str, str]
    messages: list[dict[str, str]]
    scores: dict[str, float]
    interaction_id: str = ""



def draw_ids(ids: Sequence[str], k: int, seed: int) -> list[str]:
    """``k`` distinct ids drawn with ``seed`` from the sorted ids (the one few-shot draw)."""
    pool = sorted(set(ids))
    if k < 0:
        raise MindEvalError("the number of few-shot examples must be 0 or more", field="--fewshot-k")
    if k > len(pool):
        raise MindEvalError(f"cannot draw {k} few-shot examples from {len(pool)} interactions")
    return random.Random(seed).sample(pool, k)


def check_fewshot_target(target_name: str, authors_release: bool, fewshot: str | None, k: int) -> None:
    """Refuse a few-shot file of MindEval ratings (the authors' schema) for a target whose dimensions
    are not MindEval's (``authors_release`` false)."""
    if fewshot and k and not authors_release:
        raise MindEvalError(f"few-shot examples are MindEval ratings (the authors' schema); target {target_name} "
                            "has other dimensions: leave out --fewshot-file or pass --fewshot-k 0",
                            field="--fewshot-file")


def _example(path: Path, row: AuthorsRow, zeros: str) -> FewShotExample:
    means = axis_means(row.raw, load_mapping(), zeros)
    if means is None:
        raise MindEvalError("few-shot example has an axis nobody rated", path=path, line=row.line, field="id")
    attrs = row.member_attributes
    missing = [f for f in INTAKE_FIELDS if f not in attrs]
    if missing:
        raise MindEvalError("missing intake attribute", path=path, line=row.line,
                            field=f"member_attributes.{missing[0]}")
    return FewShotExample(intake={f: str(attrs[f]) for f in INTAKE_FIELDS}, messages=row.messages, scores=means,
                          interaction_id=row.id)


def load_fewshot(path: Path, k: int, seed: int, zeros: str = "missing") -> list[FewShotExample]:
    """``k`` annotated interactions picked by :func:`draw_ids` (in draw order)."""
    rows = authors_by_id(path, load_mapping())
    return [_example(path, rows[i], zeros) for i in draw_ids(list(rows), k, seed)]


def paper_fewshot(path: Path | None = None) -> tuple[Path, list[FewShotExample]]:
    """The authors' five few-shot interactions, their order and scores (``0`` counted as zero).

    ``path`` defaults to the downloaded release (``mindeval data download``).
    """
    if path is None:
        from ..profiles.official import official_file

        try:
            path = official_file("human_annotations.jsonl")
        except MindEvalError as exc:
            raise MindEvalError(f"--judge-protocol paper needs the authors' human_annotations.jsonl: {exc.message}",
                                path=exc.path) from None
    rows = authors_by_id(path, load_mapping())
    missing = [i for i in AUTHORS_FEWSHOT_IDS if i not in rows]
    if missing:
        raise MindEvalError(
            f"--judge-protocol paper: this file lacks the authors' few-shot interaction(s) {', '.join(missing)}; "
            "give the authors' human_annotations.jsonl (get it with `mindeval data download`)", path=path)
    return path, [_example(path, rows[i], "zero") for i in AUTHORS_FEWSHOT_IDS]


def judge_fewshot(protocol: str, path: str | Path | None, k: int, seed: int) -> tuple[list[FewShotExample], Path | None]:
    """The examples a judge protocol shows, and the file they came from (None: no examples).

    ``mindeval``: ``k`` examples drawn from ``path`` (none without a file); ``paper``: the
    authors' five from ``path`` or the downloaded release.
    """
    if protocol == "paper":
        src, examples = paper_fewshot(Path(path) if path else None)
        return examples, src
    if not path:
        return [], None
    return load_fewshot(Path(path), k, seed), Path(path)
