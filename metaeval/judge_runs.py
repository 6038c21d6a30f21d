"""`metaeval judge`: run a judge N times over interactions that humans already rated.

Any judge (a litellm model string, ``local/smollm2`` or ``fake/judge``), any judge
prompt, optionally ``k`` few-shot examples drawn with a seed from an annotated file
and shown with the annotators' mean axis scores (the paper used 5); those examples
are excluded from evaluation and recorded in ``config.json`` so that
``metaeval compare`` leaves them out too. Every model call goes through the run
store's call log and every judgment is saved as soon as it is made, so a killed run
resumes where it stopped and never repeats a call.

Output directory: ``run.db`` (unless ``--db``), ``config.json``, ``judgments.jsonl``
(the ``mindeval run`` schema) and ``summary.json``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from mindeval import __version__
from mindeval.authors import load_mapping
from mindeval.config import DEFAULT_FEWSHOT_K, hash_config
from mindeval.errors import MindEvalError
from mindeval.files import sha256_file
from mindeval.records import (
    AXES,
    CONFIG_FILE,
    JUDGMENTS_FILE,
    RATED_JUDGE_KIND,
    SUMMARY_FILE,
    JudgeRunConfig,
    JudgmentRecord,
    RunConfigRecord,
    RunSummary,
    TargetInfo,
)
from mindeval.rundir_guard import check_store, run_dir_lock
from mindeval.store.runs import RunStore
from mindeval.targets import target_of
from mindeval.workers import check_concurrency, run_pool

from .sources import AnnotatedInteraction, HumanSource, load_annotation_db, load_authors_annotations

KIND = RATED_JUDGE_KIND


class JudgeRunOptions(BaseModel):
    annotations: str
    judge: str
    target: str = "mindeval"  # a built-in target's name or a target folder: the judge's dimensions and prompt
    prompt: str | None = None  # None: the target's judge prompt
    fewshot_k: int = DEFAULT_FEWSHOT_K  # drawn from fewshot_source (default: annotations), never judged
    fewshot_source: str | None = None
    repetitions: int = 1
    seed: int = 0
    out: str
    db_url: str | None = None
    params: dict[str, Any] = {}  # the judge's ModelSpec settings besides the model (temperature, timeout_s, ...)
    retries: int = 3
    concurrency: int = 4
    mapping: str | None = None
    zeros: str = "missing"
    limit: int | None = None
    label: str | None = None
    study: str | None = None
    judge_protocol: str = "mindeval"
    new_run: bool = False
    overwrite: bool = False  # run even where outputs exist without their store (buys their calls again)
    max_cost: float | None = None  # stop cleanly before the spend could exceed this many dollars
    dry_run: bool = False  # print the estimated calls, tokens and dollars; call no model
    assume_reply_tokens: dict[str, int] = {}  # for dry_run: the judge's reply length


def _is_url(source: str) -> bool:
    return "://" in source


def load_annotated(source: str, mapping: Any, zeros: str, study: str | None) -> HumanSource:
    """The authors' annotation file, or a rating study of the annotation platform's database."""
    if _is_url(source):
        if not study:
            raise MindEvalError("reading annotated interactions from a database needs --study NAME", field="--study")
        return load_annotation_db(source, study, zeros=zeros)
    return load_authors_annotations(source, mapping, zeros=zeros)


def _shown(source: str | None) -> str | None:
    """A source as recorded: database URLs without their password."""
    if source is None or not _is_url(source):
        return source
    from mindeval.store import redact_url

    return redact_url(source)


def _content_hash(data: HumanSource) -> str:
    """Identity of a source's interactions and ratings (for database sources)."""
    blob = json.dumps(
        [[i, data.interactions[i].messages] for i in sorted(data.interactions)], sort_keys=True, ensure_ascii=False
    ) + data.ratings.sort_values(list(data.ratings.columns)).to_csv(index=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def mean_axis_scores(source: HumanSource, interaction_id: str, axes: tuple[str, ...] = AXES) -> dict[str, float]:
    """The annotators' mean score per axis for one interaction (for a few-shot example)."""
    out: dict[str, float] = {}
    for ax in axes:
        vals = []
        for r in source.raters:
            f = r.frame
            hit = f[(f["interaction_id"] == interaction_id) & (f["axis"] == ax)]["score"]
            vals += [v for v in hit if not np.isnan(v)]
        if not vals:
            raise MindEvalError(f"few-shot example {interaction_id} has no human score for {ax}", path=source.source)
        out[ax] = float(np.mean(vals))
    return out


def draw_fewshot(source: HumanSource, k: int, seed: int) -> list[str]:
    """``k`` interaction ids by the one few-shot draw (:func:`mindeval.fewshot.draw_ids`)."""
    from mindeval.fewshot import draw_ids

    try:
        return draw_ids(list(source.interactions), k, seed)
    except MindEvalError as exc:
        raise MindEvalError(exc.message, path=source.source) from None


def run_judge(opts: JudgeRunOptions, *, echo: Callable[[str], None] | None = print) -> dict[str, Any]:
    """Judge every evaluation interaction ``repetitions`` times; write the run directory."""
    from mindeval.fewshot import check_fewshot_target
    from mindeval.judge import FewShotExample
    from mindeval.llm.gateway import ModelSpec, check_api_key, check_model_string
    from mindeval.runner import judge_setup
    from mindeval.targets import load_target

    say = echo or (lambda _m: None)
    if opts.repetitions < 1:
        raise MindEvalError("--repetitions must be at least 1", field="--repetitions")
    check_concurrency(opts.concurrency)
    if opts.fewshot_k < 0:
        raise MindEvalError("--fewshot must be 0 or more", field="--fewshot")
    check_model_string(opts.judge)
    paper = opts.judge_protocol == "paper"
    target = load_target(opts.target)
    g = target.guidelines
    info = target.block()
    setup = judge_setup(target, ModelSpec(model=opts.judge, **opts.params), opts.prompt, opts.judge_protocol)
    spec, tpl = setup.spec, setup.template
    if not opts.dry_run:
        check_api_key(spec, "judge")  # before the first call
    mapping = load_mapping(opts.mapping)
    data = load_annotated(opts.annotations, mapping, opts.zeros, opts.study)
    shot_src = data
    fewshot_k = opts.fewshot_k
    if not target.manifest.authors_release and not _is_url(opts.fewshot_source or opts.annotations):
        # The authors' schema holds MindEval ratings: never examples of another target's dimensions.
        # An explicit file is refused (as by `mindeval run`); the rated file is not drawn from.
        check_fewshot_target(target.name, False, opts.fewshot_source, fewshot_k)
        fewshot_k = 0
    if opts.fewshot_source and opts.fewshot_source != opts.annotations:
        shot_src = load_annotated(opts.fewshot_source, mapping, opts.zeros, opts.study)
    if paper:
        from mindeval.fewshot import paper_fewshot

        shot_file = opts.fewshot_source or opts.annotations
        _, fewshot = paper_fewshot(None if _is_url(shot_file) else Path(shot_file))
        shot_ids = [ex.interaction_id for ex in fewshot]
    else:
        shot_ids = draw_fewshot(shot_src, fewshot_k, opts.seed) if fewshot_k else []
        fewshot = [
            FewShotExample(
                intake=shot_src.interactions[i].profile.intake(), messages=shot_src.interactions[i].messages,
                scores=mean_axis_scores(shot_src, i, g.axis_codes), interaction_id=i,
            )
            for i in shot_ids
        ]
    evaluate: list[AnnotatedInteraction] = [it for iid, it in data.interactions.items() if iid not in set(shot_ids)]
    if opts.limit is not None:
        evaluate = evaluate[: max(0, opts.limit)]
    labels = target.template_labels([tpl], [it.profile for it in evaluate])  # those the judge template names
    config = JudgeRunConfig(
        judge=spec.model_dump(mode="json"),
        prompt={"ref": tpl.ref, "sha256": tpl.sha256},
        annotations_sha256=_content_hash(data) if _is_url(opts.annotations) else sha256_file(opts.annotations),
        fewshot_sha256=(None if not opts.fewshot_source else _content_hash(shot_src)
                        if _is_url(opts.fewshot_source) else sha256_file(opts.fewshot_source)),
        fewshot_k=len(shot_ids), judge_protocol=opts.judge_protocol, fewshot_interaction_ids=shot_ids,
        fewshot_scores={i: ex.scores for i, ex in zip(shot_ids, fewshot, strict=True)}, zeros=opts.zeros,
        mapping_version=mapping.version, repetitions=opts.repetitions, retries=opts.retries, seed=opts.seed,
        interaction_ids=[it.interaction_id for it in evaluate], target=info, prompts={"judge": tpl.ref},
    )
    if opts.dry_run:
        from mindeval.judge_estimate import estimate_judging

        est = estimate_judging(spec, tpl, [(it.profile, it.messages, labels.get(it.profile.id)) for it in evaluate],
                               fewshot, g, opts.judge_protocol, opts.repetitions, opts.assume_reply_tokens.get("judge"))
        say(est)
        return {}
    out = Path(opts.out)
    with run_dir_lock(out):
        check_store(out, opts.db_url, overwrite=opts.overwrite)
        return _judge_all(opts, out, spec, tpl, config, evaluate, fewshot, shot_ids, data, labels, target, say, echo)


def _judge_all(opts: JudgeRunOptions, out: Path, spec: Any, tpl: Any, config: JudgeRunConfig,
               evaluate: list[AnnotatedInteraction], fewshot: list, shot_ids: list[str], data: HumanSource,
               labels: dict, target: Any, say: Callable[[str], None], echo: Callable[[str], None] | None
               ) -> dict[str, Any]:
    """Judge the interactions still to judge in ``out`` (held by the caller's lock)."""
    from mindeval.judge import judge_transcript
    from mindeval.store import sqlite_url
    from mindeval.store.calls import calls_line, logged_run

    g, info = target.guidelines, target.block()
    label = opts.label or spec.model
    hashed = config.hashed()
    with logged_run(opts.db_url or sqlite_url(out / "run.db"), KIND, hashed, new_run=opts.new_run) as (log, resumed):
        if opts.max_cost is not None:
            from mindeval.budget import Budget

            log.guard = Budget(opts.max_cost, log.store.spent_usd())
            log.guard.check_priced({"judge": spec})
        RunConfigRecord(
            run_id=log.run_id, config_hash=hash_config(hashed), kind=KIND, label=label,
            fewshot_interaction_ids=shot_ids, config=config.model_dump(mode="json"),
            annotations_source=_shown(opts.annotations), fewshot_source=_shown(opts.fewshot_source),
            package_version=__version__,
        ).write(out / CONFIG_FILE)
        store = log.store
        done = store.judgment_rounds()
        todo = [(it, r) for it in evaluate for r in range(opts.repetitions)
                if done.get((it.interaction_id, spec.model, r), ("",))[0] != "ok"]
        say(f"{'resuming' if resumed else 'starting'} run {log.run_id}: judge {spec.model} ({tpl.ref}) on "
            f"{len(evaluate)} interactions × {opts.repetitions} runs; {len(shot_ids)} few-shot examples "
            f"(seed {opts.seed}); {len(todo)} judgments to make, "
            f"{len(evaluate) * opts.repetitions - len(todo)} already stored")
        started = time.perf_counter()

        async def work(job: tuple[AnnotatedInteraction, int]) -> None:
            it, rep = job
            status, rounds = done.get((it.interaction_id, spec.model, rep), ("", 0))
            round_ = rounds + 1 if status == "failed" else 0
            j = await judge_transcript(log, spec, tpl, it.profile, it.messages, it.interaction_id, sample=rep,
                                       retries=opts.retries, fewshot=fewshot, seed=opts.seed, round_=round_,
                                       protocol=opts.judge_protocol, guidelines=g, target=target.name,
                                       speakers=target_of(info).speakers(),
                                       labels=labels.get(it.profile.id))
            await store.arun(store.save_judgment(j, round_))
            if j.parse_status != "ok":
                failed.append(j.error or "judge reply could not be parsed")

        # A permanent judge error (400/401/403/404) raises from judge_transcript and stops the run;
        # the CLI prints it as one line with the provider's message.
        failed: list[str] = []
        try:
            run_pool(todo, work, concurrency=opts.concurrency, desc="judgments", progress=echo is not None)
        finally:  # on an error or Ctrl-C: what was judged is committed; export it
            store.writer.close()  # type: ignore[union-attr]  # commit what is queued before exporting
            summary = _export(store, out, data, evaluate, label, log, time.perf_counter() - started,
                              opts.judge_protocol, resumed, info)
    say(f"wrote {out / JUDGMENTS_FILE}: {summary['n_judged']} judgments, {summary['n_failed_judgments']} failed; "
        + calls_line(summary["calls_made"], summary["calls_reused"]))
    if failed:  # as `mindeval run` prints them: one line per distinct error, with the provider's message
        from mindeval.runner import format_failures

        say("FAILED:")
        for line in format_failures([{"what": "judgment", "role": "judge", "model": spec.model, "message": m}
                                     for m in dict.fromkeys(failed)]):
            say(line)
    return summary


def _export(store: RunStore, out: Path, data: HumanSource, evaluate: list[AnnotatedInteraction],
            label: str, log: Any, elapsed: float, protocol: str, resumed: bool,
            target: TargetInfo | None = None) -> dict[str, Any]:
    keep = {it.interaction_id for it in evaluate}
    judgments = sorted((j for j in store.judgments(protocol, target_of(target).name)
                        if j.interaction_id in keep),
                       key=lambda j: (j.interaction_id, j.sample))
    rows = []
    for j in judgments:
        it = data.interactions[j.interaction_id]
        rows.append(JudgmentRecord.from_judgment(j, profile_id=it.profile_id, model=it.system,
                                                 severe=it.profile.severe, n_turns=max(0, len(it.messages) - 1),
                                                 target=target))
    JudgmentRecord.write(out / JUDGMENTS_FILE, rows)
    summary = RunSummary(
        run_id=store.run_id, label=label, judge_protocol=protocol, n_interactions=len(evaluate),
        n_judged=sum(r.parse_status == "ok" for r in rows),
        n_failed_judgments=sum(r.parse_status == "failed" for r in rows),
        calls_made=log.counters.made, calls_reused=log.counters.reused, elapsed_s=round(elapsed, 3),
        resumed=resumed, package_version=__version__,
    )
    summary.write(out / SUMMARY_FILE)
    return summary.model_dump(mode="json")
