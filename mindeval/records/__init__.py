"""Domain records (pydantic): a patient profile, a conversation and its judgments, a run's
target block and its recorded configuration, and the files of a run directory.

The records sit at the bottom of the packages: they import only :mod:`mindeval.errors`,
:mod:`mindeval.files` and :mod:`mindeval.config`. One module per concept; every name is
imported from here (``from mindeval.records import Profile``):

- :mod:`.io`: reading and writing JSONL rows and JSON documents, the files' names
- :mod:`.profiles`: ``Profile`` (the authors' ``profiles.jsonl`` schema) and its fields
- :mod:`.target`: the target block (``TargetInfo``) and the one score rule (``check_scores``)
- :mod:`.memory`: who writes and reads the between-session memory (``MemorySpec``), its bound
- :mod:`.rows`: a conversation, its judgments, and their rows in a run directory
- :mod:`.config_json`: ``config.json`` (``RunConfig``, one subclass per kind of run)
- :mod:`.hashing`: what a configuration's hash covers
- :mod:`.run`: a run directory read back
"""

from .config_json import (
    BENCHMARK_KIND,
    KIND_KEYS,
    KINDS,
    RATED_JUDGE_KIND,
    RATED_KEYS,
    RECORD_KEYS,
    RUN_KINDS,
    SIMULATION_KEYS,
    BenchmarkConfig,
    JudgeRunConfig,
    ModelRecord,
    PromptRecord,
    RunConfig,
    of_kind,
    require_kind,
    upgrade_rated_judge_config,
)
from .hashing import JUDGE_KEYS, hash_config, hashed_view, simulation_view
from .io import (
    CONFIG_FILE,
    INTERACTIONS_FILE,
    JUDGMENTS_FILE,
    SUMMARY_FILE,
    _validation_message,
    read_json_object,
    read_jsonl,
    validate_row,
)
from .memory import DEFAULT_MEMORY, MemorySpec, bound_log, log_entries
from .profiles import (
    ATTRIBUTE_FIELDS,
    INTAKE_FIELDS,
    PATIENT_ONLY_FIELDS,
    Profile,
    ProfileAttributes,
    load_profiles,
    profile_from_json,
    write_profiles,
)
from .rows import (
    Interaction,
    InteractionRecord,
    Judgment,
    JudgmentRecord,
    Message,
    ReplyRating,
    RunSummary,
    SessionInfo,
    Turn,
    Usage,
    mean_of,
)
from .run import Run
from .target import (
    AXES,
    DEFAULT_ROLES,
    DEFAULT_TARGET,
    PROTOCOLS,
    ROLES,
    TRANSCRIPT_FORMATS,
    LevelInfo,
    ParseStatus,
    Role,
    ScaleInfo,
    ScoreInfo,
    TargetInfo,
    check_scores,
    identity_view,
    plain_scores,
)

__all__ = [
    "ATTRIBUTE_FIELDS", "AXES", "BENCHMARK_KIND", "CONFIG_FILE", "DEFAULT_MEMORY", "DEFAULT_ROLES", "DEFAULT_TARGET", "INTAKE_FIELDS",
    "INTERACTIONS_FILE", "JUDGE_KEYS", "JUDGMENTS_FILE", "KINDS", "KIND_KEYS", "PATIENT_ONLY_FIELDS", "PROTOCOLS",
    "RATED_JUDGE_KIND", "RATED_KEYS", "RECORD_KEYS", "ROLES", "RUN_KINDS", "SIMULATION_KEYS", "SUMMARY_FILE",
    "TRANSCRIPT_FORMATS", "BenchmarkConfig", "Interaction", "InteractionRecord", "JudgeRunConfig", "Judgment",
    "JudgmentRecord", "LevelInfo", "MemorySpec", "Message", "ModelRecord", "ParseStatus", "Profile", "ProfileAttributes",
    "PromptRecord", "ReplyRating", "Role", "Run", "RunConfig", "RunSummary", "ScaleInfo", "ScoreInfo", "SessionInfo",
    "TargetInfo", "Turn", "Usage", "_validation_message", "bound_log", "check_scores", "hash_config", "hashed_view",
    "identity_view", "load_profiles", "log_entries", "mean_of", "of_kind", "plain_scores", "profile_from_json",
    "read_json_object", "read_jsonl", "require_kind", "simulation_view", "upgrade_rated_judge_config",
    "validate_row", "write_profiles",
]
