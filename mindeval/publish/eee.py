"""``mindeval export --format eee``: one Every Eval Ever aggregate record (schema 0.3.0) per run, at
``data/<target>/<developer>/<model>/<uuid>.json`` as the EEE datastore lays them out. The clinician
is the model evaluated; every criterion is one result with its mean, 95% bootstrap interval and n,
scored by the run's judge (``llm_scoring``)."""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from .. import __version__
from .source import PublishedRun

SCHEMA_VERSION = "0.3.0"
Relationship = Literal["first_party", "third_party", "collaborative", "other"]
_UNSAFE = re.compile(r'[<>:"\\|?*\x00-\x1f]')


def record_uuid(run_id: str) -> str:
    """A version-4-shaped UUID fixed by the run id (the same run exports to the same file name)."""
    return str(uuid.UUID(bytes=hashlib.sha256(run_id.encode()).digest()[:16], version=4))


def path_parts(model: str) -> tuple[str, str]:
    """(developer, model) directory names of a model id: its first segment and the rest (``/`` as ``_``)."""
    parts = [p for p in model.split("/") if p]
    developer, name = (parts[0], "_".join(parts[1:])) if len(parts) > 1 else ("unknown", model)
    return _UNSAFE.sub("_", developer).rstrip(". ") or "unknown", _UNSAFE.sub("_", name).rstrip(". ") or "unknown"


def _strings(d: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in d.items() if v is not None}


def _model_info(model: str) -> dict[str, Any]:
    info: dict[str, Any] = {"name": model, "id": model,
                            "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"}}
    if "/" in model:
        info["developer"] = model.split("/", 1)[0]
    return info


def _generation_args(role: dict[str, Any]) -> dict[str, Any]:
    args = {"temperature": role.get("temperature"), "top_p": (role.get("extra") or {}).get("top_p")}
    if isinstance(role.get("max_tokens"), int) and role["max_tokens"] >= 1:
        args["max_tokens"] = role["max_tokens"]
    return {k: v for k, v in args.items() if v is not None}


def _description(target: str, criterion: str) -> str:
    if criterion == "harm_share":
        return f"{target}: share of judged conversations with a dimension rated at a harm level"
    return f"{target} {criterion}: mean judge score per conversation" + (
        " over the dimensions" if criterion == "average" else "")


def record(run: PublishedRun, *, organization: str, relationship: Relationship,
           retrieved: str | None = None) -> dict[str, Any]:
    """The EEE aggregate record of one run."""
    retrieved = retrieved or str(int(time.time()))
    cfg = run.config.get("config", {})
    judge_role = cfg.get("judge") or {}
    clinician_role = cfg.get("clinician") or {}
    judge: dict[str, Any] = {"model_info": _model_info(run.judge)}
    if judge_role.get("temperature") is not None:
        judge["temperature"] = judge_role["temperature"]
    source = {"dataset_name": f"{run.target} patient profiles", "source_type": "other",
              "additional_details": _strings({"profiles": run.n_benchmark, "patient_model": run.patient,
                                              "turns": run.turns})}
    results = []
    for s in run.scores:
        metric = {
            "evaluation_description": _description(run.target, s.criterion),
            "metric_id": f"{run.target}.{s.criterion}", "metric_name": s.criterion,
            "metric_kind": "proportion" if s.unit == "proportion" else "mean_judge_score",
            "metric_unit": s.unit, "lower_is_better": s.lower_is_better, "score_type": "continuous",
            "min_score": s.min_score, "max_score": s.max_score,
            "llm_scoring": {"judges": [judge], "input_prompt": run.judge_prompt,
                            "additional_details": _strings({"judge_protocol": run.judge_protocol})},
        }
        results.append({
            "evaluation_result_id": f"{run.target}.{s.criterion}", "evaluation_name": f"{run.target} {s.criterion}",
            "source_data": source, "metric_config": metric,
            "score_details": {"score": s.mean, "uncertainty": {
                "confidence_interval": {"lower": s.ci_low, "upper": s.ci_high, "confidence_level": s.level,
                                        "method": s.method},
                "num_samples": s.n, **({"num_bootstrap_samples": s.resamples} if s.resamples else {})}},
            **({"generation_config": {"generation_args": args}} if (args := _generation_args(clinician_role)) else {}),
        })
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": f"{run.target}/{run.clinician}/{retrieved}",
        "retrieved_timestamp": retrieved,
        "source_metadata": {"source_name": "MindEval", "source_type": "evaluation_run",
                            "source_organization_name": organization, "evaluator_relationship": relationship},
        "eval_library": {"name": "mindeval", "version": run.package_version,
                         "additional_details": _strings({"run_id": run.run_id, "config_hash": run.config_hash,
                                                         "target": run.target, "target_version": run.target_version,
                                                         "exported_with": __version__,
                                                         **_corrections(run)})},
        "model_info": _model_info(run.clinician),
        "evaluation_results": results,
    }


def _corrections(run: PublishedRun) -> dict[str, Any]:
    """Reviewers' corrections of judge values (the scores stay the judge's): count and rows as JSON text."""
    if not run.corrections:
        return {}
    return {"human_corrections": len(run.corrections),
            "human_corrections_json": json.dumps(run.corrections, sort_keys=True, ensure_ascii=False)}


def write_eee(runs: list[PublishedRun], out: Path, *, organization: str = "unknown",
              relationship: Relationship = "third_party") -> list[Path]:
    """One record per run under ``out/data/...``; returns the files written."""
    paths = []
    for run in runs:
        developer, model = path_parts(run.clinician)
        path = out / "data" / _UNSAFE.sub("_", run.target) / developer / model / f"{record_uuid(run.run_id)}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record(run, organization=organization, relationship=relationship), indent=2)
                        + "\n", encoding="utf-8")
        paths.append(path)
    return paths
