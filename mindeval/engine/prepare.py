"""A run's inputs, checked before any call: options, target, profiles, prompts, judge set-up (:func:`prepare`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .. import __version__
from ..budget import (
    check_max_cost,
)
from ..config import (
    DEFAULT_PROMPTS,
    PAPER_JUDGE_PROMPT,
    SEED_SCHEME,
)
from ..errors import MindEvalError
from ..files import sha256_file
from ..judging.fewshot import FewShotExample
from ..judging.render import JudgePrompt
from ..llm.gateway import ModelSpec, check_model_string
from ..profiles.official import resolve_profiles_arg
from ..prompts import PromptTemplate, render_clinician, render_patient
from ..records import (
    DEFAULT_MEMORY,
    BenchmarkConfig,
    MemorySpec,
    Profile,
    PromptRecord,
    SessionInfo,
    load_profiles,
)
from ..run_config import PromptRef, judge_spec_for_protocol, spec_with_defaults
from ..run_options import RunOptions
from ..seeds import recorded_scheme
from ..target_folder import target_source
from ..targets import Target, load_target, run_problems
from ..targets.guidelines import Guidelines
from ..targets.validation import schedule_problems
from ..workers import check_concurrency


def resolve_profiles(value: str) -> Path:
    """``demo`` → the shipped demo profiles; ``official`` → the downloaded set; else a path."""
    return resolve_profiles_arg(value)


def _prompt_ref(tpl: PromptTemplate) -> PromptRef:
    return PromptRef(ref=tpl.ref, sha256=tpl.sha256, source=tpl.source)


class Prepared(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: BenchmarkConfig
    profiles: list[Profile]
    templates: dict[str, PromptTemplate]
    fewshot: list[FewShotExample]
    guidelines: Guidelines
    target: Target
    labels: dict[str, dict[str, str]] = {}  # profile id -> the label values the templates name

    def judge_prompt(self) -> JudgePrompt:
        """What every judge request of this run shares."""
        c = self.config
        return JudgePrompt(template=self.templates["judge"], guidelines=self.guidelines, protocol=c.judge_protocol,
                           transcript_format=c.transcript_format, fewshot=self.fewshot,
                           speakers=self.target.speakers())

    def clinician_system(self, profile: Profile, info: SessionInfo | None,
                         schedule: Mapping[str, str] | None = None) -> str:
        """The clinician's system prompt of one session (``info``: its notes; None: one session;
        ``schedule``: its draws, those the target shows the clinician named by its template): what the
        run sends, its judge is shown as ``${clinician_system}`` and the ``--dry-run`` estimate prices."""
        return render_clinician(self.templates["clinician"], profile, self.labels.get(profile.id),
                                *([self.read_by("clinician", info) or ""] if info else []), schedule=schedule)

    @property
    def memory(self) -> MemorySpec:
        """Who writes and reads the run's between-session memory (its target's ``memory``)."""
        return self.config.target.memory or DEFAULT_MEMORY

    def read_by(self, role: str, info: SessionInfo | None) -> str | None:
        """The memory ``info``'s session started with, for ``role``: None unless ``role`` is one of
        the target's ``memory.readers`` (no other role's prompt is ever given it)."""
        return info.memory if info is not None and self.memory.reads(role) else None


def _profiles_path(opts: RunOptions, target: Target) -> Path:
    """``--profiles`` if given, else the target's profiles, else (MindEval) the demo set."""
    if opts.profiles is not None:
        return resolve_profiles(opts.profiles)
    return target.profiles_path or resolve_profiles("demo")


class JudgeSetup(BaseModel):
    """The judge of a run: its settings (role defaults and the protocol's filled in) and template."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    spec: ModelSpec
    template: PromptTemplate


def judge_setup(target: Target, judge: ModelSpec, prompt: str | None, protocol: str,
                transcript_format: str = "mindeval") -> JudgeSetup:
    """The one judge set-up of every run kind (``mindeval run``/``judge``, ``metaeval judge``):
    ``prompt`` None is the target's judge prompt; the ``paper`` protocol (MindEval's own judge only)
    uses the authors' prompt and sampling settings; the ``authors`` transcript format the user's
    copy of the authors' template."""
    if transcript_format == "authors":
        if protocol != "paper" or not target.manifest.authors_release:
            raise MindEvalError("--transcript-format authors reproduces the authors' judge: it needs "
                                "--judge-protocol paper and the mindeval target", field="--transcript-format")
        if not prompt or not Path(prompt).is_file():
            raise MindEvalError("--transcript-format authors needs --judge-prompt FILE: your copy of the authors' "
                                "judge template (with MindEval front matter)", field="--judge-prompt")
    elif transcript_format != "mindeval":
        raise MindEvalError(f"unknown transcript format {transcript_format!r} (mindeval or authors)",
                            field="--transcript-format")
    elif protocol == "paper":
        if not target.manifest.authors_release:
            raise MindEvalError(f"--judge-protocol paper is MindEval's own judge; target {target.name} "
                                "needs --judge-protocol mindeval", field="--judge-protocol")
        if prompt in (None, DEFAULT_PROMPTS["judge"]):
            prompt = PAPER_JUDGE_PROMPT
    spec = judge_spec_for_protocol(spec_with_defaults("judge", judge), protocol)
    if judge.is_embedded and judge.max_tokens is None and target.guidelines.judging_unit == "reply":
        from ..judging.replies import reply_max_tokens

        spec = spec.model_copy(update={"max_tokens": reply_max_tokens(target.guidelines)})
    return JudgeSetup(spec=spec, template=target.template("judge", prompt))


def _answer_prompt(protocol: str, unit: str) -> PromptRecord:
    from ..judging.answer import answer_prompt_file

    ref, sha = answer_prompt_file(protocol, unit)
    return PromptRecord(ref=ref, sha256=sha)


def _check_options(opts: RunOptions, turns: int) -> None:
    for spec in (opts.patient, opts.clinician, opts.judge):
        check_model_string(spec.model)
    if turns < 1:
        raise MindEvalError("--turns must be at least 1")
    check_max_cost(opts.max_cost)
    check_concurrency(opts.concurrency)
    if opts.judge_samples < 1 or opts.judge_retries < 1:
        raise MindEvalError("--judge-samples and --judge-retries must be at least 1")


def _fewshot(opts: RunOptions, target: Target) -> tuple[list[FewShotExample], Path | None, str | None]:
    """The judge's few-shot examples, where they came from and their SHA-256: a run directory's corrected
    conversations (:func:`mindeval.corrections.corrected_fewshot`) or an annotated file."""
    from ..judging.fewshot import check_fewshot_target, judge_fewshot

    if opts.fewshot_file and Path(opts.fewshot_file).is_dir():
        from ..corrections import corrected_fewshot

        examples, sha = corrected_fewshot(opts.fewshot_file, opts.fewshot_k, opts.seed, target.name)
        return examples, Path(opts.fewshot_file), sha
    check_fewshot_target(target.name, target.manifest.authors_release, opts.fewshot_file, opts.fewshot_k)
    examples, path = judge_fewshot(opts.judge_protocol, opts.fewshot_file, opts.fewshot_k, opts.seed)
    return examples, path, sha256_file(path) if path else None


def prepare(opts: RunOptions) -> Prepared:
    """Validate every input before any model is called. The target gives the profiles, prompts,
    guidelines, turns and opening line; explicit options (``--profiles``, ``--turns``,
    ``--ROLE-prompt``) override it."""
    target = load_target(opts.target)
    if problems := run_problems(target, own_profiles=opts.profiles is None):
        raise problems[0]
    turns = opts.turns if opts.turns is not None else target.manifest.turns
    _check_options(opts, turns)
    path = _profiles_path(opts, target)
    profiles = load_profiles(path)
    if opts.limit is not None:
        if opts.limit < 1:
            raise MindEvalError("--limit must be at least 1")
        if opts.limit > len(profiles):
            raise MindEvalError(f"{opts.limit} is more than the {len(profiles)} profiles of {path}",
                                field="--limit")
        profiles = profiles[: opts.limit]
    judge = judge_setup(target, opts.judge, opts.judge_prompt, opts.judge_protocol, opts.transcript_format)
    templates = {
        "patient": target.template("patient", opts.patient_prompt),
        "clinician": target.template("clinician", opts.clinician_prompt),
        "judge": judge.template,
    }
    templates.update({r: target.template(r) for r in target.roles_with_prompts()[3:]})  # sessions > 1
    if problems := schedule_problems(target, templates):  # --ROLE-prompt too: only draws visible to it
        raise problems[0]
    # Render once per profile now: a missing field or label is an error before any call is made.
    labels = target.template_labels(list(templates.values()), profiles)
    for p in profiles:
        render_patient(templates["patient"], p, labels.get(p.id))
        render_clinician(templates["clinician"], p, labels.get(p.id))
    fewshot, fewshot_path, fewshot_sha = _fewshot(opts, target)
    g = target.guidelines
    config = BenchmarkConfig(
        patient=spec_with_defaults("patient", opts.patient),
        clinician=spec_with_defaults("clinician", opts.clinician),
        judge=judge.spec,
        prompts={k: _prompt_ref(t) for k, t in templates.items()},
        guidelines_version=g.version,
        profiles_source=str(path),
        profiles_sha256=sha256_file(path),
        profile_ids=[p.id for p in profiles],
        turns=turns,
        opening_line=target.manifest.opening_line,
        seed=opts.seed, seed_scheme=recorded_scheme(opts.seed_scheme or SEED_SCHEME),
        judge_retries=opts.judge_retries,
        judge_samples=opts.judge_samples, repeats=opts.repeats,
        fewshot_source=str(fewshot_path) if fewshot_path else None,
        fewshot_sha256=fewshot_sha,
        fewshot_k=len(fewshot),
        judge_protocol=opts.judge_protocol,
        target=target.block(), **target_source(opts.target, target),
        transcript_format=opts.transcript_format,
        answer_prompt=None if opts.transcript_format == "authors" else _answer_prompt(opts.judge_protocol, g.judging_unit),
        package_version=__version__,
    )
    return Prepared(config=config, profiles=profiles, templates=templates, fewshot=fewshot, guidelines=g,
                    target=target, labels=labels)
