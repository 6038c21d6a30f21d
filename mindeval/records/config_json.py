"""A run's configuration as recorded in its ``config.json``: one base model of what every run
records (:class:`RunConfig`) and one subclass per kind of run, discriminated by ``kind``
(:class:`BenchmarkConfig`, :class:`JudgeRunConfig`), each requiring its own fields.

:meth:`RunConfig.read` / :meth:`RunConfig.from_json` are the one loader: they read a
``config.json`` of any version and return its kind's model. A hand-made file that lacks its
kind's own fields (a reader needing its target alone accepts it: ``metaeval compare``, the app's
importer) reads as the base; :func:`require_kind` is the check of a reader that needs a kind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from ..config import DEFAULT_JUDGE_RETRIES, OPENING_LINE
from ..errors import MindEvalError
from ..files import atomic_write
from .hashing import hash_config, hashed_view, simulation_view
from .io import CONFIG_FILE, _error_message, _FieldError, read_json_object
from .rows import _omit_defaults
from .target import ROLES, TargetInfo


class ModelRecord(BaseModel):
    """A role's model string and generation parameters: the one home of model settings.

    :class:`mindeval.llm.gateway.ModelSpec` builds on it (call settings, validation);
    readers of ``config.json`` use it as it is, ignoring what they do not need.
    """

    model_config = ConfigDict(extra="ignore")

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    api_base: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    # Call settings (see :data:`mindeval.config.CALL_SETTINGS`): recorded with a run, never in a hash.
    timeout_s: float | None = Field(None, gt=0)
    rpm: int | None = Field(None, gt=0)
    tpm: int | None = Field(None, gt=0)


class PromptRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    ref: str
    sha256: str


# The run kinds a ``config.json`` records (``RunConfig.kind``): a benchmark run (``mindeval run``,
# and ``mindeval judge RUN_DIR`` re-judging stored conversations) and a judge run over rated
# interactions (``mindeval judge official|FILE`` = ``metaeval judge``).
BENCHMARK_KIND = "benchmark"
RATED_JUDGE_KIND = "metaeval-judge"  # the name written since the first judge runs (run store and files)
RUN_KINDS: tuple[str, ...] = (BENCHMARK_KIND, RATED_JUDGE_KIND)
# config.json's keys around ``config``, in the order written: the run's identity and label (fields of
# RunConfig never hashed nor in its dump), then ``config``, then the keys of one kind: a benchmark
# run's store (when known), a rated judge run's sources (its ``config`` records neither source).
RECORD_KEYS = ("run_id", "config_hash", "kind", "label", "fewshot_interaction_ids")
KIND_KEYS: dict[str, tuple[str, ...]] = {
    BENCHMARK_KIND: ("database",), RATED_JUDGE_KIND: ("annotations_source", "fewshot_source", "package_version")}
# What a benchmark run records and a judge run over rated interactions does not (and the reverse).
SIMULATION_KEYS = ("patient", "clinician", "profile_ids", "turns")
RATED_KEYS = ("annotations_sha256", "mapping_version", "zeros", "fewshot_interaction_ids", "fewshot_scores",
              "interaction_ids")
# The order of ``config``'s keys as config.json has always written them (either kind): kept, so a
# file read and written again keeps its bytes. Keys of other versions follow, as read.
WRITTEN_ORDER = ("patient", "clinician", "judge", "prompts", "profile_ids", "turns", "guidelines_version", "seed",
                 "seed_scheme", "judge_samples", "repeats", "fewshot_sha256", "fewshot_k", "judge_protocol", "target",
                 "transcript_format", "answer_prompt", "profiles_source", "profiles_sha256", "target_source",
                 "target_sha256", "opening_line", "judge_retries", "fewshot_source", "package_version", *RATED_KEYS)
# Keys of a rated judge run's config as written before it was a RunConfig: their current names.
_RATED_LEGACY_KEYS = {"repetitions": "judge_samples", "retries": "judge_retries"}


class RunConfig(BaseModel):
    """What every run records in its ``config.json``: the judge, its prompts and settings, seeds,
    versions and hashes, the target block, and around ``config`` the run's id, hash, kind and label.
    The base of one model per kind (:data:`KINDS`); keys of other versions are kept, unread.

    The run's options as resolved (:mod:`mindeval.run_options` has the options, what the user
    asks; this records what they gave). On disk (:meth:`config_json`) the run's id, hash, kind,
    label, store and sources (:data:`RECORD_KEYS`, :data:`KIND_KEYS`) sit around ``config``, the
    model's dump (``model_dump``: what is hashed). :meth:`from_json` reads every version's file (an
    older ``metaeval judge`` config: :func:`upgrade_rated_judge_config`; an older MindEval file
    without a target block: :func:`mindeval.rundir.read_config`).

    The config hash (:meth:`hash`) covers everything that changes results (models and parameters,
    prompt versions and contents, guideline version, profiles, turns, seeds, judge settings) and
    nothing that does not (the per-call settings: timeouts, rate limits; a run may resume with
    other values; nor where the files were read from, nor the run's id and label)."""

    model_config = ConfigDict(extra="allow")

    # config.json's keys around ``config`` (never hashed; excluded from the dump)
    run_id: str | None = Field(None, exclude=True)
    config_hash: str | None = Field(None, exclude=True)
    kind: Literal["benchmark", "metaeval-judge"] = Field(BENCHMARK_KIND, exclude=True)
    label: str | None = Field(None, exclude=True)
    # ``config``. The judge and its prompts: required by every kind (None only in a hand-made file).
    judge: ModelRecord | None = None
    prompts: dict[str, PromptRecord] | None = None
    guidelines_version: str = ""
    seed: int | None = None
    judge_samples: int = 1
    fewshot_sha256: str | None = None
    fewshot_k: int = 0
    judge_protocol: str = "mindeval"
    target: TargetInfo  # older MindEval files: added when read (mindeval.rundir)
    # "authors": the authors' template and transcript format, forgeable (absent when "mindeval").
    transcript_format: str = "mindeval"
    # The judge's answer-code instruction (prompts/judge/answer/*.txt); absent for runs without one.
    answer_prompt: PromptRecord | None = None
    judge_retries: int = DEFAULT_JUDGE_RETRIES
    fewshot_source: str | None = None  # a rated judge run writes it (and the version) around ``config``
    package_version: str | None = None
    fewshot_interaction_ids: list[str] | None = None  # the few-shot draw of a rated judge run
    # a hand-made file read as the base: the first of its kind's fields it lacks (field, message)
    _lacks: tuple[str, str] = PrivateAttr(default=("", "missing required field"))

    def _omit(self, data: dict[str, Any]) -> None:
        """Drop from the dump what this kind does not write (its defaults)."""

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        data = _omit_defaults(handler(self))
        self._omit(data)
        for key in (*SIMULATION_KEYS, *RATED_KEYS, "seed_scheme"):
            if data.get(key, 0) is None:
                data.pop(key)
        return {**{k: data.pop(k) for k in WRITTEN_ORDER if k in data}, **data}

    def hash(self) -> str:
        return hash_config(self.hashed_view(), compact=True)

    def hashed_view(self) -> dict[str, Any]:
        return hashed_view(self.model_dump(mode="json"))

    def simulation_hash(self) -> str:
        """The identity of the run's conversations: the config hash without the judge's part."""
        return hash_config(simulation_view(self.model_dump(mode="json")))

    def judge_prompt(self) -> Any:
        """The judge prompt as recorded: ``{ref, sha256}`` (a judge run: its ref)."""
        prompt = (self.prompts or {}).get("judge")
        return None if prompt is None else prompt.model_dump(mode="json")

    # ------------------------------------------------------------------ config.json

    def config_json(self) -> dict[str, Any]:
        """The object of ``config.json``: :data:`RECORD_KEYS`, ``config`` (the dump), :data:`KIND_KEYS`."""
        data: dict[str, Any] = {k: getattr(self, k) for k in RECORD_KEYS}
        data["fewshot_interaction_ids"] = list(self.fewshot_interaction_ids or [])
        data["config"] = self.model_dump(mode="json")
        for key in KIND_KEYS[self.kind]:
            if key != "database" or getattr(self, key, None) is not None:
                data[key] = getattr(self, key, None)
        return data

    def write(self, path: str | Path) -> None:
        atomic_write(path, json.dumps(self.config_json(), indent=2, ensure_ascii=False) + "\n")

    @classmethod
    def read(cls, path: str | Path) -> RunConfig:
        """``config.json`` as written, as its kind's model (:func:`mindeval.rundir.read_config` also
        reads older MindEval files, without a target block); bad fields name file:line:field."""
        return cls.from_json(read_json_object(path), path)

    @classmethod
    def from_json(cls, data: dict[str, Any], path: str | Path = CONFIG_FILE) -> RunConfig:
        """The object of a ``config.json`` of any version, as its kind's model: files without
        ``kind`` are a judge run's when they name ``annotations_sha256``; a judge run's older keys
        are today's (:func:`upgrade_rated_judge_config`). Errors name ``config.<field>`` or the key
        around it."""
        config = data.get("config", {})
        if not isinstance(config, dict):
            raise MindEvalError("expected an object", path=path, field="config")
        kind = data.get("kind", _kind_of(config))
        if kind == RATED_JUDGE_KIND:
            config = upgrade_rated_judge_config(config)
        around = {k: data[k] for k in ("run_id", "config_hash", "label", *KIND_KEYS.get(kind, ())) if k in data}
        around["kind"] = kind
        flat = {**config, **around}
        if "fewshot_interaction_ids" not in config and data.get("fewshot_interaction_ids"):
            flat["fewshot_interaction_ids"] = data["fewshot_interaction_ids"]  # only the copy around it
        try:
            return of_kind(flat, kind)
        except ValidationError as exc:
            model = KINDS.get(kind, RunConfig)
            field, msg = _error_message(next(e for e in exc.errors() if not _lacked(e, model)))
            if field.split(".")[0] not in around:
                field = f"config.{field}" if field else "config"
            raise MindEvalError(msg, path=path, field=field) from None


def _roles_prompted(prompts: dict[str, PromptRecord]) -> dict[str, PromptRecord]:
    for role in ROLES:
        if role not in prompts:
            raise PydanticCustomError("missing", "missing required field",
                                      {"error": _FieldError("missing required field", f"prompts.{role}")})
    return prompts


class BenchmarkConfig(RunConfig):
    """A benchmark run's configuration (``mindeval run``, ``mindeval judge RUN_DIR``): its
    simulation (:data:`SIMULATION_KEYS`), a model and a prompt per role (:data:`ROLES`), its store."""

    kind: Literal["benchmark"] = Field(BENCHMARK_KIND, exclude=True)
    database: str | None = Field(None, exclude=True)  # the store's URL, password redacted
    patient: ModelRecord
    clinician: ModelRecord
    judge: ModelRecord
    prompts: Annotated[dict[str, PromptRecord], AfterValidator(_roles_prompted)]
    profile_ids: list[str]
    turns: int
    seed_scheme: int | None = None  # what conversations' seeds derive from (mindeval.seeds); absent: 1
    repeats: int = 1  # conversations per profile (absent from config.json when 1)
    profiles_source: str | None = None
    profiles_sha256: str | None = None
    # a target given as a folder: where it was and its files' hash (a replay refuses when they changed)
    target_source: str | None = None
    target_sha256: str | None = None
    opening_line: str = OPENING_LINE

    def _omit(self, data: dict[str, Any]) -> None:
        if data.get("repeats") == 1:
            data.pop("repeats")
        for key in ("target_source", "target_sha256"):  # a built-in target: not written
            if data.get(key, 0) is None:
                data.pop(key)


class JudgeRunConfig(RunConfig):
    """A judge run's configuration over rated interactions (``metaeval judge``, ``mindeval judge
    FILE``): no simulation; what it judged (:data:`RATED_KEYS`) and its few-shot draw instead."""

    kind: Literal["metaeval-judge"] = Field(RATED_JUDGE_KIND, exclude=True)
    annotations_source: str | None = Field(None, exclude=True)  # what it judged, as given
    judge: ModelRecord
    prompts: dict[str, PromptRecord]
    annotations_sha256: str
    mapping_version: str
    zeros: str
    fewshot_scores: dict[str, dict[str, float]]
    interaction_ids: list[str]

    def _omit(self, data: dict[str, Any]) -> None:
        for key in ("opening_line", "profiles_source", "profiles_sha256"):  # an older file's: no simulation
            data.pop(key, None)
        if data.get("guidelines_version") == "":  # the target block names the guidelines
            data.pop("guidelines_version")
        for key in ("fewshot_source", "package_version"):  # written around ``config`` (KIND_KEYS)
            data.pop(key, None)

    def judge_prompt(self) -> Any:
        prompt = self.prompts.get("judge")
        return None if prompt is None else prompt.ref


KINDS: dict[str, type[RunConfig]] = {BENCHMARK_KIND: BenchmarkConfig, RATED_JUDGE_KIND: JudgeRunConfig}
_K = TypeVar("_K", bound=RunConfig)


def _kind_of(config: dict[str, Any]) -> str:
    """The kind of a configuration recorded without one: a judge run's names what it judged."""
    return RATED_JUDGE_KIND if "annotations_sha256" in config else BENCHMARK_KIND


def _lacked(err: Any, model: type[RunConfig]) -> bool:
    """Whether a validation error is an absent field that ``model`` requires and the base does not."""
    if err["type"] != "missing" or len(err["loc"]) != 1 or err["loc"][0] not in model.model_fields:
        return False
    base = RunConfig.model_fields.get(err["loc"][0])
    return base is None or not base.is_required()


def of_kind(flat: dict[str, Any], kind: str | None = None) -> RunConfig:
    """``config`` (with the keys around it) as its kind's model (``kind`` None: from its keys); one
    lacking only fields of its kind is the base (:func:`require_kind` names them). Raises
    :class:`~pydantic.ValidationError`."""
    model = KINDS.get(kind or _kind_of(flat), RunConfig)
    try:
        return model.model_validate(flat)
    except ValidationError as exc:
        errors = exc.errors()
        if model is RunConfig or not all(_lacked(e, model) for e in errors):
            raise
    rec = RunConfig.model_validate({k: v for k, v in flat.items()
                                    if k in RunConfig.model_fields or k not in model.model_fields})
    rec._lacks = _error_message(errors[0])
    return rec


def require_kind(config: RunConfig, model: type[_K], path: str | Path = CONFIG_FILE) -> _K:
    """``config`` as a run of ``model``'s kind; otherwise one error naming ``kind`` or the missing
    field (``config.json::config.<field>``)."""
    if isinstance(config, model):
        return config
    kind = model.model_fields["kind"].default
    if config.kind != kind:
        raise MindEvalError(f"expected a {kind} run's configuration, this one is kind {config.kind!r}",
                            path=path, field="kind")
    field, msg = config._lacks
    raise MindEvalError(msg, path=path, field=f"config.{field}" if field else "config")


def upgrade_rated_judge_config(config: dict[str, Any]) -> dict[str, Any]:
    """A rated judge run's ``config`` (or the view its run store holds) as written by earlier
    versions, in today's keys: ``repetitions``/``retries`` are ``judge_samples``/``judge_retries``
    and the judge prompt ``prompt: {ref, sha256}`` is ``prompts: {judge: {ref, sha256}}``
    (the old ``prompts: {judge: REF}`` is dropped). A current config is returned as it is."""
    if "prompt" not in config and not any(k in config for k in _RATED_LEGACY_KEYS):
        return config
    data = {_RATED_LEGACY_KEYS.get(k, k): v for k, v in config.items() if k not in ("prompt", "prompts")}
    if isinstance(config.get("prompt"), dict):
        data["prompts"] = {"judge": config["prompt"]}
    return data
