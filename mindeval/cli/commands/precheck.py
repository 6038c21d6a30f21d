"""Checks of ``mindeval run``'s inputs that need no heavy import: a missing profiles file or a
broken run file is reported in a fraction of a second, before the store, the judge or any model
library is loaded."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...errors import MindEvalError
from ...profiles.official import resolve_profiles_arg
from ...unique_keys import load_json, load_yaml


def check_run_inputs(args: argparse.Namespace) -> None:
    """``--profiles`` (or the run file's ``profiles``) exists; ``--config`` exists, parses, repeats no key."""
    profiles = getattr(args, "profiles", None)
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise MindEvalError("file not found", path=path)
        try:
            text = path.read_text(encoding="utf-8")
            data = (load_json if path.suffix == ".json" else load_yaml)(text, path)
        except MindEvalError:
            raise
        except Exception:  # syntax errors: read_run_file reports them with their line
            return
        if profiles is None and isinstance(data, dict) and "config_hash" not in data:  # not a replay
            profiles = data.get("profiles")
    if isinstance(profiles, str):
        resolve_profiles_arg(profiles)
