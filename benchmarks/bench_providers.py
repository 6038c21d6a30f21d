"""Provider-side figures of the gateway against the local fault server (another process).

Usage: .venv/bin/python benchmarks/bench_providers.py [--profiles 50] [--turns 20] [--skip-run]
       [--fewshot-file human_annotations.jsonl] [--target reply_safety [--reply-words 60]]

Reports:
* prompt caching: a full ``--profiles`` x ``--turns`` run with Anthropic models (cache
  breakpoints) against a server that bills like Anthropic (cache reads 0.1x, writes
  1.25x, 1,024-token minimum, 0.2 s latency so that concurrent requests overlap):
  billed input tokens / uncached input tokens, overall (the server's count) and per role
  (the run summary's, from the recorded cache reads and writes); and the ``--dry-run``
  estimate over the measured input, billed input and dollars per role (with the default
  reply lengths, and told the mean reply length this server produced);
* ``--target T`` (e.g. the reply-level ``reply_safety``): the same caching run of that target
  alone (no gateway, rate-limit or start-up figures): billed / uncached input per role with n,
  and for a ``unit: reply`` judge the per-call breakdown by reply position (tokens read from the
  cache, written to it and sent uncached; mean over the conversations; docs/benchmarks.md sets
  them against the bound the billing rules leave);
* rate limits: requests through a server that accepts N per window with the client told
  the same rpm: 429s seen, per minute;
* gateway CPU ms per call (acomplete alone, 50 concurrent, 20-message histories, the
  server's 0.2 s latency) — the engine's share is in bench_engine.py;
* start-up: CPU and wall seconds of ``import litellm`` and of ``import mindeval.cli`` in
  fresh processes (litellm is imported only when a model is first called).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_engine import make_profiles  # noqa: E402
from mindeval.engine.estimate import estimate_run  # noqa: E402
from mindeval.engine.loop import run_benchmark  # noqa: E402
from mindeval.engine.prepare import prepare  # noqa: E402
from mindeval.llm.gateway import ModelSpec, acomplete, litellm_module  # noqa: E402
from mindeval.llm.retry import RetryPolicy  # noqa: E402
from mindeval.run_options import RunOptions  # noqa: E402
from tests.support.fault_server import spawn  # noqa: E402

ROLES = ("patient", "clinician", "judge")
CLAUDE = "anthropic/claude-sonnet-4-5"


def caching(profiles: Path, turns: int, out: Path, fewshot: str | None = None, target: str | None = None,
            reply_words: int = 60) -> dict[str, Any]:
    with spawn(cache=True, cache_min_tokens=1024, reply_words=reply_words, latency_s=0.2) as srv:
        specs = {r: ModelSpec(model=CLAUDE, api_base=srv.base) for r in ROLES}
        opts = RunOptions(**specs, profiles=str(profiles), turns=turns, out=out, concurrency=50, progress=False,
                          fewshot=fewshot, **({"target": target} if target else {}))
        s = run_benchmark(opts, echo=None)
        bill = srv.stats()["billing"]
    billed = bill["billed_input_tokens_x1000"] / 1000
    per_role = {role: {"calls": v["calls"], "uncached": v["prompt_tokens"], "read": v["cached_tokens"],
                       "written": v["cache_write_tokens"], "billed": v["billed_input_tokens"],
                       "billed_over_uncached": round(v["billed_input_tokens"] / v["prompt_tokens"], 3)}
                for role, v in sorted(s["tokens"].items())}
    return {
        "calls": s["calls_made"], "uncached_input_tokens": bill["prompt_tokens"],
        "cache_read_tokens": bill["cache_read_tokens"], "cache_write_tokens": bill["cache_write_tokens"],
        "billed_input_tokens": round(billed), "billed_over_uncached": round(billed / bill["prompt_tokens"], 3),
        "per_role": per_role, "judgments_ok": s["n_judged"],
        "cost_usd": {r: s["tokens"][r].get("cost_usd") for r in ROLES if r in s["tokens"]},
        "dry_run_estimate_over_measured": estimate_accuracy(opts, s["tokens"]),
        "judged": judged(s), **({"reply_calls": reply_calls(out / "run.db")} if target else {}),
    }


def judged(s: dict[str, Any]) -> dict[str, Any]:
    """What shows that no call was retried: conversations judged and the run's failures."""
    return {"n_interactions": s["n_interactions"], "n_judged": s["n_judged"], "failures": len(s.get("failures") or [])}


def reply_calls(db: Path) -> dict[str, Any]:
    """Reply-level judge calls by reply position (1st, 2nd, ... clinician reply of a conversation):
    n and the mean tokens read from the cache, written to it and sent uncached per call, and the
    billed / uncached ratio of that position (reads 0.1x, writes 1.25x)."""
    import re
    import sqlite3

    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT tag, prompt_tokens, cached_tokens, cache_write_tokens FROM calls "
                           "WHERE role = 'judge' AND tag LIKE '%/reply%'").fetchall()
    by_pos: dict[int, list[tuple[int, int, int]]] = {}
    for tag, total, read, written in rows:
        turn = int(re.search(r"/reply(\d+):", tag)[1])  # type: ignore[index]
        by_pos.setdefault(turn, []).append((total or 0, read or 0, written or 0))
    out = {}
    for k, turn in enumerate(sorted(by_pos), start=1):
        calls = by_pos[turn]
        n = len(calls)
        total, read, written = (sum(c[i] for c in calls) / n for i in range(3))
        billed = total - read - written + 0.1 * read + 1.25 * written
        out[f"reply {k} (turn {turn + 1})"] = {"n": n, "prompt": round(total), "read": round(read),
                                               "written": round(written), "uncached": round(total - read - written),
                                               "billed_over_uncached": round(billed / total, 3)}
    return out


def estimate_accuracy(opts: RunOptions, measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``--dry-run``'s estimate / the measured figure per role: input, billed input, dollars,
    with the default reply lengths and with the mean reply length this server produced."""
    mean = {r: round(v["completion_tokens"] / v["calls"]) for r, v in measured.items()}
    out: dict[str, Any] = {"server_mean_reply_tokens": mean}
    for label, assumed in (("default_reply_lengths", None), ("server_reply_lengths", mean)):
        est = estimate_run(prepare(opts), assumed)
        out[label] = {r: {key: round(est[r][key] / measured[r][key], 3)
                          for key in ("prompt_tokens", "billed_input_tokens", "cost_usd")}
                      for r in ROLES}
    return out


def history(i: int, n: int = 20) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": "You are a careful clinician. " * 60}]
    for k in range(n - 1):
        msgs.append({"role": "user" if k % 2 == 0 else "assistant", "content": f"Message {k} of chat {i}. " * 12})
    return msgs


async def _gather(spec: ModelSpec, n: int, concurrency: int, policy: RetryPolicy) -> list[Any]:
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> Any:
        async with sem:
            return await acomplete(spec, history(i), role="clinician", policy=policy)

    return await asyncio.gather(*[one(i) for i in range(n)])


def gateway_cpu(n: int) -> dict[str, Any]:
    with spawn(latency_s=0.2) as srv:
        spec = ModelSpec(model="openai/bench-model", api_base=srv.url)
        asyncio.run(_gather(spec, 5, 5, RetryPolicy()))  # warm: clients, pools
        cpu, wall = time.process_time(), time.perf_counter()
        asyncio.run(_gather(spec, n, 50, RetryPolicy()))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"calls": n, "cpu_ms_per_call": round(1000 * cpu / n, 2), "wall_s": round(wall, 2)}


def rate_limit(n: int, limit: int, window_s: float) -> dict[str, Any]:
    with spawn(rate_limit=[limit, window_s]) as srv:
        rpm = round(limit * 60 / window_s)
        spec = ModelSpec(model="openai/limited-model", api_base=srv.url, rpm=rpm)
        wall = time.perf_counter()
        asyncio.run(_gather(spec, n, 50, RetryPolicy(max_retries=20)))
        wall = time.perf_counter() - wall
        outcomes = srv.stats()["outcomes"]
    throttled = outcomes.get("429-limit", 0)
    return {"requests": n, "server_limit": f"{limit} per {window_s:g} s ({rpm} rpm)", "client_rpm": rpm,
            "wall_s": round(wall, 1), "429s": throttled, "429s_per_minute": round(throttled * 60 / wall, 2)}


def import_times() -> dict[str, Any]:
    code = ("import time, resource; t = time.perf_counter(); import {mod}; "
            "r = resource.getrusage(resource.RUSAGE_SELF); "
            "print(time.perf_counter() - t, r.ru_utime + r.ru_stime)")
    out = {}
    for label, mod in (("mindeval_cli", "mindeval.cli"), ("litellm", "mindeval, litellm")):
        r = subprocess.run([sys.executable, "-c", code.format(mod=mod)], capture_output=True, text=True, check=True)
        wall, cpu = map(float, r.stdout.split())
        out[label] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=int, default=50)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--calls", type=int, default=1000, help="calls for the gateway CPU figure")
    ap.add_argument("--limited", type=int, default=120, help="requests for the rate-limit figure")
    ap.add_argument("--skip-run", action="store_true", help="skip the full caching run")
    ap.add_argument("--fewshot-file", default=None, help="annotated file: the judge sees 5 rated examples")
    ap.add_argument("--target", default=None, help="the caching run of this target alone (e.g. reply_safety)")
    ap.add_argument("--reply-words", type=int, default=60, help="words of each patient and clinician reply")
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench")
    if args.target:
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            profiles = make_profiles(args.profiles, tmp / "profiles.jsonl")
            print(json.dumps({"target": args.target, "profiles": args.profiles, "turns": args.turns,
                              "reply_words": args.reply_words,
                              **caching(profiles, args.turns, tmp / "run", None, args.target, args.reply_words)},
                             indent=2))
        return
    result: dict[str, Any] = {"imports": import_times()}
    litellm_module()
    result["gateway"] = gateway_cpu(args.calls)
    result["rate_limit"] = rate_limit(args.limited, 20, 10.0)
    if not args.skip_run:
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            profiles = make_profiles(args.profiles, tmp / "profiles.jsonl")
            result["caching"] = {"profiles": args.profiles, "turns": args.turns,
                                 **caching(profiles, args.turns, tmp / "run", args.fewshot_file)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
