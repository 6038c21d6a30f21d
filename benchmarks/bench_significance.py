"""Simulation: type-I error and power of the paired tests (permutation, bootstrap; one-, two-sided).

Model and definitions: ``mindeval.stats.power``. Prints, for each test and sidedness,
the type-I error at n = 10, 20, 50 (and the other sizes of ``--sizes``), the power to
declare a true 0.15 difference over 50 interactions, and the smallest size from which the
paired bootstrap's type-I error stays within 0.01 of alpha (the size below which the
leaderboard warns: ``mindeval.stats.significance.BOOTSTRAP_MIN_N``).

    .venv/bin/python benchmarks/bench_significance.py [--sims 2000] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import json
import time

from mindeval.stats.power import rejection_rate
from mindeval.stats.significance import BOOTSTRAP_MIN_N

TESTS = ("permutation", "bootstrap")
SIDES = ("one", "two")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 15, 20, 25, 30, 40, 50])
    ap.add_argument("--delta", type=float, default=0.15)
    ap.add_argument("--power-n", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    started = time.perf_counter()
    type1: dict[str, dict[int, float]] = {}
    power: dict[str, float] = {}
    for test in TESTS:
        for sided in SIDES:
            key = f"{test}/{sided}-sided"
            type1[key] = {
                n: rejection_rate(test, sided, n, alpha=args.alpha, sims=args.sims, resamples=args.resamples,
                                  seed=args.seed + n).rate
                for n in args.sizes
            }
            power[key] = rejection_rate(test, sided, args.power_n, delta=args.delta, alpha=args.alpha,
                                        sims=args.sims, resamples=args.resamples, seed=args.seed + 999).rate
    ok_from = {}
    for sided in SIDES:
        rates = type1[f"bootstrap/{sided}-sided"]
        sizes = sorted(rates)
        ok_from[sided] = next((n for i, n in enumerate(sizes)
                               if all(rates[m] <= args.alpha + 0.01 for m in sizes[i:])), None)
    elapsed = time.perf_counter() - started
    out = {"sims": args.sims, "resamples": args.resamples, "alpha": args.alpha, "type1": type1,
           "power": {"delta": args.delta, "n": args.power_n, "rates": power},
           "bootstrap_ok_from": ok_from, "BOOTSTRAP_MIN_N": BOOTSTRAP_MIN_N, "elapsed_s": round(elapsed, 1)}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{args.sims} simulations per cell, {args.resamples} resamples, alpha {args.alpha}")
    print("type-I error (A declared better with no true difference)")
    print(f"  {'test':<24}" + "".join(f"{'n=' + str(n):>8}" for n in args.sizes))
    for key, rates in type1.items():
        print(f"  {key:<24}" + "".join(f"{rates[n]:>8.3f}" for n in args.sizes))
    print(f"power to declare a true {args.delta} difference over {args.power_n} interactions")
    for key, rate in power.items():
        print(f"  {key:<24}{rate:>8.3f}")
    print(f"bootstrap type-I within alpha + 0.01 from n = {ok_from} (warning thresholds in code: "
          f"{BOOTSTRAP_MIN_N}); {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
