"""Resume or start a run (:func:`open_run`): a stored run with the same configuration resumes;
one that differs only in the judge lends its conversations; anything else is refused unless ``new_run``."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel

from ..records import (
    BenchmarkConfig,
    Profile,
    simulation_view,
)
from ..store import runs
from ..store.db import Database


class OpenedRun(BaseModel):
    """The run an invocation works on: its id, the run that holds its conversations (itself,
    or an earlier run of the same simulation with another judge), and whether it resumed."""

    run_id: str
    conversations: str
    resumed: bool


def open_run(db: Database, config: BenchmarkConfig, new_run: bool,
             among: Collection[str] | None = None) -> OpenedRun:
    """Resume the run with this configuration, or start one.

    A stored run that differs only in the judge (:func:`mindeval.run_config.simulation_view`)
    lends its conversations: the new run judges them and simulates nothing. Any other
    stored configuration is refused with a diff unless ``new_run``.
    """
    stored = runs.stored_runs(db, "benchmark")
    full = config.hash()
    if not new_run:
        for rid, chash, _ in reversed(stored):
            if chash == full:
                return OpenedRun(run_id=rid, conversations=_owner(stored, rid), resumed=True)
    sim = simulation_view(config.model_dump(mode="json"))
    owner = next((rid for rid, _, cfg in stored if simulation_view(cfg) == sim), None)
    if owner is None:
        run_id, resumed = runs.open_run(db, "benchmark", config.model_dump(mode="json"), full,
                                        config.hashed_view(), new_run=new_run, among=among)
        return OpenedRun(run_id=run_id, conversations=run_id, resumed=resumed)
    run_id = f"run-{full[:8]}-{uuid.uuid4().hex[:6]}"
    runs.ensure_run(db, run_id, config.model_dump(mode="json"), "benchmark", full)
    return OpenedRun(run_id=run_id, conversations=_owner(stored, owner), resumed=False)


def _owner(stored: list[tuple[str, str, dict[str, Any]]], run_id: str) -> str:
    """The first stored run with ``run_id``'s simulation: the one whose conversations it judges."""
    sim = simulation_view(next(cfg for rid, _, cfg in stored if rid == run_id))
    return next(rid for rid, _, cfg in stored if simulation_view(cfg) == sim)


def interaction_id(run_id: str, position: int, profile: Profile, repeat: int = 0) -> str:
    """A conversation's id; repeat 0 keeps the id of a run without repeats, a later repeat adds ``-rN``
    (its seeds: :func:`mindeval.seeds.conversation_key`)."""
    return f"{run_id}-{position:03d}-{profile.id}" + (f"-r{repeat}" if repeat else "")
