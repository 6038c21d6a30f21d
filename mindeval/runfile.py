"""Run files: ``mindeval run --config FILE`` (YAML or JSON) and the replay of a run's ``config.json``.

A run file holds :class:`~mindeval.run_options.RunOptions` by their field names, the names of
the command-line options (a role's model as a string or as a mapping of its settings; the
table of keys is ``docs/configuration.md``). A list of clinicians (and/or judges) makes a sweep:
one run directory per combination under ``out`` (``out/<clinician>[__<judge>]``), all run together.
An unknown or repeated key is refused with ``file:line:key``.

A run's ``config.json`` is a run file too: it gives the options that rebuild the same
configuration (the replay is refused, with a diff, if the files it names changed since).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import MindEvalError
from .records import CONFIG_FILE, BenchmarkConfig, RunConfig, _validation_message, require_kind
from .run_options import LEGACY_KEYS, ROLE_FIELDS, RUN_SETTINGS, RunOptions, cli_meta
from .rundir import read_config
from .rundir_guard import check_not_source, check_store
from .seeds import LEGACY_SCHEME
from .target_folder import replayed_target
from .text_files import read_text
from .unique_keys import key_line, load_json, load_yaml

SWEPT = ("clinician", "judge")  # the roles a run file may list (one run per combination)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def is_sweep(keys: dict[str, Any]) -> bool:
    """Whether a run file's keys name more than one clinician x judge."""
    return len(_listed(keys.get("clinician"))) * len(_listed(keys.get("judge"))) > 1


def sweep_runs(keys: dict[str, Any], path: str | Path = "<config>", text: str = "") -> list[RunOptions]:
    """One :class:`RunOptions` per clinician x judge of a run file's keys (one run directory each)."""
    cs, js = _listed(keys.get("clinician", "local/smollm2")), _listed(keys.get("judge", "local/smollm2"))
    where_to = keys.get("out") or "."
    if not isinstance(where_to, str | Path):
        raise MindEvalError("expected a folder path", path=path, line=key_line(text, "out"), field="out")
    out = Path(where_to)
    runs = []
    for c in cs:
        for j in js:
            where = out / "__".join(slug(_model(m)) for m, many in ((c, len(cs) > 1), (j, len(js) > 1)) if many) \
                if len(cs) * len(js) > 1 else out
            runs.append(_options({**keys, "clinician": c, "judge": j, "out": where}, path, text))
    return runs


def _model(spec: Any) -> str:
    return spec if isinstance(spec, str) else (spec.get("model", "") if isinstance(spec, dict) else spec.model)


def slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


def _options(data: dict[str, Any], path: str | Path = "<config>", text: str = "") -> RunOptions:
    """``data`` validated; a bad key is ``file:line:key``."""
    try:
        return RunOptions.model_validate(data)
    except ValidationError as exc:
        field, msg = _validation_message(exc)
        leaf = field.split(".")[-1] if field else ""
        raise MindEvalError(msg, path=path, line=key_line(text, leaf) if leaf else None, field=field or None) from None


def read_run_file(path: str | Path) -> tuple[dict[str, Any], RunConfig | None]:
    """A YAML/JSON run file's keys (every run it makes checked), or for a run's ``config.json``
    the keys that rebuild it and its record (the replay); errors name file:line:key."""
    p = Path(path)
    if not p.is_file():
        raise MindEvalError("file not found", path=p)
    text = read_text(p, "run file")
    try:
        data = (load_json if p.suffix == ".json" else load_yaml)(text, p)
    except MindEvalError:
        raise
    except (ValueError, Exception) as exc:  # json / yaml syntax errors
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise MindEvalError(f"not valid {'JSON' if p.suffix == '.json' else 'YAML'} ({exc.__class__.__name__})",
                            path=p, line=None if line is None else line + 1) from None
    if not isinstance(data, dict):
        raise MindEvalError("expected a mapping of options", path=p, line=1)
    if "config_hash" in data and "config" in data:
        rec = read_config(p)
        return _replay(rec, p), rec
    keys = _current_names(data, p, text)
    sweep_runs(keys, p, text)  # every combination valid before anything runs
    return keys, None


def _current_names(data: dict[str, Any], path: Path, text: str) -> dict[str, Any]:
    """The keys under their current names; an unknown or twice-given one is ``file:line:key``."""
    known = set(RunOptions.model_fields) | set(LEGACY_KEYS) | {"progress"}
    keys: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise MindEvalError("unknown option (the keys are the options' names: docs/configuration.md)",
                                path=path, line=key_line(text, str(key)), field=str(key))
        name = "quiet" if key == "progress" else LEGACY_KEYS.get(key, key)
        field = RunOptions.model_fields.get(name)
        if field is not None and cli_meta(name)["commands"] == "m" and value != field.get_default():
            # metaeval judge's own (annotations, study, ...) set to something `mindeval run` would ignore
            raise MindEvalError("an option of `metaeval judge` only, which `mindeval run` does not read: remove it",
                                path=path, line=key_line(text, str(key)), field=str(key))
        if name in keys:
            raise MindEvalError(f"key given twice (as {name!r} and its earlier name)", path=path,
                                line=key_line(text, str(key)), field=str(key))
        keys[name] = (not value if isinstance(value, bool) else value) if key == "progress" else value
    for role in ROLE_FIELDS:
        if role not in SWEPT and isinstance(keys.get(role), list):
            raise MindEvalError("one model (only clinician and judge may be lists)", path=path,
                                line=key_line(text, role), field=role)
    return keys


def _replay(rec: RunConfig, path: Path) -> dict[str, Any]:
    """The keys that rebuild the configuration recorded in ``config.json`` (a benchmark
    run's: :class:`~mindeval.records.BenchmarkConfig`)."""
    cfg = require_kind(rec, BenchmarkConfig, path)
    models = {role: getattr(cfg, role).model_dump(mode="json", exclude_unset=True)  # each as written
              for role in ("patient", "clinician", "judge")}
    if cfg.profiles_source is None:
        raise MindEvalError("missing required field", path=path, field="config.profiles_source")
    target = replayed_target(cfg, path)
    return {
        **models, "target": target,
        **_prompt_options(cfg, target),
        "profiles": cfg.profiles_source, "limit": len(cfg.profile_ids), "turns": cfg.turns, "repeats": cfg.repeats,
        "seed": cfg.seed or 0, "seed_scheme": cfg.seed_scheme or LEGACY_SCHEME,
        "judge_retries": cfg.judge_retries, "judge_samples": cfg.judge_samples,
        "fewshot_file": cfg.fewshot_source, "fewshot_k": cfg.fewshot_k, "judge_protocol": cfg.judge_protocol,
        "transcript_format": cfg.transcript_format, "out": str(path.parent),
    }


def _prompt_options(cfg: Any, target_ref: str) -> dict[str, str | None]:
    """``ROLE_prompt`` of a replay: None (the target's own, which may live in the target's folder
    and has no name elsewhere) when the run used its target's template, else the recorded name."""
    from .targets import load_target

    target = load_target(target_ref)
    out: dict[str, str | None] = {}
    for role in ("patient", "clinician", "judge"):
        ref = cfg.prompts[role].ref
        out[f"{role}_prompt"] = None if target.template(role).ref == ref else ref.split("@")[0]
    return out


def check_replay(rec: RunConfig, config: Any, path: str | Path = CONFIG_FILE) -> None:
    """A replayed ``config.json`` (``rec``) must give back its own configuration (``config``: the
    rebuilt :class:`~mindeval.records.RunConfig`); otherwise the differences are the error."""
    from .run_verify import hash_differs

    if not hash_differs(rec, config):
        return
    from .run_config import config_diff

    diff = config_diff(rec.hashed_view(), config.hashed_view()) \
        or ["  (a file it names has changed or moved)"]
    raise MindEvalError("replaying this configuration gives another one:\n" + "\n".join(diff),
                        path=path, field="config_hash")


# ------------------------------------------------------------------------------ re-judging

# What a re-judge run takes from its command line; the rest is the source run's.
JUDGE_OPTIONS = ("judge", "judge_prompt", "judge_retries", "judge_samples", "fewshot_file", "fewshot_k",
                 "judge_protocol")


def rejudge_options(source: str | Path, given: RunOptions) -> RunOptions:
    """The run that scores the conversations of run directory ``source`` with another judge.

    ``given``: the command line's options; its :data:`JUDGE_OPTIONS` and :data:`RUN_SETTINGS`
    replace the source run's. The run is written to ``given.out``; its store is a copy of
    ``source``'s SQLite store (or ``source``'s own database when it is not SQLite), so the
    conversations are found by their configuration and nothing is simulated again.
    """
    src = Path(source)
    if src.is_file() and src.name in ("interactions.jsonl", "judgments.jsonl", CONFIG_FILE, "summary.json"):
        src = src.parent
    cfg_path = src / CONFIG_FILE
    if not cfg_path.is_file():
        raise MindEvalError(f"not a run directory ({CONFIG_FILE} not found)", path=src)
    out = Path(given.out)
    check_not_source(out, src)
    if not given.dry_run:
        check_store(out, given.db, overwrite=given.overwrite)
    keys, rec = read_run_file(cfg_path)
    assert rec is not None
    g = given.model_dump(include=set(JUDGE_OPTIONS + RUN_SETTINGS) - {"db", "new_run"})
    options = {**keys, **g, "judge_only": True}
    stored = rec.database or ""
    if given.db is not None:
        options["db"] = given.db
    elif stored and not stored.startswith("sqlite"):
        if "***" in stored:
            raise MindEvalError("the run's database URL is recorded without its password: give it with --db",
                                path=cfg_path, field="database")
        options["db"] = stored
    elif given.dry_run:  # the source's store is read as it is; nothing is written
        options["db"] = f"sqlite:///{src / 'run.db'}"
    else:
        copy_sqlite_store(src / "run.db", out / "run.db")
    return _options(options, cfg_path)


def copy_sqlite_store(src: Path, dst: Path) -> None:
    """A consistent copy of a run's SQLite store (once: an existing copy is resumed, not replaced)."""
    import sqlite3

    if dst.exists():
        return
    if not src.is_file():
        raise MindEvalError("file not found (a run directory's store)", path=src)
    dst.parent.mkdir(parents=True, exist_ok=True)
    part = dst.with_name(dst.name + ".part")
    with sqlite3.connect(src) as a, sqlite3.connect(part) as b:
        a.backup(b)
    a.close()
    b.close()
    part.replace(dst)
