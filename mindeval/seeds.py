"""Where a conversation's seeds come from: the one home of the seed scheme.

Every model call of a conversation (each patient and clinician turn, the clinician's notes and the
patient's next situation between sessions) sends ``turn_seed(run seed, key, step)``. The key is
:func:`conversation_key`; which one is the run's *seed scheme*, recorded as ``seed_scheme`` in
``config.json`` (absent: scheme 1):

* **scheme 2** (every run started since): ``<target>:<profile>:r<repeat>:s<session>``, for every
  target. Two runs with the same ``--seed``, target and profiles send the same seeds turn by turn,
  whatever their clinician (or judge, or run id): every clinician meets the same patient-side dice.
  The clinician's own turns derive from the same key (at its own turn indices): the system under
  test is seeded apart from the run id too.
* **scheme 1** (runs made before): a single-session target's conversation keyed by its interaction
  id (which holds the run id, so two runs shared no seed), a multi-session target's by
  ``<profile>:r<repeat>:s<session>``. A run stored with it resumes with it (:func:`stored_scheme`):
  its stored calls are found by their request, seed included, and none is bought again.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from .config import SEED_SCHEME
from .records import BenchmarkConfig, simulation_view

if TYPE_CHECKING:
    from .store.db import Database

__all__ = ["LEGACY_SCHEME", "SEED_SCHEME", "conversation_key", "recorded_scheme", "stored_scheme", "turn_seed"]

LEGACY_SCHEME = 1  # the scheme of a configuration that records none


def turn_seed(seed: int, key: str, idx: int) -> int:
    """The seed of step ``idx`` of the conversation keyed ``key`` (a turn's index; -1 the clinician's
    notes, -2 the patient's next situation between sessions)."""
    h = hashlib.sha256(f"{seed}:{key}:{idx}".encode()).hexdigest()
    return int(h[:8], 16)


def recorded_scheme(scheme: int | None) -> int | None:
    """``seed_scheme`` as a configuration records it: None for scheme 1 (absent, so the configuration
    and hash of every run made before schemes are what they were)."""
    return None if scheme in (None, LEGACY_SCHEME) else scheme


def conversation_key(config: BenchmarkConfig, profile_id: str, repeat: int, session: int) -> str | None:
    """What the seeds of session ``session`` (1-based) of repeat ``repeat`` of profile ``profile_id``
    derive from under ``config``'s seed scheme; None: its interaction id (scheme 1, one session)."""
    if config.seed_scheme is None:
        return f"{profile_id}:r{repeat}:s{session}" if config.target.sessions > 1 else None
    return f"{config.target.name}:{profile_id}:r{repeat}:s{session}"


def stored_scheme(db: Database, config: BenchmarkConfig) -> BenchmarkConfig:
    """``config``, or ``config`` under scheme 1 when a run stored in ``db`` with scheme 1 is the one it
    resumes or whose conversations it judges (and none matches it as it is)."""
    from .store.runs import stored_runs  # light imports above: run files read the scheme

    stored = stored_runs(db, "benchmark")
    if config.seed_scheme is None or not stored:
        return config

    def matches(c: BenchmarkConfig) -> bool:
        full, sim = c.hash(), simulation_view(c.model_dump(mode="json"))
        return any(h == full or simulation_view(cfg) == sim for _, h, cfg in stored)
    legacy = config.model_copy(update={"seed_scheme": None})
    return legacy if not matches(config) and matches(legacy) else config
