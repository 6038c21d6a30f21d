"""Reading a run directory: the one place an older directory is upgraded.

Runs of MindEval made before run directories carried their target have no ``target``
block in ``config.json``; they were judged against the built-in ``mindeval`` target.
:func:`read_config` (and :func:`read_run`, which uses it) adds that target's block when
it is missing (and :meth:`~mindeval.records.RunConfig.from_json` reads an older judge run's
keys as today's), so every reader — the leaderboard, replay and re-judging, ``metaeval``, the
app's importer, the viewer — finds a target in every run. The file itself is not rewritten.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import MindEvalError
from .records import (
    CONFIG_FILE,
    DEFAULT_TARGET,
    INTERACTIONS_FILE,
    JUDGMENTS_FILE,
    SUMMARY_FILE,
    InteractionRecord,
    JudgmentRecord,
    Run,
    RunConfig,
    RunSummary,
    TargetInfo,
    of_kind,
    read_json_object,
    upgrade_rated_judge_config,
)
from .targets import load_target


@lru_cache(maxsize=1)
def legacy_target() -> TargetInfo:
    """The block of the built-in ``mindeval`` target: what a directory without one was judged against."""
    return load_target(DEFAULT_TARGET).block()


def upgrade_config(config: dict[str, Any]) -> dict[str, Any]:
    """A run configuration (``config.json``'s ``config``, either kind) with its target block."""
    if config.get("target"):
        return config
    return {**config, "target": legacy_target().model_dump(mode="json")}


def upgraded_view(config: dict[str, Any]) -> dict[str, Any] | None:
    """A configuration a run store holds from an earlier version (either kind, any form) as
    today's hashed view (:meth:`RunConfig.hashed_view`); None when it does not read as one.
    What decides that an older run is the same run, resumed (:func:`mindeval.store.runs.open_run`)."""
    try:
        return of_kind(upgrade_config(upgrade_rated_judge_config(config))).hashed_view()
    except ValidationError:
        return None


def read_config(path: str | Path) -> RunConfig:
    """``config.json`` read and upgraded (:func:`upgrade_config`); bad fields name file:line:field."""
    data = read_json_object(path)
    config = data.get("config", {})
    if isinstance(config, dict):
        data = {**data, "config": upgrade_config(config)}
    return RunConfig.from_json(data, path)


def run_target(run_dir: str | Path) -> TargetInfo:
    """The target block of a run directory (one without ``config.json`` holds MindEval's judgments)."""
    config = Path(run_dir) / CONFIG_FILE
    return read_config(config).target if config.is_file() else legacy_target()


def read_run(path: str | Path) -> Run:
    """Read and validate a run directory; any bad row is a :class:`MindEvalError` naming file:line:field.

    A directory without ``config.json`` (judgments only) is read as MindEval's."""
    d = Path(path)
    if not d.is_dir():
        raise MindEvalError("run directory not found", path=d)
    files = {name: d / name for name in (CONFIG_FILE, INTERACTIONS_FILE, JUDGMENTS_FILE, SUMMARY_FILE)}
    if not files[CONFIG_FILE].is_file() and not files[JUDGMENTS_FILE].is_file():
        raise MindEvalError(f"not a run directory ({CONFIG_FILE} not found)", path=d)

    def present(name: str) -> bool:
        return files[name].is_file()

    config = read_config(files[CONFIG_FILE]) if present(CONFIG_FILE) else None
    target = config.target if config else legacy_target()
    return Run(
        path=str(d),
        config=config,
        target=target,
        interactions=InteractionRecord.read(files[INTERACTIONS_FILE]) if present(INTERACTIONS_FILE) else [],
        judgments=JudgmentRecord.read(files[JUDGMENTS_FILE], {"target": target})
        if present(JUDGMENTS_FILE) else [],
        summary=RunSummary.read(files[SUMMARY_FILE]) if present(SUMMARY_FILE) else None,
    )
