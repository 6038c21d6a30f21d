"""A run directory's ``config.json`` verified before any figure is drawn from it.

One check of a recorded configuration hash (:func:`hash_differs`) serves the replay of a
``config.json`` (:func:`mindeval.runfile.check_replay`: the rebuilt configuration must give the
recorded hash) and the readers that publish figures (:func:`verify_run_config`: the leaderboard,
``mindeval export``): the file must give its own recorded hash, and, when the run's SQLite store
is at hand, agree with the configuration the store recorded when the run started. An edited
``config.json`` (``turns: 12`` on a 6-turn run, an edited ``config_hash``) is refused with one
line naming the file and the field. ``package_version`` is not hashed: it is shown as recorded.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

from .errors import MindEvalError
from .records import CONFIG_FILE, RunConfig

EDITED = "edited after the run"


def hash_differs(recorded: RunConfig, config: RunConfig) -> bool:
    """Whether ``recorded``'s ``config_hash`` is not the hash of ``config`` (a record without a hash:
    never; the replay of a hand-written run file has none)."""
    return bool(recorded.config_hash) and recorded.config_hash != config.hash()


def verify_run_config(run_dir: str | Path, rec: RunConfig) -> None:
    """Refuse a run directory whose ``config.json`` (read as ``rec``) was edited: its content against
    the run store's record of the run (when ``run.db`` is found), then against its own ``config_hash``."""
    path = Path(run_dir) / CONFIG_FILE
    if not rec.config_hash:
        raise MindEvalError("missing required field (a run's configuration hash)", path=path, field="config_hash")
    stored = _stored_config(Path(run_dir), rec, path)
    if stored is not None:
        from .rundir import upgraded_view

        view = upgraded_view(stored)
        if view is not None and view != rec.hashed_view():
            key, old, new = _first_difference(view, rec.hashed_view())
            raise MindEvalError(f"{EDITED}: the file says {new!r}, the run store {old!r}; refused "
                                "(restore the file, or re-run)", path=path, field=f"config.{key}")
    if hash_differs(rec, rec):
        raise MindEvalError(f"{EDITED}: the recorded hash is not the hash of the configuration in the file; "
                            "refused (restore the file, or re-run)", path=path, field="config_hash")


def _stored_config(run_dir: Path, rec: RunConfig, path: Path) -> dict[str, Any] | None:
    """The configuration the run's SQLite store recorded for ``rec.run_id`` (None: no local store;
    a store on a server is not opened). A store without the run is refused (``run_id``)."""
    db_path = run_dir / "run.db"
    url = rec.database or ""
    if not db_path.is_file() and url.startswith("sqlite:///"):
        db_path = Path(url.removeprefix("sqlite:///"))
    if not db_path.is_file():
        return None
    import json
    import sqlite3

    # read only, and not a byte nor a file added beside it (a store with a live write-ahead log: read with it)
    mode = "mode=ro" if db_path.with_name(db_path.name + "-wal").is_file() else "immutable=1"
    try:
        with closing(sqlite3.connect(f"{db_path.resolve().as_uri()}?{mode}", uri=True)) as conn:
            row = conn.execute("SELECT config_hash, config_json FROM runs WHERE id = ?", (rec.run_id,)).fetchone()
        config = None if row is None else json.loads(row[1])
    except (sqlite3.Error, ValueError) as exc:
        raise MindEvalError(f"cannot read the run store ({exc}); it is damaged or not a MindEval store",
                            path=db_path) from None
    if row is None:
        raise MindEvalError(f"{EDITED}: run {rec.run_id!r} is not in its run store {db_path}; refused",
                            path=path, field="run_id")
    return config if isinstance(config, dict) else None


def _first_difference(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> tuple[str, Any, Any]:
    """The first differing leaf of two configurations (sorted keys): ``(dotted key, old, new)``."""
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, "<unset>"), new.get(key, "<unset>")
        if isinstance(a, dict) and isinstance(b, dict) and a != b:
            return _first_difference(a, b, f"{prefix}{key}.")
        if a != b:
            return f"{prefix}{key}", a, b
    return prefix.rstrip("."), None, None
