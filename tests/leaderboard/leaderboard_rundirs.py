"""Write run directories in the docs/architecture.md schema for the leaderboard tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mindeval.rundir import read_config

AXES = ("CAC", "EPC", "AR", "TRA", "ASCQ")
SHA = "ab" * 32

Sample = Sequence[int] | None  # five scores, or None for a failed judge sample


def stamp(run_dir: Path) -> None:
    """Record the hash of ``run_dir``'s ``config.json`` as a run does (the leaderboard verifies it):
    a configuration written by a test is a run made so, not an edited file."""
    record = json.loads((run_dir / "config.json").read_text())
    record["config_hash"] = read_config(run_dir / "config.json").hash()
    (run_dir / "config.json").write_text(json.dumps(record))


def write_run(
    out: Path,
    clinician: str,
    scores: dict[str, Sample | list[Sample]],
    *,
    judge: str = "fake/judge",
    patient: str = "fake/echo",
    judge_prompt: str = "judge/default@v1",
    clinician_prompt: str = "clinician/default@v1",
    turns: int = 20,
    severe: Sequence[str] = (),
    profile_ids: Sequence[str] | None = None,
    clinician_text: str = "I hear you. That sounds hard.",
    failed_interactions: Sequence[str] = (),
    run_id: str | None = None,
    target: dict[str, Any] | None = None,
    repeats: int = 1,
) -> Path:
    """Write config.json, interactions.jsonl and judgments.jsonl for one clinician.

    ``scores`` maps profile id → five axis scores, or a list of judge samples (each
    five scores or ``None`` for a failed sample). With ``target`` (a run's target block,
    ``Target.info()``) the scores are one per axis of that target.
    """
    axes = AXES if target is None else tuple(target["axes"])
    out.mkdir(parents=True, exist_ok=True)
    ids = list(profile_ids) if profile_ids is not None else sorted(set(scores) | set(failed_interactions))
    run_id = run_id or f"run-{out.name}"
    spec = {"model": None, "temperature": None, "max_tokens": None, "reasoning_effort": None,
            "api_base": None, "extra": {}}
    config = {
        "patient": {**spec, "model": patient},
        "clinician": {**spec, "model": clinician},
        "judge": {**spec, "model": judge},
        "prompts": {
            "patient": {"ref": "patient/default@v1", "sha256": SHA},
            "clinician": {"ref": clinician_prompt, "sha256": SHA if "default" in clinician_prompt else "cd" * 32},
            "judge": {"ref": judge_prompt, "sha256": SHA if "default" in judge_prompt else "ef" * 32},
        },
        "guidelines_version": "1",
        "profiles_source": "test",
        "profiles_sha256": SHA,
        "profile_ids": ids,
        "turns": turns,
        "opening_line": "Hello.",
        "seed": 0,
        "judge_retries": 3,
        "judge_samples": 1,
        "fewshot_source": None,
        "fewshot_sha256": None,
        "fewshot_k": 0,
        "package_version": "0.1.0",
    }
    if target is not None:
        config["target"] = target
    if repeats > 1:  # conversations per profile (each scored alike)
        config["repeats"] = repeats
    (out / "config.json").write_text(json.dumps({"run_id": run_id, "config_hash": "x", "config": config}))
    stamp(out)
    inter_rows, judg_rows = [], []
    n_clin = turns // 2
    for pid, rep in ((p, r) for p in ids for r in range(repeats)):
        iid = f"{run_id}-{pid}" + (f"-r{rep}" if rep else "")
        messages: list[dict[str, str]] = [{"role": "user", "content": "Hello."}]
        for _ in range(n_clin):
            messages += [{"role": "assistant", "content": clinician_text}, {"role": "user", "content": "Okay."}]
        status = "failed" if pid in failed_interactions else "complete"
        inter_rows.append({"id": iid, "run_id": run_id, "profile_id": pid, "model": clinician,
                           "patient_model": patient, "member_attributes": {}, "messages": messages,
                           "turns": [], "status": status, "error": None, "severe": pid in severe})
        if pid not in scores:
            continue
        entry = scores[pid]
        samples: list[Sample] = list(entry) if entry and not isinstance(entry[0], int) else [entry]  # type: ignore[index,list-item]
        for k, sample in enumerate(samples):
            ok = sample is not None
            judg_rows.append({
                "interaction_id": iid, "profile_id": pid, "model": clinician, "judge_model": judge, "sample": k,
                **({} if target is None else {"target": target["name"]}),
                "scores": dict(zip(axes, sample, strict=True)) if ok else None,
                "average": sum(sample) / len(axes) if ok else None, "parse_status": "ok" if ok else "failed",
                "attempts": 1, "raw_text": "", "rationale": None, "error": None if ok else "unparseable",
                "severe": pid in severe, "n_turns": turns,
            })
    (out / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in inter_rows))
    (out / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judg_rows))
    return out


def uniform(score: int, n: int = 30) -> dict[str, list[int]]:
    """``n`` profiles all scored ``score`` on every axis."""
    return {f"p{i:02d}": [score] * 5 for i in range(n)}
