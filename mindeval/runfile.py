"""Run files: ``mindeval run --config FILE`` (YAML or JSON) and the replay of a run's ``config.json``.

A run file holds :class:`~mindeval.runner.RunOptions` by their field names (a role's model as
a string or as a mapping of its settings), plus the retry policy (``max_retries``,
``retry_budget_s``). A list of clinicians (and/or judges) makes a sweep: one run directory
per combination under ``out`` (``out/<clinician>[__<judge>]``), all run together.

A run's ``config.json`` is a run file too: it gives the options that rebuild the same
configuration (the replay is refused, with a diff, if the files it names changed since).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .config import DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BUDGET_S
from .errors import MindEvalError
from .llm.gateway import ModelSpec
from .llm.retry import RetryPolicy
from .records import CONFIG_FILE, RunConfigRecord, validate_row
from .rundir import read_config
from .rundir_guard import check_not_source, check_store
from .runner import RunOptions
from .unique_keys import load_json, load_yaml


def _spec(value: Any) -> Any:
    return {"model": value} if isinstance(value, str) else value


class RunFile(BaseModel):
    """What a run file may set: every option of ``mindeval run``; lists for a sweep."""

    model_config = ConfigDict(extra="forbid")

    options: dict[str, Any] = Field(default_factory=dict)  # RunOptions fields other than the swept roles
    clinicians: list[ModelSpec]
    judges: list[ModelSpec]
    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0)
    retry_budget_s: float = Field(DEFAULT_RETRY_BUDGET_S, gt=0)
    replay_of: str | None = None  # the config hash a replayed config.json must reproduce
    replay_config: dict[str, Any] = Field(default_factory=dict)  # and the configuration it records

    @field_validator("clinicians", "judges", mode="before")
    @classmethod
    def _models(cls, v: Any) -> Any:
        return [_spec(x) for x in (v if isinstance(v, list) else [v])]

    @property
    def sweep(self) -> bool:
        return len(self.clinicians) * len(self.judges) > 1

    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.max_retries, budget_s=self.retry_budget_s)

    def runs(self) -> list[RunOptions]:
        """One :class:`RunOptions` per clinician x judge (one run directory each)."""
        out = Path(self.options.get("out") or ".")
        runs = []
        for c in self.clinicians:
            for j in self.judges:
                where = out / "__".join(slug(m.model) for m, many in ((c, len(self.clinicians) > 1),
                                                                       (j, len(self.judges) > 1)) if many) \
                    if self.sweep else out
                runs.append(_options({**self.options, "clinician": c, "judge": j, "out": where}))
        return runs


def slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


def _options(data: dict[str, Any], path: str | Path = "<config>") -> RunOptions:
    return validate_row(RunOptions, data, path=path)


def read_run_file(path: str | Path) -> RunFile:
    """A YAML/JSON run file or a run's ``config.json``; errors name the file and field."""
    p = Path(path)
    if not p.is_file():
        raise MindEvalError("file not found", path=p)
    text = p.read_text(encoding="utf-8")
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
        return _replay(read_config(p), p)
    data = dict(data)
    retry = {k: data.pop(k) for k in ("max_retries", "retry_budget_s") if k in data}
    clinicians = data.pop("clinicians", data.pop("clinician", "local/smollm2"))
    judges = data.pop("judges", data.pop("judge", "local/smollm2"))
    for role in ("patient",):
        if role in data:
            data[role] = _spec(data[role])
    known = set(RunOptions.model_fields)
    for key in data:
        if key not in known:
            raise MindEvalError(f"unknown option (known: {', '.join(sorted(known | {'max_retries', 'retry_budget_s'}))})",
                                path=p, field=key)
    try:
        rf = RunFile(options=data, clinicians=clinicians, judges=judges, **retry)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise MindEvalError(err["msg"], path=p, field=".".join(str(x) for x in err["loc"])) from None
    for opts in rf.runs():  # every combination valid before anything runs
        _options(opts.model_dump(), p)
    return rf


def _replay(rec: RunConfigRecord, path: Path) -> RunFile:
    """The options that rebuild the configuration recorded in ``config.json`` (a benchmark
    run's: :meth:`~mindeval.records.RunConfigRecord.benchmark`)."""
    cfg = rec.benchmark(path)
    c, extra = rec.config, cfg.model_extra or {}
    if "profiles_source" not in extra:
        raise MindEvalError("missing required field", path=path, field="config.profiles_source")
    options = {
        "patient": c["patient"], "target": cfg.target.name,
        **{f"{role}_prompt": cfg.prompts[role].ref.split("@")[0] for role in ("patient", "clinician", "judge")},
        "profiles": extra["profiles_source"], "limit": len(cfg.profile_ids), "turns": cfg.turns,
        "seed": cfg.seed or 0, "judge_retries": extra.get("judge_retries", 3), "judge_samples": cfg.judge_samples,
        "fewshot": extra.get("fewshot_source"), "fewshot_k": cfg.fewshot_k, "judge_protocol": cfg.judge_protocol,
        "transcript_format": cfg.transcript_format, "out": str(path.parent),
    }
    return RunFile(options=options, clinicians=[c["clinician"]], judges=[c["judge"]], replay_of=rec.config_hash,
                   replay_config=c)


def check_replay(rf: RunFile, config: Any, path: str | Path = CONFIG_FILE) -> None:
    """A replayed ``config.json`` must give back its own configuration (``config``: the rebuilt
    :class:`~mindeval.run_config.RunConfig`); otherwise the differences are the error."""
    if not rf.replay_of or rf.replay_of == config.hash():
        return
    from .run_config import config_diff, hashed_view

    diff = config_diff(hashed_view(rf.replay_config), config.hashed_view()) \
        or ["  (a file it names has changed or moved)"]
    raise MindEvalError("replaying this configuration gives another one:\n" + "\n".join(diff),
                        path=path, field="config_hash")


# ------------------------------------------------------------------------------ re-judging

JUDGE_OPTIONS = ("judge", "judge_prompt", "judge_retries", "judge_samples", "fewshot", "fewshot_k", "judge_protocol")


def rejudge_options(source: str | Path, out: str | Path, judge: dict[str, Any], *,
                    db_url: str | None = None, concurrency: int | None = None, progress: bool = True,
                    overwrite: bool = False, dry_run: bool = False) -> RunOptions:
    """The run that scores the conversations of run directory ``source`` with another judge.

    ``judge``: the :data:`JUDGE_OPTIONS` to change (``judge`` a model string or its settings).
    The run is written to ``out``; its store is a copy of ``source``'s SQLite store (or
    ``source``'s own database when it is not SQLite), so the conversations are found by
    their configuration and nothing is simulated again.
    """
    src = Path(source)
    if src.is_file() and src.name in ("interactions.jsonl", "judgments.jsonl", CONFIG_FILE, "summary.json"):
        src = src.parent
    cfg_path = src / CONFIG_FILE
    if not cfg_path.is_file():
        raise MindEvalError(f"not a run directory ({CONFIG_FILE} not found)", path=src)
    check_not_source(out, src)
    if not dry_run:
        check_store(out, db_url, overwrite=overwrite)
    rf = read_run_file(cfg_path)
    rec = read_config(cfg_path)
    options = {**rf.options, "clinician": rf.clinicians[0], "judge": rf.judges[0], "out": Path(out)}
    unknown = set(judge) - set(JUDGE_OPTIONS)
    if unknown:
        raise ValueError(f"not judge options: {sorted(unknown)}")
    options.update({k: _spec(v) if k == "judge" else v for k, v in judge.items()})
    if concurrency is not None:
        options["concurrency"] = concurrency
    options["progress"] = progress
    options["judge_only"] = True
    options["overwrite"] = overwrite
    stored = rec.database or ""
    if db_url is not None:
        options["db_url"] = db_url
    elif stored and not stored.startswith("sqlite"):
        if "***" in stored:
            raise MindEvalError("the run's database URL is recorded without its password: give it with --db",
                                path=cfg_path, field="database")
        options["db_url"] = stored
    elif dry_run:  # the source's store is read as it is; nothing is written
        options["db_url"] = f"sqlite:///{src / 'run.db'}"
    else:
        copy_sqlite_store(src / "run.db", Path(out) / "run.db")
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
