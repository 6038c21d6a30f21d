"""Human-scale leaderboard intervals in simulation (``mindeval leaderboard --humans``, issue 28).

Usage: .venv/bin/python benchmarks/bench_ppi.py [--studies 1000] [--conversations 200] [--seed 0]

Each study draws one system's conversations: a latent quality per conversation, two human raters
(integer 1-6, their mean is the human score) and a judge score (integer 1-6) that either tracks the
quality (correlated judge, biased +0.3) or ignores it (uncorrelated judge). The humans rate a random
``n`` of the conversations (20 and 50); the judge scores all of them (the others are the unlabeled part). For each study it computes the
prediction-powered interval (mindeval.stats.ppi, the leaderboard's own) and the humans-only interval
of the rated sample, and reports how often each covers the true human-scale mean (the population mean
of the human score, from 10^6 draws) and the ratio of their mean widths; the last column is the
normal-quantile interval of ppi-python (``small_sample=False``), which under-covers at n = 20.
"""

from __future__ import annotations

import argparse

import numpy as np

from mindeval.stats.ppi import ppi_mean


def draw(rng: np.random.Generator, size: int, judge: str) -> tuple[np.ndarray, np.ndarray]:
    """Human scores (mean of two raters) and judge scores of ``size`` conversations."""
    quality = rng.normal(3.6, 0.9, size)
    raters = np.clip(np.rint(quality[:, None] + rng.normal(0, 0.7, (size, 2))), 1, 6)
    if judge == "correlated":
        scores = np.clip(np.rint(quality + 0.3 + rng.normal(0, 0.5, size)), 1, 6)
    else:
        scores = np.clip(np.rint(rng.normal(4.0, 0.9, size)), 1, 6)
    return raters.mean(axis=1), scores


def study(rng: np.random.Generator, n: int, big_n: int, judge: str, truth: float) -> tuple[float, ...]:
    human, scores = draw(rng, big_n, judge)
    rated = rng.choice(big_n, n, replace=False)
    rest = np.setdiff1d(np.arange(big_n), rated)  # the unlabeled part, as the leaderboard takes it
    ppi = ppi_mean(human[rated], scores[rated], scores[rest])
    alone = ppi_mean(human[rated], scores[rated], scores[rest], lam=0.0)
    normal = ppi_mean(human[rated], scores[rated], scores[rest], small_sample=False)  # ppi-python's interval
    return (ppi.ci_low <= truth <= ppi.ci_high, alone.ci_low <= truth <= alone.ci_high,
            ppi.ci_high - ppi.ci_low, alone.ci_high - alone.ci_low, normal.ci_low <= truth <= normal.ci_high)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=1000)
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.studies} studies, {args.conversations} conversations per system, 95% intervals")
    print("| judge | n rated | PPI coverage | humans-only coverage | width PPI / humans-only | mean PPI width "
          "| normal-quantile PPI coverage |")
    print("|---|---|---|---|---|---|---|")
    for judge in ("correlated", "uncorrelated"):
        truth = float(draw(np.random.default_rng(12345), 1_000_000, judge)[0].mean())
        for n in (20, 50):
            got = np.array([study(rng, n, args.conversations, judge, truth) for _ in range(args.studies)])
            cov_ppi, cov_alone, w_ppi, w_alone, cov_normal = got.mean(axis=0)
            print(f"| {judge} | {n} | {cov_ppi:.1%} | {cov_alone:.1%} | {w_ppi / w_alone:.2f} | {w_ppi:.2f} "
                  f"| {cov_normal:.1%} |")


if __name__ == "__main__":
    main()
