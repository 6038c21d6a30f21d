"""All defaults in one place: constants only (this module imports nothing of MindEval).

The run configuration and its hash are in :mod:`mindeval.run_config`; the retry policy
in :mod:`mindeval.llm.retry`; the provider table in :mod:`mindeval.llm.providers`.
"""

from __future__ import annotations

import re

EMBEDDED_MODEL = "local/smollm2"  # the embedded offline model (the `local` provider)
DEFAULT_MODEL = EMBEDDED_MODEL
DEFAULT_TURNS = 20  # patient + clinician turns after the opening "Hello." (paper fn. 13)
OPENING_LINE = "Hello."
# Names and ids in the YAML files (target names, labels, guideline ids, question ids): snake_case.
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
# Multi-session targets (``sessions: N``): what the first session's templates receive as
# ${memory} (clinician) and ${situation} (patient), before any notes or next-session step exist.
FIRST_MEMORY = "No notes yet: this is your first session with this member."
FIRST_SITUATION = "This is your first session with the companion."
DEFAULT_CONCURRENCY = 4
DEFAULT_JUDGE_RETRIES = 3
DEFAULT_JUDGE_SAMPLES = 1
DEFAULT_FEWSHOT_K = 5  # the paper shows the judge five annotated examples
DEFAULT_SEED = 0
SEED_SCHEME = 2  # what new runs' conversation seeds derive from (mindeval.seeds); 1: runs made before
# Resamples of every bootstrap interval and permutation test: `mindeval leaderboard` (also its
# minimum) and `metaeval compare` / `power` (docs/leaderboard.md, docs/metaeval.md).
DEFAULT_RESAMPLES = 2000
# metaeval compare: the verdict's non-inferiority margin in Kendall τ (half of it for MIPSA).
METAEVAL_MARGIN = 0.1
# metaeval compare: the alternative annotator test's ε, the paper's value for expert annotators
# (Calderon et al. 2025: 0.2 experts, 0.15 skilled annotators, 0.1 crowd workers).
METAEVAL_EPSILON = 0.2
DEFAULT_PROMPTS = {
    "patient": "patient/default",
    "clinician": "clinician/default",
    "judge": "judge/default",
}
# Generation defaults for the embedded model (a 135M model: keep replies short).
EMBEDDED_DEFAULTS = {
    "patient": {"temperature": 0.7, "max_tokens": 96},
    "clinician": {"temperature": 0.7, "max_tokens": 128},
    "judge": {"temperature": 0.0, "max_tokens": 64},
    # Room for four backstory paragraphs (~120 words each).
    "backstory": {"temperature": 0.7, "max_tokens": 768},
}
# `metaeval realism`: the patient prompt variants compared with humans, and the clinician
# greeting the LLM patient answers (${name} = the profile's name).
REALISM_VARIANTS: tuple[str, ...] = ("default", "no_format", "no_profile", "role_only")
REALISM_OPENER = "Hi ${name}. How are you doing?"
# Assumptions of `mindeval run --dry-run` and of the --max-cost guard (docs/architecture.md):
# ~4 characters per token, replies of these lengths (or --ROLE-max-tokens when smaller),
# and a few tokens of chat formatting per message.
CHARS_PER_TOKEN = 4
# Upper bounds (docs/running.md#upper-bounds): a target's sessions per conversation, a run's
# --repeats, and the model calls a run or re-judge may plan without --yes (run and judge refuse
# beyond it); over CONFIRM_CALLS an interactive command asks before spending.
MAX_SESSIONS = 50
MAX_REPEATS = 1000
MAX_PLANNED_CALLS = 100_000
CONFIRM_CALLS = 5_000
# Sampling parameters the providers accept (OpenAI's ranges; others are narrower or equal): a value
# outside is refused for every role, on the command line and in run files.
SAMPLING_RANGES = {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)}
ASSUMED_REPLY_TOKENS = {"patient": 80, "clinician": 150, "judge": 120, "backstory": 700}
TOKENS_PER_MESSAGE = 4
# Prompt caches as providers run them: no prefix under 1,024 tokens is cached (Anthropic
# Sonnet/Opus, OpenAI); automatic caches (OpenAI) hit in 128-token steps.
CACHE_MIN_TOKENS = 1024
AUTO_CACHE_STEP = 128
JUDGE_PROTOCOL = "mindeval"  # or "paper" (the authors' few-shot examples with our instructions; mindeval.judging.protocols)
# The authors' judge sampling settings (their README / paper §4.1: Claude Sonnet 4.5 with
# high reasoning, max_completion_tokens 16000, provider-default temperature).
PAPER_JUDGE_SAMPLING = {"reasoning_effort": "high", "max_tokens": 16000}
PAPER_JUDGE_PROMPT = "judge/paper"
# How a call is made, not what it asks: recorded with a run (config.json), never hashed.
CALL_SETTINGS = ("timeout_s", "rpm", "tpm")
# Per-call settings of real providers (not part of the config hash).
DEFAULT_TIMEOUT_S = {"patient": 120.0, "clinician": 120.0, "judge": 300.0}  # reasoning judges are slow
DEFAULT_CALL_TIMEOUT_S = 120.0  # a call made without a role (e.g. from the app)
DEFAULT_MAX_RETRIES = 6  # retries of 429/408/5xx/connection errors/timeouts, after the first attempt
DEFAULT_RETRY_BUDGET_S = 600.0  # total time one call may spend retrying
DEFAULT_EMPTY_RETRIES = 2  # an empty reply is asked again this often, then it is an error
DEFAULT_BASE_DELAY_S = 1.0  # the first backoff of a retry; doubles per attempt, with full jitter
DEFAULT_MAX_DELAY_S = 60.0
# A turn longer than this many characters is shown to models (patient, clinician, judge) cut
# here with a "[cut: N more characters not shown]" marker (mindeval.judging.textguard); stored whole.
MAX_TURN_CHARS = 8000
