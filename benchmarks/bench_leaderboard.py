"""Benchmark: leaderboard statistics for 12 systems × 50 interactions × 5 axes, 10,000 resamples.

Times ``compute_table`` (bootstrap CIs for every system and criterion, the paired
test for all 66 system pairs on 6 criteria, clusters) and, separately, the whole
``build_leaderboard`` from run directories written to a temporary folder.
Target: the statistics in under 2 s on 2 cores.

    .venv/bin/python benchmarks/bench_leaderboard.py [--resamples 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mindeval.leaderboard import (
    StatsSettings,
    SystemScores,
    build_leaderboard,
    compute_table,
)
from mindeval.records import AXES

CRITERIA = (*AXES, "average")  # MindEval's columns

SYSTEMS, INTERACTIONS, TARGET_S = 12, 50, 2.0


def synthetic_scores(seed: int) -> np.ndarray:
    """(systems, interactions, 5) integer scores 1-6 with system-specific levels."""
    rng = np.random.default_rng(seed)
    level = np.linspace(2.2, 3.8, SYSTEMS)[:, None, None]
    noise = rng.normal(0, 1.0, size=(SYSTEMS, INTERACTIONS, len(AXES)))
    return np.clip(np.rint(level + noise), 1, 6)


def as_systems(scores: np.ndarray) -> list[SystemScores]:
    out = []
    for s in range(SYSTEMS):
        vals = np.column_stack([scores[s], scores[s].mean(axis=1)])
        assert vals.shape[1] == len(CRITERIA)
        out.append(SystemScores(label=f"system-{s:02d}", key=f"system-{s:02d}",
                                profile_ids=[f"p{i:02d}" for i in range(INTERACTIONS)], values=vals))
    return out


def write_runs(scores: np.ndarray, root: Path) -> list[Path]:
    ids = [f"p{i:02d}" for i in range(INTERACTIONS)]
    spec = {"temperature": None, "max_tokens": None, "reasoning_effort": None, "api_base": None, "extra": {}}
    dirs = []
    for s in range(SYSTEMS):
        d = root / f"run{s:02d}"
        d.mkdir()
        model = f"system-{s:02d}"
        cfg = {"patient": {**spec, "model": "p"}, "clinician": {**spec, "model": model},
               "judge": {**spec, "model": "j"}, "prompts": {k: {"ref": f"{k}/default@v1", "sha256": "0" * 64} for k in ("patient", "clinician", "judge")},
               "profile_ids": ids, "turns": 20, "guidelines_version": "1", "seed": 0}
        (d / "config.json").write_text(json.dumps({"run_id": model, "config": cfg}))
        msgs = [{"role": "user", "content": "Hello."}] + [
            {"role": "assistant", "content": "I hear you. What feels hardest right now? Tell me more."},
            {"role": "user", "content": "Okay."}] * 10
        with (d / "interactions.jsonl").open("w") as fi, (d / "judgments.jsonl").open("w") as fj:
            for i, pid in enumerate(ids):
                iid = f"{model}-{pid}"
                fi.write(json.dumps({"id": iid, "profile_id": pid, "model": model, "messages": msgs,
                                     "status": "complete", "severe": i % 4 == 0}) + "\n")
                fj.write(json.dumps({"interaction_id": iid, "profile_id": pid, "model": model, "judge_model": "j",
                                     "sample": 0, "scores": {a: int(v) for a, v in zip(AXES, scores[s, i], strict=True)},
                                     "parse_status": "ok"}) + "\n")
        dirs.append(d)
    return dirs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--test", choices=("permutation", "bootstrap"), default="permutation")
    args = ap.parse_args()
    scores = synthetic_scores(0)
    settings = StatsSettings(resamples=args.resamples, test=args.test, seed=0)
    systems = as_systems(scores)
    compute_table(systems, settings.model_copy(update={"resamples": 2000}), CRITERIA)  # warm-up (imports, BLAS)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        table = compute_table(systems, settings, CRITERIA)
        times.append(time.perf_counter() - t0)
    best = min(times)
    with tempfile.TemporaryDirectory() as tmp:
        dirs = write_runs(scores, Path(tmp))
        t0 = time.perf_counter()
        lb = build_leaderboard(dirs, settings)
        full = time.perf_counter() - t0
    assert [s.label for s in lb.table.systems] == [s.label for s in table.systems]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n_clusters = max(s.results["average"].cluster for s in table.systems)
    print(f"leaderboard statistics: {SYSTEMS} systems x {INTERACTIONS} interactions x {len(AXES)} axes "
          f"(+average), {args.resamples} resamples, {args.test} test, {cpus} CPUs")
    print(f"  compute_table: best {best:.3f} s, median {statistics.median(times):.3f} s over {args.repeat} runs "
          f"({len(table.pairs) // len(CRITERIA)} pairs, {n_clusters} clusters on the average)")
    print(f"  build_leaderboard from run directories (load + stats + breakdowns + verbosity): {full:.3f} s")
    ok = best < TARGET_S
    print(f"  target < {TARGET_S:.1f} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
