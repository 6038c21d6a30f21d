"""The one run configuration model: what every kind of run accepts.

``mindeval run`` (a benchmark, or one member of a sweep), ``mindeval judge`` (re-judging a
run directory, or judging rated interactions) and ``metaeval judge`` are all described by
:class:`RunOptions`. Its field names are the command-line option names (``--fewshot-file``
is ``fewshot_file``) and the keys of a run file; the table of keys in
``docs/configuration.md`` documents them, and ``tests/core/test_run_options_names.py``
checks that the options, the fields and the table agree.

A role's model is a :class:`~mindeval.llm.gateway.ModelSpec` (its settings by their field
names; ``--judge-temperature`` is ``judge.temperature``). The retry policy is a field too
(``max_retries``, ``retry_budget_s``): each role's calls carry it, there is no process-wide
setting, so a Python caller gets what the command line does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_FEWSHOT_K,
    DEFAULT_JUDGE_RETRIES,
    DEFAULT_JUDGE_SAMPLES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    DEFAULT_PROMPTS,
    DEFAULT_RETRY_BUDGET_S,
    DEFAULT_SEED,
    DEFAULT_TURNS,
    JUDGE_PROTOCOL,
    MAX_PLANNED_CALLS,
    MAX_REPEATS,
    OPENING_LINE,
    SEED_SCHEME,
)
from .llm.gateway import REASONING_EFFORTS, ModelSpec, server_url
from .llm.retry import RetryPolicy
from .records import DEFAULT_TARGET, PROTOCOLS, TRANSCRIPT_FORMATS

ROLE_FIELDS = ("patient", "clinician", "judge")

# Keys earlier versions of run files used: read as their current name (``progress`` inverted).
LEGACY_KEYS = {"fewshot": "fewshot_file", "db_url": "db", "clinicians": "clinician", "judges": "judge"}

RETRY_GROUP = "retries (429, 408, 5xx, connection errors, timeouts)"
_FEWSHOT_FILE_HELP = ("annotated file (authors' human_annotations.jsonl schema; 'official': the downloaded one) to "
                      "draw few-shot examples from")
_REPLY_TOKENS_HELP = "for --dry-run: the reply length of ROLE in tokens (default {}; repeatable)"


def option(default: Any = ..., description: str = "", *, commands: str = "rjm", **cli: Any) -> Any:
    """A :class:`RunOptions` field with its command line: ``description`` (the meaning in
    ``docs/configuration.md``, and the option's help unless ``help`` is given), ``commands`` that
    offer it (``r`` mindeval run, ``j`` mindeval judge, ``m`` metaeval judge; empty: a run file's
    or the API's key only). ``cli`` (read by :mod:`mindeval.cli.fields`): ``help`` (a string, or
    by command ``{"r": ..., "jm": ...}``), ``metavar``, ``choices``, ``required`` (commands),
    ``aliases`` (hidden earlier names by command), ``release`` (a release file ``official`` names),
    ``doc_default`` / ``doc_commands`` (the table's text when the value alone does not say it).
    Constraints (``ge``, ``gt``, ``le``) and ``default_factory`` go to :func:`pydantic.Field`."""
    field_kw = {k: cli.pop(k) for k in ("ge", "gt", "le", "default_factory") if k in cli}
    extra = {"commands": commands, **cli}
    if "default_factory" in field_kw:
        return Field(description=description, json_schema_extra={"cli": extra}, **field_kw)
    return Field(default, description=description, json_schema_extra={"cli": extra}, **field_kw)


def cli_meta(name: str) -> dict[str, Any]:
    """The command-line metadata of field ``name`` (:func:`option`'s ``cli``, with ``commands``)."""
    extra = RunOptions.model_fields[name].json_schema_extra
    return dict(extra.get("cli", {})) if isinstance(extra, dict) else {"commands": ""}  # type: ignore[arg-type]


def _role(role: str, commands: str, required: str = "") -> Any:
    return option(ModelSpec(), "litellm model string (or `local/…`, `fake/…`)", commands=commands, metavar="MODEL",
                  required=required, help=f"litellm model string for the {role}", doc_default=f"`{DEFAULT_MODEL}`")


_PROMPT_HELP = {"patient": "kind/name (e.g. patient/no_format) or a template file",
                "clinician": "e.g. clinician/four_sentences, or a template file (intake fields only)",
                "judge": "e.g. judge/length_penalty, or a template file"}


def _prompt(role: str, commands: str) -> Any:
    default = f"(default: the target's; for mindeval {DEFAULT_PROMPTS[role]})"
    return option(None, "`kind/name` or a template file", commands=commands, metavar="REF", doc_default="the target's",
                  help={"r": f"{_PROMPT_HELP[role]} {default}",
                        "jm": f"judge prompt (kind/name or a template file) {default}"})


class RunOptions(BaseModel):
    """Everything a run accepts, under the names of its command-line options. Each field is the one
    home of its option: :func:`option` carries its description, commands and command-line form
    (``mindeval.cli.fields`` builds the parsers from it, ``mindeval/docs_table.py`` the docs table)."""

    model_config = ConfigDict(extra="forbid")

    # the three roles (a model string or a mapping of its settings; their settings: ROLE_SETTINGS)
    patient: ModelSpec = _role("patient", "r")
    clinician: ModelSpec = _role("clinician", "r")
    judge: ModelSpec = _role("judge", "rjm", required="jm")
    api_base: str | None = option(  # the server of every role without its own api_base (not in-process models)
        None, "OpenAI-compatible server URL of every role without its own `ROLE.api_base`", metavar="URL", url=True,
        help="OpenAI-compatible server of every role (e.g. http://127.0.0.1:8000/v1); a role's own --ROLE-api-base "
        "wins; no API key is needed for it (one set in the environment is sent)")
    # what is run
    target: str = option(DEFAULT_TARGET, "a built-in target or a target folder", commands="rm", metavar="NAME|PATH",
                         help="the benchmark: a built-in target (`mindeval targets list`) or a target folder")
    patient_prompt: str | None = _prompt("patient", "r")
    clinician_prompt: str | None = _prompt("clinician", "r")
    judge_prompt: str | None = _prompt("judge", "rjm")
    profiles: str | None = option(
        None, "profiles JSONL, `demo` or `official`", commands="r", doc_default="the target's",
        help="profiles JSONL (authors' schema), 'demo' (shipped) or 'official' (after `mindeval data download`) "
        "(default: the target's; for mindeval 'demo')")
    limit: int | None = option(None, "first N profiles (rated interactions: first N judged)", commands="rm",
                               doc_default="all", help={"r": "use only the first N profiles",
                                                        "m": "judge only the first N evaluation interactions"})
    turns: int | None = option(
        None, "patient + clinician turns after the opening line", commands="r", doc_default="the target's",
        help=f"patient + clinician turns after the opening line (default: the target's; for mindeval "
        f"{DEFAULT_TURNS} after {OPENING_LINE!r})")
    seed: int = option(
        DEFAULT_SEED, "seed of every model call and of the few-shot draw; two runs with the same `seed`, target and "
        "profiles send the patient (and the clinician) the same seeds turn by turn, whatever the clinician "
        "([running.md](running.md#same-seed-same-patients))", commands="rm",
        help="seed of every model call and of the few-shot draw; the same seed gives every clinician the same "
        "patient-side seeds")
    seed_scheme: int | None = option(  # None: the current scheme, or a resumed run's own (mindeval.seeds)
        None, "what conversations' seeds derive from: `2` target, profile, repeat and session; `1` (runs made before "
        "it, recorded by their absence) the interaction id, which holds the run id. Unset, a resumed run keeps its "
        "own; a replayed `config.json` gives its recorded one", commands="", ge=1, le=SEED_SCHEME,
        doc_default="the current (`2`)")
    repeats: int = option(
        1, "conversations per profile, each seeded apart (repeat 0 keeps the seeds of a run without repeats); at "
        f"most {MAX_REPEATS:,} ([running.md](running.md#upper-bounds))",
        commands="r", ge=1, le=MAX_REPEATS, help="conversations per profile, each seeded apart (the first keeps the "
        f"seeds of a run without repeats; at most {MAX_REPEATS:,}); the leaderboard keeps a profile's conversations "
        "together")
    # the judge
    judge_retries: int = option(DEFAULT_JUDGE_RETRIES, "attempts for an unparseable judge reply", ge=1,
                                help="attempts for an unparseable judge reply before it is recorded as failed",
                                aliases={"m": ["--retries"]})
    judge_samples: int = option(DEFAULT_JUDGE_SAMPLES, "judge samples per interaction", ge=1,
                                help="judge samples per interaction (30 in the paper's meta-evaluation)",
                                aliases={"m": ["--repetitions", "-n"]})
    retry_refused: bool = option(
        False, "re-judge stored refused (failed) judgments, each as a new, counted round "
        "([judging.md](judging.md#a-refused-judgment-is-final))",
        help="re-judge the stored judgments that failed (refused): each as a new round with a new answer code; every "
        "round is kept and counted (summary, leaderboard, viewer). Without it a refused judgment is final and a "
        "re-run judges only what is missing")
    fewshot_file: str | None = option(
        None, "annotated file the few-shot examples are drawn from, or (`mindeval run`) a run directory: its "
        "corrected conversations with their corrected scores ([corrections.md](corrections.md))",
        metavar="FILE", release="human_annotations.jsonl", aliases={"rjm": ["--judge-fewshot"], "m": ["--fewshot-from"]},
        help={"rj": _FEWSHOT_FILE_HELP, "m": _FEWSHOT_FILE_HELP + " (default: --annotations); excluded from evaluation"})
    fewshot_k: int = option(
        DEFAULT_FEWSHOT_K, "few-shot examples shown to the judge", ge=0, metavar="K", aliases={"m": ["--fewshot"]},
        help="few-shot examples shown to the judge: annotated interactions drawn (seeded) from the few-shot file, "
        "with the annotators' mean scores; an example is never itself judged")
    judge_protocol: str = option(
        JUDGE_PROTOCOL, "`mindeval` or `paper`", choices=PROTOCOLS,
        help="mindeval (default): integer JSON scores; paper: the authors' few-shot examples with our instructions "
        "(their 5 rated interactions from human_annotations.jsonl, `Name: score` replies, fractional scores, high "
        "reasoning; our instructions, rubric wording and transcript layout, so not the authors' judge)")
    transcript_format: str = option(  # "authors": the user's copy of the authors' template, forgeable
        "mindeval", "`mindeval` or `authors`", commands="r", choices=TRANSCRIPT_FORMATS,
        help="mindeval (default): hardened transcript and a random answer code per judgment; authors: exact "
        "reproduction with your copy of the authors' template (--judge-prompt FILE, --judge-protocol paper): their "
        "<member>/<therapist> tags and first-match `Name: score` reading. Forgeable by the clinician, labelled not "
        "hardened")
    # rated interactions (``metaeval judge``, ``mindeval judge FILE``)
    annotations: str | None = option(
        None, "rated interactions: the authors' file or an annotation database URL", commands="m", required="m",
        release="human_annotations.jsonl", doc_commands="m (j: SOURCE)",
        help="annotated interactions: the authors' human_annotations.jsonl ('official': the downloaded one) or an "
        "annotation database URL; or a `mindeval run` directory (re-judged as `mindeval judge RUN_DIR` does)")
    study: str | None = option(None, "rating study when `annotations` is a database URL", commands="m",
                               help="rating study (name or id) when --annotations is a database URL")
    mapping: str | None = option(None, "criterion → sub-axis mapping of the few-shot scores", commands="m",
                                 doc_default="the shipped one",
                                 help="criterion → sub-axis mapping file for the few-shot scores")
    zeros: str = option("missing", "how a 0 in human ratings counts", commands="m", choices=("missing", "zero"),
                        help="a 0 in human ratings: not rated (missing) or a score of 0 as in the paper")
    label: str | None = option(None, "the judge's name in comparisons", commands="m", doc_default="the model string",
                               help="name of this judge in comparisons (default: the model string)")
    # where and how
    out: Path = option(..., "run directory (a sweep: their parent)", required="jm", metavar="DIR", help={
        "r": "run directory (holds run.db and outputs); for a sweep the parent of one directory per run",
        "j": "output run directory (one sub-directory per source when several are given)",
        "m": "output directory (resumable)"})
    db: str | None = option(None, "SQLAlchemy URL of the run store", metavar="URL", doc_default="`OUT/run.db`", help={
        "r": "SQLAlchemy URL instead of DIR/run.db",
        "j": "SQLAlchemy URL of the store (default: a copy of the source's run.db in DIR)",
        "m": "SQLAlchemy URL of the store (default: OUT/run.db)"})
    concurrency: int = option(DEFAULT_CONCURRENCY, "interactions (judgments) in parallel", ge=1,
                              help={"r": "interactions in parallel", "jm": "judgments in parallel"})
    max_retries: int = option(
        DEFAULT_MAX_RETRIES, "retries of a call after a transient error (429, 5xx, timeouts)", ge=0, metavar="N",
        help=f"retries per call after the first attempt (default {DEFAULT_MAX_RETRIES})", group=RETRY_GROUP)
    retry_budget_s: float = option(
        DEFAULT_RETRY_BUDGET_S, "seconds one call may spend on attempts and waits", gt=0, metavar="S",
        help=f"total seconds one call may spend on attempts and waits (default {DEFAULT_RETRY_BUDGET_S:g})",
        group=RETRY_GROUP)
    new_run: bool = option(False, "start a new run even if `out` holds one", commands="rm",
                           help={"r": "start a new run even if --out holds one",
                                 "m": "start a new run even if --out holds one with other options"})
    overwrite: bool = option(  # run even where outputs exist without their store (buys their calls again)
        False, "run where outputs exist without their store (buys their calls again)",
        help="run even where --out holds a run's outputs without its store run.db (or with another run's): their "
        "calls are bought again and the outputs replaced")
    max_cost: float | None = option(
        None, "stop cleanly before the spend could exceed this many dollars", metavar="USD", doc_default="no cap",
        help="stop cleanly (resumable) before the run's spend could exceed USD (default: no cap)")
    dry_run: bool = option(False, "print calls, tokens and dollars; call no model",
                           help="print the number of calls and estimated tokens and dollars per role; call no model")
    assume_reply_tokens: dict[str, int] = option(  # for dry_run: reply length per role
        description="for `dry_run`: `{ROLE: N}` (option: `ROLE=N`, repeatable)", default_factory=dict,
        metavar="ROLE=N", doc_default="per role",
        help={"r": _REPLY_TOKENS_HELP.format("patient 80, clinician 150, judge 120"),
              "jm": _REPLY_TOKENS_HELP.format("judge 120")})
    yes: bool = option(
        False, f"run even when the run plans more than {MAX_PLANNED_CALLS:,} model calls, and ask nothing "
        "([running.md](running.md#upper-bounds))", commands="rj",
        help=f"run without asking, even beyond the ceiling of {MAX_PLANNED_CALLS:,} planned model calls "
        "(without it: refused beyond the ceiling; asked first beyond a smaller threshold when interactive)")
    quiet: bool = option(False, "no progress output", commands="rj")
    judge_only: bool = option(  # `mindeval judge RUN_DIR`: judge the stored conversations, simulate nothing
        False, "judge the stored conversations, simulate nothing (`mindeval judge RUN_DIR` sets it)", commands="",
        doc_commands="API")

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any) -> Any:
        """Earlier key names, and a role given as its model string."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in LEGACY_KEYS.items():
            if old in data and new not in data:
                data[new] = data.pop(old)
        if "progress" in data and "quiet" not in data:
            data["quiet"] = not data.pop("progress")
        for role in ROLE_FIELDS:
            if isinstance(data.get(role), str):
                data[role] = {"model": data[role]}
        return data

    @field_validator("api_base")
    @classmethod
    def _server_url(cls, value: str | None) -> str | None:
        return server_url(value)

    @field_validator("label")
    @classmethod
    def _named(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an empty label names nobody: leave it out to use the model string")
        return value

    @model_validator(mode="after")
    def _run_settings_on_every_role(self) -> RunOptions:
        """Each role's calls carry the run's retry policy (unless its spec has one) and ``api_base``
        (unless the role names its own server, or its model runs in-process)."""
        policy = self.policy()
        for role in ROLE_FIELDS:
            spec = getattr(self, role)
            update: dict[str, Any] = {} if spec.retry is not None else {"retry": policy}
            if self.api_base and spec.api_base is None and spec.entry.path != "inprocess":
                update["api_base"] = self.api_base
            if update:
                object.__setattr__(self, role, spec.model_copy(update=update))
        return self

    @property
    def progress(self) -> bool:
        return not self.quiet

    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.max_retries, budget_s=self.retry_budget_s)

    def keys(self) -> dict[str, Any]:
        """The options as run-file keys (roles as mappings of their settings)."""
        return self.model_dump(mode="json")


# A role's settings (fields of ModelSpec) on the command line: ``--ROLE`` + ``suffix`` (None: a run
# file's or the API's key only), how it reads (``type``: int, sampling, seconds, at_least; default
# text), its help (``{timeout:g}``: the role's default timeout) and its meaning in the docs table.
# ``plain``: ``metaeval judge`` and ``metaeval realism`` also read the earlier ``--SUFFIX`` (hidden).
ROLE_SETTINGS: dict[str, dict[str, Any]] = {
    "temperature": {"suffix": "-temperature", "metavar": "T", "type": "sampling", "plain": True,
                    "description": "sampling temperature, 0 to 2", "doc_default": "provider's"},
    "max_tokens": {"suffix": "-max-tokens", "metavar": "N", "type": "at_least", "plain": True, "help": None,
                   "doc_default": "provider's",
                   "description": "reply length cap (the embedded model's defaults: patient 96, clinician 128, judge "
                   "64; a reply-level target's embedded judge 32 + 16 per reply key, i.e. 176 for `reply_safety`'s "
                   "level and eight flags)"},
    "reasoning_effort": {"suffix": "-reasoning-effort", "metavar": "LEVEL", "plain": True, "doc_default": "—",
                         "choices": REASONING_EFFORTS,
                         "help": "none | minimal | low | medium | high (providers that support it)",
                         "description": "`none`, `minimal`, `low`, `medium`, `high`"},
    "api_base": {"suffix": "-api-base", "metavar": "URL", "type": "url", "doc_default": "`api_base`",
                 "help": "OpenAI-compatible server URL (e.g. http://127.0.0.1:8000/v1)",
                 "description": "this role's OpenAI-compatible server URL"},
    "extra": {"suffix": None, "doc_default": "`{}`", "doc_commands": "file, API",
              "description": "other request parameters (e.g. `top_p`)"},
    "timeout_s": {"suffix": "-timeout", "metavar": "S", "type": "seconds", "doc_default": "per role",
                  "help": "seconds per request before it is retried (default {timeout:g})",
                  "description": "seconds per request before it is retried"},
    "rpm": {"suffix": "-rpm", "metavar": "N", "type": "at_least", "doc_default": "—",
            "help": "at most N requests per minute for this role (shared by all workers)",
            "description": "requests per minute for this role"},
    "tpm": {"suffix": "-tpm", "metavar": "N", "type": "at_least", "doc_default": "—",
            "help": "at most N tokens per minute for this role (shared by all workers)",
            "description": "tokens per minute for this role"},
}


# How a run is carried out, not what it is: never in config.json; a replay or a re-judge run takes
# them from its own command line.
RUN_SETTINGS = ("out", "db", "concurrency", "max_retries", "retry_budget_s", "new_run", "overwrite", "max_cost",
                "dry_run", "assume_reply_tokens", "yes", "quiet", "retry_refused")


def option_keys() -> list[str]:
    """Every key of a run file: the fields, and each role's settings as ``ROLE.setting``."""
    keys = []
    for name in RunOptions.model_fields:
        if name in ROLE_FIELDS:
            keys += [f"{name}.{s}" for s, f in ModelSpec.model_fields.items() if not f.exclude]
        else:
            keys.append(name)
    return keys


def cli_option(key: str) -> str | None:
    """The command-line option of a run-file key (``fewshot_file`` -> ``--fewshot-file``,
    ``judge.temperature`` -> ``--judge-temperature``, ``judge.model`` -> ``--judge``); None for
    the keys no command line sets."""
    role, _, setting = key.rpartition(".")
    if role:
        if setting == "model":
            return f"--{role}"
        suffix = ROLE_SETTINGS[setting]["suffix"]
        return None if suffix is None else f"--{role}{suffix}"
    return "--" + key.replace("_", "-") if cli_meta(key)["commands"] else None
