"""Benchmark: every agreement matrix for 4 humans × 30 judge runs × 5 axes (+ average) on 60 interactions.

Target: under 5 s on 2 cores. Data: the authors' human_annotations.jsonl when it is
beside the checkout (60 interactions × 4 psychologists), otherwise synthetic humans of
the same shape; the 30 judge runs are synthetic (seeded), noisy copies of the humans'
mean. Usage: ``.venv/bin/python benchmarks/bench_metaeval.py [--repeat 3] [--no-alpha] [--resamples 1000]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from metaeval.matrices import MetricOptions, Panel, build_all, verdicts
from metaeval.report import write_outputs
from metaeval.rollup import ALL_AXES
from metaeval.sources import SCORE_COLUMNS, RaterScores, load_authors_annotations
from mindeval.records import AXES

AUTHORS = Path(__file__).resolve().parents[2] / "shared" / "data" / "mindeval-official" / "human_annotations.jsonl"


def synthetic_humans(rng: np.random.Generator) -> list[RaterScores]:
    keys = [(f"p{p:02d}", f"sys{s}", f"i{p:02d}{s}") for p in range(20) for s in range(3)]
    truth = rng.normal(3.5, 0.8, (len(keys), len(AXES)))
    out = []
    for h in range(4):
        axes = np.clip(np.round(truth + rng.normal(0, 0.9, truth.shape)), 1, 6)
        rows = [(pid, sys, iid, 0, ax, float(axes[n, a])) for n, (pid, sys, iid) in enumerate(keys)
                for a, ax in enumerate(AXES)]
        rows += [(pid, sys, iid, 0, "average", float(axes[n].mean())) for n, (pid, sys, iid) in enumerate(keys)]
        out.append(RaterScores(f"P{h + 1}", "human", "synthetic", pd.DataFrame(rows, columns=list(SCORE_COLUMNS))))
    return out


def synthetic_judge(humans: list[RaterScores], runs: int, rng: np.random.Generator) -> RaterScores:
    base = pd.concat([h.frame for h in humans]).groupby(["profile_id", "system", "interaction_id", "axis"])["score"].mean()
    wide = base.unstack("axis")[list(AXES)]
    rows = []
    for r in range(runs):
        noisy = np.clip(np.round(wide.to_numpy() + rng.normal(0, 0.8, wide.shape)), 1, 6)
        for (pid, sys, iid), vals in zip(wide.index, noisy, strict=True):
            for ax, v in zip(AXES, vals, strict=True):
                rows.append((pid, sys, iid, r, ax, float(v)))
            rows.append((pid, sys, iid, r, "average", float(vals.mean())))
    return RaterScores("judge", "judge", "synthetic", pd.DataFrame(rows, columns=list(SCORE_COLUMNS)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--no-alpha", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=0,
                    help="bootstrap resamples for the intervals (metaeval compare's default is 1000)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    warnings.simplefilter("ignore")
    if AUTHORS.is_file():
        humans = load_authors_annotations(AUTHORS).raters
        source = f"authors' data ({AUTHORS.name})"
    else:
        humans = synthetic_humans(rng)
        source = "synthetic humans"
    judge = synthetic_judge(humans, args.runs, rng)
    opts = MetricOptions(alpha=not args.no_alpha, resamples=args.resamples)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        panel = Panel(humans, [judge])
        matrices = build_all(panel, opts)
        verdicts(matrices["average"])
        times.append(time.perf_counter() - t0)
    n_cells = sum(len(m.cells) for m in matrices.values())
    n_values = sum(len(v) for m in matrices.values() for c in m.cells for v in c.values.values())
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        write_outputs(Path(tmp), matrices, verdicts(matrices["average"]), {}, plots=False)
        t_files = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_outputs(Path(tmp), matrices, verdicts(matrices["average"]), {}, plots=True)
        t_plots = time.perf_counter() - t0
    print(f"data: {source}; {len(humans)} humans × {args.runs} judge runs × {len(ALL_AXES)} axes "
          f"(5 + average) on {len(panel.keys)} interactions")
    print(f"metrics: Kendall τ-b, MIPSA, Krippendorff α ordinal+interval = {'no' if args.no_alpha else 'yes'}; "
          f"{n_cells} cells, {n_values} metric values; intervals: {args.resamples or 'no'} resamples")
    print(f"all matrices: median {statistics.median(times):.2f} s over {args.repeat} repeats "
          f"(min {min(times):.2f} s, max {max(times):.2f} s); target < 5 s")
    print(f"writing Markdown/CSV/JSON: {t_files:.2f} s; with the 12 heatmap PNGs: {t_plots:.2f} s")


if __name__ == "__main__":
    main()
