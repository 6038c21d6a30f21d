"""Speed of the profile tools: sampling, stats, validation, backstory bookkeeping, download.

Usage: .venv/bin/python benchmarks/bench_profiles.py [--n 10000] [--json]

The download is measured against a local http.server on 127.0.0.1 serving the authors'
release beside the checkout (skipped when it is absent); backstory bookkeeping uses the
scripted fake model, so it measures MindEval's own overhead (render, validate, SQLite
call log, resume), not a model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "mindeval-official"


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def bench_sampling(n: int) -> dict:
    from mindeval.profiles.pool import load_pool
    from mindeval.profiles.sampler import profiles_jsonl, sample_profiles
    from mindeval.profiles.stats import compute_stats, render_stats
    from mindeval.profiles.validate import validate_file

    pool, t_pool = timed(load_pool)
    profiles, t_sample = timed(sample_profiles, n, 42, pool=pool)
    blob, t_json = timed(profiles_jsonl, profiles)
    st, t_stats = timed(compute_stats, profiles, "bench", pool=pool)
    _, t_render = timed(render_stats, st)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "p.jsonl"
        path.write_bytes(blob)
        (valid, problems), t_validate = timed(validate_file, path)
        assert valid == n and not problems
    return {
        "n": n,
        "pool_load_s": round(t_pool, 4),
        "sample_s": round(t_sample, 3),
        "profiles_per_s": round(n / t_sample),
        "jsonl_s": round(t_json, 3),
        "jsonl_mb": round(len(blob) / 1e6, 2),
        "stats_s": round(t_stats + t_render, 3),
        "validate_s": round(t_validate, 3),
        "validate_profiles_per_s": round(n / t_validate),
    }


def bench_backstory_checks() -> dict | None:
    from mindeval.profiles.backstory import check_backstory

    path = SHARED / "profiles.jsonl"
    if not path.is_file():
        return None
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    texts = [(r["member_narrative"], r["member_attributes"]["name"]) for r in rows] * 20
    _, t = timed(lambda: [check_backstory(a, b) for a, b in texts])
    return {"checked": len(texts), "checks_per_s": round(len(texts) / t)}


def bench_backstory_bookkeeping(n: int) -> dict:
    from mindeval.llm import fake
    from mindeval.llm.gateway import ModelSpec
    from mindeval.profiles.backstory import generate_file
    from mindeval.profiles.sampler import profiles_jsonl, sample_profiles

    para = ("You spent your childhood in a busy household where everyone talked over each other, and you "
            "learned to wait your turn and keep your worries to yourself for most of your school years.")
    good = "\n\n".join([para] * 4)
    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d) / "in.jsonl", Path(d) / "out.jsonl"
        src.write_bytes(profiles_jsonl(sample_profiles(n, 1)))
        model = fake.script("bench-backstory", [good] * n)
        first, t_first = timed(generate_file, src, out, ModelSpec(model=model))
        again, t_again = timed(generate_file, src, out, ModelSpec(model=model))
        assert first.n_ok == n and again.calls_made == 0 and again.calls_reused == n
    return {"profiles": n, "first_run_s": round(t_first, 3), "ms_per_profile": round(1000 * t_first / n, 2),
            "resume_s": round(t_again, 3), "resume_ms_per_profile": round(1000 * t_again / n, 2)}


def bench_download() -> dict | None:
    from mindeval.profiles import download as dl

    if not (SHARED / "profiles.jsonl").is_file():
        return None
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = partial(Quiet, directory=str(SHARED))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        turns = hashlib.sha256((SHARED / "human_user_turns.jsonl").read_bytes()).hexdigest()
        with tempfile.TemporaryDirectory() as d:
            base = f"http://127.0.0.1:{httpd.server_address[1]}"
            results, t = timed(dl.download_release, cache_dir=d, base_url=base,
                               sha256={"human_user_turns.jsonl": turns})
            _, t_cached = timed(dl.download_release, cache_dir=d, base_url=base,
                                sha256={"human_user_turns.jsonl": turns})
        total = sum(r.bytes for r in results)
    finally:
        httpd.shutdown()
        httpd.server_close()
    return {"bytes": total, "download_verify_s": round(t, 3), "mb_per_s": round(total / 1e6 / t, 1),
            "already_cached_check_s": round(t_cached, 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10000, help="profiles to sample")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    report = {
        "sampling": bench_sampling(args.n),
        "sampling_1000": bench_sampling(1000),
        "backstory_checks": bench_backstory_checks(),
        "backstory_bookkeeping": bench_backstory_bookkeeping(200),
        "download_local": bench_download(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for section, vals in report.items():
            print(f"{section}: " + (", ".join(f"{k}={v}" for k, v in vals.items()) if vals else "skipped"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
