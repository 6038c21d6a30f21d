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

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_FEWSHOT_K,
    DEFAULT_JUDGE_RETRIES,
    DEFAULT_JUDGE_SAMPLES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BUDGET_S,
    DEFAULT_SEED,
    JUDGE_PROTOCOL,
    SEED_SCHEME,
)
from .llm.gateway import ModelSpec
from .llm.retry import RetryPolicy
from .records import DEFAULT_TARGET

ROLE_FIELDS = ("patient", "clinician", "judge")

# Keys earlier versions of run files used: read as their current name (``progress`` inverted).
LEGACY_KEYS = {"fewshot": "fewshot_file", "db_url": "db", "clinicians": "clinician", "judges": "judge"}


class RunOptions(BaseModel):
    """Everything a run accepts, under the names of its command-line options."""

    model_config = ConfigDict(extra="forbid")

    # the three roles (a model string or a mapping of its settings)
    patient: ModelSpec = ModelSpec()
    clinician: ModelSpec = ModelSpec()
    judge: ModelSpec = ModelSpec()
    api_base: str | None = None  # the server of every role without its own api_base (not in-process models)
    # what is run
    target: str = DEFAULT_TARGET  # a built-in target's name or a target folder
    patient_prompt: str | None = None  # None: the target's
    clinician_prompt: str | None = None
    judge_prompt: str | None = None
    profiles: str | None = None  # None: the target's (MindEval: the demo profiles)
    limit: int | None = None  # first N profiles (rated interactions: first N evaluated)
    turns: int | None = None
    seed: int = DEFAULT_SEED
    # None: the current scheme, or a resumed run's own (mindeval.seeds); a replayed config.json gives its own
    seed_scheme: int | None = Field(None, ge=1, le=SEED_SCHEME)
    repeats: int = Field(1, ge=1)  # conversations per profile (repeat 0 keeps a run's seeds)
    # the judge
    judge_retries: int = DEFAULT_JUDGE_RETRIES
    judge_samples: int = DEFAULT_JUDGE_SAMPLES
    retry_refused: bool = False  # re-judge stored failed (refused) judgments as a new, counted round
    fewshot_file: str | None = None
    fewshot_k: int = DEFAULT_FEWSHOT_K
    judge_protocol: str = JUDGE_PROTOCOL
    transcript_format: str = "mindeval"  # "authors": the user's copy of the authors' template, forgeable
    # rated interactions (``metaeval judge``, ``mindeval judge FILE``)
    annotations: str | None = None  # the authors' file or an annotation database URL
    study: str | None = None  # the rating study when ``annotations`` is a database URL
    mapping: str | None = None  # criterion -> sub-axis mapping file of the few-shot scores
    zeros: str = "missing"
    label: str | None = None  # the judge's name in comparisons (default: its model string)
    # where and how
    out: Path
    db: str | None = None  # SQLAlchemy URL instead of OUT/run.db
    concurrency: int = DEFAULT_CONCURRENCY
    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0)
    retry_budget_s: float = Field(DEFAULT_RETRY_BUDGET_S, gt=0)
    new_run: bool = False
    overwrite: bool = False  # run even where outputs exist without their store (buys their calls again)
    max_cost: float | None = None
    dry_run: bool = False
    assume_reply_tokens: dict[str, int] = Field(default_factory=dict)  # for dry_run: reply length per role
    quiet: bool = False
    judge_only: bool = False  # `mindeval judge RUN_DIR`: judge the stored conversations, simulate nothing

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
    if key in NO_OPTION:
        return None
    role, _, setting = key.rpartition(".")
    if role:
        setting = {"model": "", "timeout_s": "timeout"}.get(setting, setting)
        return "--" + "-".join(x for x in (role, setting.replace("_", "-")) if x)
    return "--" + key.replace("_", "-")


# Keys only a run file or the Python API sets (``judge_only``: ``mindeval judge RUN_DIR`` sets it;
# ``seed_scheme``: replaying a ``config.json``).
NO_OPTION = ("judge_only", "seed_scheme", "patient.extra", "clinician.extra", "judge.extra")
