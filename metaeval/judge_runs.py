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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from mindeval import __version__
from mindeval.budget import check_max_cost
from mindeval.engine.console import format_failures
from mindeval.engine.prepare import JudgeSetup, judge_setup
from mindeval.errors import MindEvalError
from mindeval.files import sha256_file
from mindeval.judging.authors import load_mapping
from mindeval.judging.fewshot import FewShotExample, check_fewshot_target, draw_ids, paper_fewshot
from mindeval.judging.job import JudgeJob, Transcript
from mindeval.judging.judge import judge_sample
from mindeval.judging.render import JudgePrompt
from mindeval.judging.sent import refuse_unsent
from mindeval.llm.gateway import ModelSpec, check_api_key, check_model_string
from mindeval.records import (
    CONFIG_FILE,
    JUDGMENTS_FILE,
    RATED_JUDGE_KIND,
    SUMMARY_FILE,
    JudgeRunConfig,
    JudgmentRecord,
    PromptRecord,
    RunSummary,
)
from mindeval.run_options import RunOptions
from mindeval.rundir import upgraded_view
from mindeval.rundir_guard import check_store, run_dir_lock
from mindeval.store import sqlite_url
from mindeval.store.calls import calls_line, logged_run
from mindeval.study_data import StudyRatings
from mindeval.targets import Target, load_target
from mindeval.workers import check_concurrency, run_pool

from .sources import (
    AnnotatedInteraction,
    HumanSource,
    database_study,
    load_authors_annotations,
    load_study,
)

KIND = RATED_JUDGE_KIND


def _is_url(source: str) -> bool:
    return "://" in source


def load_annotated(source: str, mapping: Any, zeros: str, study: str | None,
                   studies: Mapping[str, StudyRatings] | None = None) -> HumanSource:
    """The authors' annotation file, or a rating study of the annotation platform's database
    (its ratings in ``studies``, by source, as the command line read them)."""
    if _is_url(source):
        if not study:
            raise MindEvalError("reading annotated interactions from a database needs --study NAME", field="--study")
        return load_study(database_study(source, studies), zeros=zeros)
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


def mean_axis_scores(source: HumanSource, interaction_id: str, axes: tuple[str, ...]) -> dict[str, float]:
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
    """``k`` interaction ids by the one few-shot draw (:func:`mindeval.judging.fewshot.draw_ids`)."""

    try:
        return draw_ids(list(source.interactions), k, seed)
    except MindEvalError as exc:
        raise MindEvalError(exc.message, path=source.source) from None


def _check_options(opts: RunOptions) -> None:
    if opts.judge_samples < 1:
        raise MindEvalError("--repetitions must be at least 1", field="--repetitions")
    check_concurrency(opts.concurrency)
    check_max_cost(opts.max_cost)
    if opts.fewshot_k < 0:
        raise MindEvalError("--fewshot must be 0 or more", field="--fewshot")


class _Shots(BaseModel):
    """The few-shot examples of a judge run and where they were drawn from."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    source: HumanSource
    ids: list[str]
    examples: list[FewShotExample]


def _fewshot(opts: RunOptions, target: Target, mapping: Any, data: HumanSource,
             studies: Mapping[str, StudyRatings] | None) -> _Shots:
    """The examples: the authors' five (``paper``), else ``k`` drawn with the seed (never another
    target's examples from the authors' schema)."""
    shot_src, fewshot_k = data, opts.fewshot_k
    if not target.manifest.authors_release and not _is_url(opts.fewshot_file or opts.annotations):
        # The authors' schema holds MindEval ratings: never examples of another target's dimensions.
        # An explicit file is refused (as by `mindeval run`); the rated file is not drawn from.
        check_fewshot_target(target.name, False, opts.fewshot_file, fewshot_k)
        fewshot_k = 0
    if opts.fewshot_file and opts.fewshot_file != opts.annotations:
        shot_src = load_annotated(opts.fewshot_file, mapping, opts.zeros, opts.study, studies)
    if opts.judge_protocol == "paper":
        shot_file = opts.fewshot_file or opts.annotations
        _, fewshot = paper_fewshot(None if _is_url(shot_file) else Path(shot_file))
        return _Shots(source=shot_src, ids=[ex.interaction_id for ex in fewshot], examples=fewshot)
    ids = draw_fewshot(shot_src, fewshot_k, opts.seed) if fewshot_k else []
    axes = target.guidelines.axis_codes
    fewshot = [FewShotExample(intake=shot_src.interactions[i].profile.intake(), messages=shot_src.interactions[i].messages,
                              scores=mean_axis_scores(shot_src, i, axes), interaction_id=i) for i in ids]
    return _Shots(source=shot_src, ids=ids, examples=fewshot)


def _run_config(opts: RunOptions, setup: JudgeSetup, target: Target, data: HumanSource, shots: _Shots,
                evaluate: list[AnnotatedInteraction], mapping: Any) -> JudgeRunConfig:
    tpl = setup.template
    return JudgeRunConfig(
        judge=setup.spec, prompts={"judge": PromptRecord(ref=tpl.ref, sha256=tpl.sha256)},
        annotations_sha256=_content_hash(data) if _is_url(opts.annotations) else sha256_file(opts.annotations),
        fewshot_sha256=(None if not opts.fewshot_file else _content_hash(shots.source)
                        if _is_url(opts.fewshot_file) else sha256_file(opts.fewshot_file)),
        fewshot_k=len(shots.ids), judge_protocol=opts.judge_protocol, fewshot_interaction_ids=shots.ids,
        fewshot_scores={i: ex.scores for i, ex in zip(shots.ids, shots.examples, strict=True)}, zeros=opts.zeros,
        mapping_version=mapping.version, judge_samples=opts.judge_samples, judge_retries=opts.judge_retries,
        seed=opts.seed, interaction_ids=[it.interaction_id for it in evaluate], target=target.block(),
        label=opts.label or setup.spec.model, annotations_source=_shown(opts.annotations),
        fewshot_source=_shown(opts.fewshot_file), package_version=__version__,
    )


def _transcript(it: AnnotatedInteraction) -> Transcript:
    """A rated interaction as the judge reads it: its transcript and the notes its session started
    with; no clinician system prompt (rated transcripts keep none: :func:`refuse_unsent`)."""
    return Transcript(interaction_id=it.interaction_id, profile=it.profile, messages=it.messages, memory=it.memory)


def _judge_all(job: JudgeJob, todo: list[tuple[AnnotatedInteraction, int]], concurrency: int,
               progress: bool) -> list[str]:
    """Every pending judgment through the one judge loop; the errors of the failed ones.

    A permanent judge error (400/401/403/404) raises from the loop and stops the run; the
    CLI prints it as one line with the provider's message."""
    failed: list[str] = []

    async def work(entry: tuple[AnnotatedInteraction, int]) -> None:
        it, rep = entry
        j = await judge_sample(job, _transcript(it), rep)
        if j is not None and j.parse_status != "ok":
            failed.append(j.error or "judge reply could not be parsed")

    run_pool(todo, work, concurrency=concurrency, desc="judgments", progress=progress)
    return failed


class _Work(BaseModel):
    """What a judge run judges and how: the spec, the prompt, the recorded configuration and the items."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    spec: ModelSpec
    prompt: JudgePrompt
    config: JudgeRunConfig
    shots: _Shots
    evaluate: list[AnnotatedInteraction]
    labels: dict
    data: HumanSource


def _annotations(opts: RunOptions) -> str:
    if not opts.annotations:
        raise MindEvalError("give the rated interactions to judge (--annotations)", field="annotations")
    if opts.study and not any(_is_url(s) for s in (opts.annotations, opts.fewshot_file) if s):
        raise MindEvalError("a study is read from an annotation database, and --annotations is a file: give its "
                            "database URL or leave out --study", field="--study")
    return opts.annotations


def run_judge(opts: RunOptions, *, echo: Callable[[str], None] | None = print,
              studies: Mapping[str, StudyRatings] | None = None) -> dict[str, Any]:
    """Judge every evaluation interaction ``judge_samples`` times; write the run directory.
    ``studies``: the ratings of the annotation databases among the sources, read by the caller."""
    say = echo or (lambda _m: None)
    _check_options(opts)
    source = _annotations(opts)
    check_model_string(opts.judge.model)
    target = load_target(opts.target)
    setup = judge_setup(target, opts.judge, opts.judge_prompt, opts.judge_protocol)
    spec, tpl = setup.spec, setup.template
    refuse_unsent(tpl, _shown(source) or source)  # rated transcripts keep no clinician prompt
    if not opts.dry_run:
        check_api_key(spec, "judge")  # before the first call
    mapping = load_mapping(opts.mapping)
    data = load_annotated(source, mapping, opts.zeros, opts.study, studies)
    shots = _fewshot(opts, target, mapping, data, studies)
    evaluate = [it for iid, it in data.interactions.items() if iid not in set(shots.ids)]
    if opts.limit is not None:
        evaluate = evaluate[: max(0, opts.limit)]
    labels = target.template_labels([tpl], [it.profile for it in evaluate])  # those the judge template names
    config = _run_config(opts, setup, target, data, shots, evaluate, mapping)
    prompt = JudgePrompt(template=tpl, guidelines=target.guidelines, protocol=opts.judge_protocol,
                         fewshot=shots.examples, speakers=target.speakers())
    if opts.dry_run:
        from mindeval.judge_estimate import estimate_judging

        say(estimate_judging(spec, prompt, [(_transcript(it), labels.get(it.profile.id)) for it in evaluate],
                             opts.judge_samples, opts.assume_reply_tokens.get("judge")))
        return {}
    out = Path(opts.out)
    work = _Work(spec=spec, prompt=prompt, config=config, shots=shots, evaluate=evaluate, labels=labels, data=data)
    with run_dir_lock(out):  # one process per directory; outputs without their store are refused
        check_store(out, opts.db, overwrite=opts.overwrite)
        return _write_run(opts, out, work, echo)


def _write_run(opts: RunOptions, out: Path, work: _Work, echo: Callable[[str], None] | None) -> dict[str, Any]:
    """The judge run in ``out`` (held by the caller): create or resume it, judge what is pending, export."""
    say = echo or (lambda _m: None)
    spec, config, shots, evaluate = work.spec, work.config, work.shots, work.evaluate
    label = opts.label or spec.model
    full = config.hash()  # an older judge run's directory is resumed by its upgraded view
    with logged_run(opts.db or sqlite_url(out / "run.db"), KIND, config.hashed_view(), new_run=opts.new_run,
                    config_hash=full, upgrade=upgraded_view) as (log, resumed):
        if opts.max_cost is not None:
            from mindeval.budget import Budget

            log.guard = Budget(opts.max_cost, log.store.spent_usd())
            log.guard.check_priced({"judge": spec})
        config.model_copy(update={"run_id": log.run_id, "config_hash": full}).write(out / CONFIG_FILE)
        job = JudgeJob(log=log, spec=spec, prompt=work.prompt, target=config.target, samples=opts.judge_samples,
                       retries=opts.judge_retries, seed=opts.seed, labels=work.labels,
                       retry_refused=opts.retry_refused)
        todo = [(it, r) for it in evaluate for r in range(opts.judge_samples) if job.pending(it.interaction_id, r)]
        say(f"{'resuming' if resumed else 'starting'} run {log.run_id}: judge {spec.model} "
            f"({work.prompt.template.ref}) on {len(evaluate)} interactions × {opts.judge_samples} runs; "
            f"{len(shots.ids)} few-shot examples (seed {opts.seed}); {len(todo)} judgments to make, "
            f"{len(evaluate) * opts.judge_samples - len(todo)} already stored")
        started, failed = time.perf_counter(), []
        try:
            failed = _judge_all(job, todo, opts.concurrency, echo is not None)
        finally:  # on an error or Ctrl-C: what was judged is committed; export it
            log.store.writer.close()  # type: ignore[union-attr]  # commit what is queued before exporting
            summary = _export(job, out, work.data, evaluate, label, time.perf_counter() - started, resumed)
    _say_done(say, out, summary, spec.model, failed)
    return summary


def _say_done(say: Callable[[str], None], out: Path, summary: dict[str, Any], model: str, failed: list[str]) -> None:
    say(f"wrote {out / JUDGMENTS_FILE}: {summary['n_judged']} judgments, {summary['n_failed_judgments']} failed; "
        + calls_line(summary["calls_made"], summary["calls_reused"]))
    if failed:  # as `mindeval run` prints them: one line per distinct error, with the provider's message
        say("FAILED:")
        for line in format_failures([{"what": "judgment", "role": "judge", "model": model, "message": m}
                                     for m in dict.fromkeys(failed)]):
            say(line)


def _export(job: JudgeJob, out: Path, data: HumanSource, evaluate: list[AnnotatedInteraction],
            label: str, elapsed: float, resumed: bool) -> dict[str, Any]:
    """Write judgments.jsonl (checked against the run's target) and summary.json; return the summary."""
    store, log, protocol, target = job.log.store, job.log, job.prompt.protocol, job.target
    keep = {it.interaction_id for it in evaluate}
    judgments = sorted((j for j in store.judgments(protocol, target.name)
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
