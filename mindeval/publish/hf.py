"""``mindeval export --format hf``: a folder ``datasets.load_dataset`` reads (JSON Lines files and
a dataset card declaring them as configurations), made without the ``datasets`` package."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .card import CONFIGS, card
from .source import PublishedRun


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def _run_row(r: PublishedRun) -> dict[str, Any]:
    return {"run_id": r.run_id, "config_hash": r.config_hash, "clinician": r.clinician, "patient": r.patient,
            "judge": r.judge, "judge_protocol": r.judge_protocol, "judge_prompt": r.judge_prompt, "target": r.target,
            "target_version": r.target_version, "turns": r.turns, "seed": r.seed, "n_benchmark": r.n_benchmark,
            "mindeval_version": r.package_version, "source_path": Path(r.path).name,
            # whole files as JSON text: their shapes differ between runs and targets
            "config_json": json.dumps(r.config, sort_keys=True), "summary_json": json.dumps(r.summary, sort_keys=True)}


def write_hf(runs: list[PublishedRun], out: Path) -> list[Path]:
    """The export of ``runs`` into ``out``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    rows = {
        "runs": [_run_row(r) for r in runs],
        "scores": [{"run_id": r.run_id, "clinician": r.clinician, "judge": r.judge, **s.model_dump()}
                   for r in runs for s in r.scores],
        "transcripts": [i for r in runs for i in r.interactions],
        "judgments": [j for r in runs for j in r.judgments],
        "corrections": [c for r in runs for c in r.corrections],
    }
    paths = []
    for name, file in CONFIGS.items():
        _write_jsonl(out / file, rows[name])
        paths.append(out / file)
    (out / "README.md").write_text(card(runs), encoding="utf-8")
    return [*paths, out / "README.md"]
