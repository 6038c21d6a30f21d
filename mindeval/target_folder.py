"""A target given as a folder, recorded so that a replay finds it again: ``config.json`` keeps the
folder's absolute path (``target_source``) and the hash of its files (``target_sha256``); a
built-in target is recorded by its name alone. Replaying (``mindeval judge RUN``, ``mindeval run
--config RUN/config.json``) reads the target from that path, from any working directory, and
refuses with one line when the folder moved or its files changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import MindEvalError
from .files import sha256_folder
from .resources import targets_dir
from .targets import Target


def target_source(ref: str, target: Target) -> dict[str, str]:
    """``target_source`` and ``target_sha256`` of a run of ``target`` (``--target ref``); none for
    a built-in target."""
    folder = target.path.parent.resolve()
    if folder.parent == targets_dir().resolve():
        return {}
    return {"target_source": str(folder), "target_sha256": sha256_folder(folder)}


def replayed_target(config: Any, path: str | Path) -> str:
    """The ``--target`` that gives back the target a recorded ``config`` (a RunConfig) ran:
    its recorded folder, checked unchanged, or the built-in target's name."""
    source = getattr(config, "target_source", None)
    if not source:
        return config.target.name
    if not (Path(source) / "target.yaml").is_file():
        raise MindEvalError(f"the run's target folder {source} is gone (moved or deleted): put it back to replay "
                            "the run", path=path, field="config.target_source")
    if config.target_sha256 and sha256_folder(source) != config.target_sha256:
        raise MindEvalError(f"the run's target folder {source} changed since the run (its files' hash differs): "
                            "replaying it would not give the same run", path=path, field="config.target_sha256")
    return source
