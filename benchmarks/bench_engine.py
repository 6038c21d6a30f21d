"""Engine throughput with the fake model: calls per second, and the cost of a resumed run.

Usage: .venv/bin/python benchmarks/bench_engine.py [--turns 20] [--repeat 4]
Measures the overhead MindEval adds around model calls (prompt rendering, hashing,
committing every call and turn to SQLite, judging, exports), not model speed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from mindeval.llm.gateway import ModelSpec
from mindeval.records import load_profiles, write_profiles
from mindeval.resources import data_dir
from mindeval.runner import RunOptions, run_benchmark


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=4, help="copies of the 6 demo profiles")
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = load_profiles(data_dir() / "demo_profiles.jsonl")
        profiles = []
        for r in range(args.repeat):  # distinct profiles: vary the name
            for p in base:
                q = p.model_copy(deep=True)
                q.member_attributes.name = f"{p.name}{r}"
                profiles.append(q)
        pf = Path(tmp) / "profiles.jsonl"
        write_profiles(profiles, pf)
        opts = RunOptions(
            patient=ModelSpec(model="fake/echo"), clinician=ModelSpec(model="fake/echo"),
            judge=ModelSpec(model="fake/judge"), profiles=str(pf), turns=args.turns,
            out=Path(tmp) / "run", concurrency=args.concurrency, progress=False,
        )
        t = time.perf_counter()
        s1 = run_benchmark(opts, echo=None)
        first = time.perf_counter() - t
        t = time.perf_counter()
        s2 = run_benchmark(opts, echo=None)
        second = time.perf_counter() - t
    result = {
        "interactions": s1["n_interactions"], "turns": args.turns, "calls": s1["calls_made"],
        "first_run_s": round(first, 2), "calls_per_s": round(s1["calls_made"] / first, 1),
        "resumed_run_s": round(second, 2), "resumed_calls_made": s2["calls_made"],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
