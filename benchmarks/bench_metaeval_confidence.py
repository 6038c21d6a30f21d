"""Benchmark: do metaeval's intervals and judge-vs-judge tests deliver what they promise?

Simulated studies with a *known* population Kendall τ between a human and a judge:
(human, judge) latent scores are bivariate normal with correlation ρ, so τ = (2/π)·arcsin ρ
(the ``continuous`` design). In the ``likert`` design the judge's score is rounded to an
integer 1-6 and the human's is the mean of two integer sub-scores (half steps), as in
MindEval; its population τ-b is taken from one sample of 400,000 interactions.

1. **Coverage** of the 95% interval of τ (``mindeval.stats.resampled.kendall_tau`` on the same
   bootstrap draw as ``metaeval compare``, percentile interval of
   ``mindeval.stats.bootstrap.percentile_interval``): share of studies whose interval holds the
   population τ; target 93-97% at n = 55.
2. **Type-I error** of the judge-vs-judge test (paired bootstrap, two-sided,
   ``mindeval.stats.significance.bootstrap_pvalue``): two judges with the same τ to the human
   (conditionally independent given the human), share of studies with p < 0.05.
3. **Power** at a true Δτ of 0.1 and 0.2 (τ 0.3 vs 0.4 / 0.5), n = 55 and 200 (tests on the
   ``continuous`` design, where Δτ is exact).

Usage: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_metaeval_confidence.py
[--studies 1000] [--resamples 1000]`` (about 10 min on one core of the shared machine).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from scipy.stats import kendalltau

from mindeval.stats.bootstrap import percentile_interval, resample_counts
from mindeval.stats.resampled import kendall_tau
from mindeval.stats.significance import bootstrap_pvalue


def rho_for(tau: float) -> float:
    return math.sin(math.pi * tau / 2.0)


def draw(n: int, rhos: list[float], rng: np.random.Generator, design: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """A human score and one judge score per ρ (judges independent given the human)."""
    h = rng.normal(size=n)
    judges = [r * h + math.sqrt(1 - r * r) * rng.normal(size=n) for r in rhos]
    if design == "likert":
        h = (np.clip(np.rint(3.5 + h + rng.normal(0, 0.5, n)), 1, 6)
             + np.clip(np.rint(3.5 + h + rng.normal(0, 0.5, n)), 1, 6)) / 2
        judges = [np.clip(np.rint(3.5 + 1.2 * j), 1, 6) for j in judges]
    return h, judges


def population_tau(design: str, tau: float, seed: int = 12345) -> float:
    if design == "continuous":
        return tau
    h, (j,) = draw(400_000, [rho_for(tau)], np.random.default_rng(seed), design)
    return float(kendalltau(h, j).statistic)


def coverage(n: int, tau: float, design: str, studies: int, resamples: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    truth = population_tau(design, tau)
    hits = 0
    widths = []
    for _ in range(studies):
        h, (j,) = draw(n, [rho_for(tau)], rng, design)
        counts = resample_counts(n, resamples, rng)
        low, high = percentile_interval(kendall_tau(h, j, counts)[:, None], 0.95)
        hits += bool(low[0] <= truth <= high[0])
        widths.append(high[0] - low[0])
    return {"design": design, "n": n, "tau": round(truth, 4), "studies": studies, "coverage": hits / studies,
            "mean_width": float(np.mean(widths))}


def rejection(n: int, tau_a: float, tau_b: float, studies: int, resamples: int, seed: int,
              design: str = "continuous") -> dict[str, float]:
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(studies):
        h, (a, b) = draw(n, [rho_for(tau_a), rho_for(tau_b)], rng, design)
        counts = resample_counts(n, resamples, rng)
        delta = kendall_tau(a, h, counts) - kendall_tau(b, h, counts)
        observed = float(kendalltau(a, h).statistic - kendalltau(b, h).statistic)
        rejected += bool(bootstrap_pvalue(delta, np.array([observed]), "two")[0] < 0.05)
    return {"design": design, "n": n, "tau_a": tau_a, "tau_b": tau_b, "delta_tau": round(tau_a - tau_b, 2),
            "studies": studies, "rejection_rate": rejected / studies}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=["coverage", "tests"], default=None)
    args = ap.parse_args()
    out: dict[str, list[dict[str, float]]] = {"coverage": [], "type_i_and_power": []}
    t0 = time.perf_counter()
    if args.only in (None, "coverage"):
        for design in ("continuous", "likert"):
            for tau in (0.2, 0.38):
                row = coverage(55, tau, design, args.studies, args.resamples, args.seed)
                out["coverage"].append(row)
                print(json.dumps(row), flush=True)
    if args.only in (None, "tests"):
        for n in (55, 200):
            for tau_a in (0.3, 0.4, 0.5):
                row = rejection(n, tau_a, 0.3, args.studies, args.resamples, args.seed + n)
                out["type_i_and_power"].append(row)
                print(json.dumps(row), flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
