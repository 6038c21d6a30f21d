"""Engine speed against a local fixed-latency OpenAI-compatible server.

Usage: .venv/bin/python benchmarks/bench_engine.py [--profiles 50] [--turns 20] [--latency 0.2]
       [--concurrency 50] [--provider hosted_vllm|openai] [--rate-429 0.6 --retry-after 2]
       [--target reply_safety]

``--provider`` names the server's provider: ``hosted_vllm`` or ``openai``; with an ``api_base``
both take MindEval's own HTTP path (mindeval/llm/openai_http.py, the provider table's
``openai-compatible`` route); litellm is not imported by such a run.

Reports, for ``--profiles`` x ``--turns`` + one judge call each at ``--concurrency``:
* wall time of the run vs its critical path (turns + 1 sequential calls x latency);
* CPU ms per model call of the engine (in-process, imports warm; the server runs in
  another process so its CPU is not counted);
* start-up: a fresh ``mindeval run`` process, from launch to its first request (wall, and the
  CPU the process used by then), next to what importing litellm alone costs a fresh
  interpreter (the start-up of a run whose roles need litellm);
* store bytes per turn (run.db + WAL), at ``--turns`` and at half of it (linear storage
  gives the same figure for both);
* the ``--dry-run`` token estimate vs the tokens the server counted, per role;
* the targets of issue 25: first request <= 1 s after the command starts; <= 2 ms CPU per
  call; wall <= 1.15 x critical path (in-process, start-up measured apart), at 1 s latency
  for 50 and 200 conversations (``--profiles 200 --concurrency 200``).

With ``--rate-429 P`` the server answers a random share P of requests with 429 and
``Retry-After: --retry-after``; the run's wall is set against the floor those waits impose:
the expected longest conversation when every call takes the latency and each 429 costs the
latency plus the named wait (Monte Carlo over the same number of conversations; the client
adds up to 10% jitter to each wait, which the floor leaves out).
The server is tests/support/fault_server.py (replies are deterministic in the request).
"""

from __future__ import annotations

import argparse
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

from mindeval.engine.loop import run_benchmark  # noqa: E402
from mindeval.engine.prepare import prepare  # noqa: E402
from mindeval.llm.gateway import ModelSpec  # noqa: E402
from mindeval.llm.retry import RetryPolicy  # noqa: E402
from mindeval.records import load_profiles, write_profiles  # noqa: E402
from mindeval.resources import data_dir  # noqa: E402
from mindeval.run_options import RunOptions  # noqa: E402
from tests.support.fault_server import FaultServer, spawn  # noqa: E402

ROLES = ("patient", "clinician", "judge")


def make_profiles(n: int, path: Path) -> Path:
    base = load_profiles(data_dir() / "demo_profiles.jsonl")
    out = []
    for i in range(n):  # distinct profiles: vary the name
        q = base[i % len(base)].model_copy(deep=True)
        q.member_attributes.name = f"{q.name}{i // len(base)}"
        out.append(q)
    write_profiles(out, path)
    return path


PROVIDER = "hosted_vllm"


def options(url: str, profiles: Path, turns: int, concurrency: int, out: Path,
            retry: RetryPolicy | None = None, target: str | None = None) -> RunOptions:
    specs = {r: ModelSpec(model=f"{PROVIDER}/{r}-model", api_base=url, retry=retry) for r in ROLES}
    return RunOptions(**specs, profiles=str(profiles), turns=turns, out=out, concurrency=concurrency,
                      progress=False, **({"target": target} if target else {}))


def store_bytes(out: Path) -> int:
    return sum(p.stat().st_size for p in out.glob("run.db*"))


def engine_run(url: str, profiles: Path, turns: int, concurrency: int, out: Path,
               retry: RetryPolicy | None = None, target: str | None = None) -> dict[str, Any]:
    """One in-process run: wall, CPU and store size."""
    opts = options(url, profiles, turns, concurrency, out, retry, target)
    cpu, wall = time.process_time(), time.perf_counter()
    s = run_benchmark(opts, echo=None)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    n_turns = s["n_interactions"] * turns
    return {"summary": s, "wall_s": wall, "cpu_s": cpu, "calls": s["calls_made"],
            "bytes_per_turn": store_bytes(out) / max(1, n_turns), "opts": opts}


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def startup(profiles: Path, tmp: Path) -> tuple[float, float]:
    """Seconds from launching `mindeval run` to its first request at the server: wall, and
    the process's CPU by then (on a shared machine the CPU figure is the one to compare)."""
    stamps: list[tuple[float, float]] = []
    child: list[int] = []

    class Stamped(FaultServer):
        def _record(self, *args: Any) -> None:
            if not stamps:
                stamps.append((time.perf_counter(), _cpu_s(child[0])))
            super()._record(*args)

    with Stamped(latency_s=0.0) as srv:
        cmd = [sys.executable, "-m", "mindeval", "run", "--quiet", "--profiles", str(profiles), "--limit", "1",
               "--turns", "2", "--out", str(tmp / "startup")]
        for r in ROLES:
            cmd += [f"--{r}", f"{PROVIDER}/{r}-model", f"--{r}-api-base", srv.url]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=os.environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        child.append(proc.pid)
        _, err = proc.communicate()
        if proc.returncode:
            raise SystemExit(err.decode())
    return stamps[0][0] - t0, stamps[0][1]


IMPORT_LITELLM = """
import os, resource, time
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
t = time.perf_counter()
import litellm
litellm.acompletion  # litellm loads its call path lazily: a first call needs it
ru = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, ru.ru_utime + ru.ru_stime)
"""


def import_litellm() -> tuple[float, float]:
    """The floor of any start-up: a fresh interpreter importing litellm's call path (wall, CPU)."""
    out = subprocess.run([sys.executable, "-c", IMPORT_LITELLM], check=True, capture_output=True, text=True)
    wall, cpu = out.stdout.split()
    return float(wall), float(cpu)


def floor_429(n_conv: int, calls: int, latency: float, rate: float, wait: float, reps: int = 4000) -> float:
    """Expected wall of ``n_conv`` conversations of ``calls`` sequential calls each, run all at
    once, when a call is refused with probability ``rate`` and each refusal costs ``latency + wait``."""
    import numpy as np

    rng = np.random.default_rng(0)
    refusals = rng.geometric(1 - rate, size=(reps, n_conv, calls)) - 1
    per_conv = calls * latency + refusals.sum(axis=2) * (latency + wait)
    return float(per_conv.max(axis=1).mean())


def run_429(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmpdir, spawn(latency_s=args.latency, rates={"429": args.rate_429},
                                                        retry_after_s=args.retry_after) as srv:
        tmp = Path(tmpdir)
        profiles = make_profiles(args.profiles, tmp / "profiles.jsonl")
        run = engine_run(srv.url, profiles, args.turns, args.concurrency, tmp / "run",
                         RetryPolicy(max_retries=60, budget_s=3600))
        stats = srv.stats()
    floor = floor_429(args.profiles, args.turns + 1, args.latency, args.rate_429, args.retry_after)
    s = run["summary"]
    print(json.dumps({
        "profiles": args.profiles, "turns": args.turns, "latency_s": args.latency, "rate_429": args.rate_429,
        "retry_after_s": args.retry_after, "concurrency": args.concurrency, "load_avg": os.getloadavg(),
        "requests": stats.get("requests"), "outcomes": stats.get("outcomes"),
        "n_complete": s["n_complete"], "n_failed_interactions": s["n_failed_interactions"],
        "wall_s": round(run["wall_s"], 2), "floor_s": round(floor, 2),
        "wall_over_floor": round(run["wall_s"] / floor, 3), "target": "<= 1.5",
    }, indent=2))


def run_target(args: argparse.Namespace) -> None:
    """``--target``: one run of that target (e.g. a ``unit: reply`` one, whose replies are judged
    while the conversation goes on): wall vs the critical path (turns + the last reply's judge call; with
    ``sessions: N``, N sessions of turns and the two sequential calls of each step between them)."""
    from mindeval.targets import load_target

    sessions = load_target(args.target).manifest.sessions
    with tempfile.TemporaryDirectory() as tmpdir, spawn(latency_s=args.latency) as srv:
        tmp = Path(tmpdir)
        run = engine_run(srv.url, make_profiles(args.profiles, tmp / "profiles.jsonl"), args.turns,
                         args.concurrency, tmp / "run", target=args.target)
    critical = (sessions * args.turns + 2 * (sessions - 1) + 1) * args.latency
    s = run["summary"]
    print(json.dumps({
        "target": args.target, "sessions": sessions, "profiles": args.profiles, "turns": args.turns,
        "latency_s": args.latency, "concurrency": args.concurrency, "calls": run["calls"], "judge_calls": s["tokens"]["judge"]["calls"],
        "judged": s["n_judged"], "wall_s": round(run["wall_s"], 2), "critical_path_s": round(critical, 2),
        "wall_over_critical": round(run["wall_s"] / critical, 2), "load_avg": os.getloadavg()}, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=int, default=50)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--provider", choices=("hosted_vllm", "openai"), default="hosted_vllm")
    ap.add_argument("--rate-429", type=float, default=0.0, help="share of requests answered 429 (random)")
    ap.add_argument("--retry-after", type=float, default=2.0, help="the Retry-After of those 429s (s)")
    ap.add_argument("--target", help="run this target only (e.g. reply_safety): wall vs critical path")
    args = ap.parse_args()
    global PROVIDER
    PROVIDER = args.provider
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    os.environ.setdefault("HOSTED_VLLM_API_KEY", "sk-bench")
    from mindeval.llm import openai_http  # noqa: F401  (imports warm: start-up is measured separately)
    if args.rate_429:
        run_429(args)
        return
    if args.target:
        run_target(args)
        return
    with tempfile.TemporaryDirectory() as tmpdir, spawn(latency_s=args.latency) as srv:
        tmp = Path(tmpdir)
        profiles = make_profiles(args.profiles, tmp / "profiles.jsonl")
        full = engine_run(srv.url, profiles, args.turns, args.concurrency, tmp / "full")
        srv.configure(reset=True)
        half = engine_run(srv.url, profiles, max(2, args.turns // 2), args.concurrency, tmp / "half")
        from mindeval.engine.estimate import estimate_run

        estimate = estimate_run(prepare(full["opts"]))
        measured = full["summary"]["tokens"]
        start, start_cpu = startup(profiles, tmp)
        floor, floor_cpu = import_litellm()
    critical = (args.turns + 1) * args.latency
    result = {
        "provider": args.provider, "profiles": args.profiles, "turns": args.turns, "latency_s": args.latency,
        "concurrency": args.concurrency, "calls": full["calls"],
        "wall_s": round(full["wall_s"], 2), "critical_path_s": round(critical, 2),
        "wall_over_critical": round(full["wall_s"] / critical, 2),
        "target_wall_s": f"<= 1.15 x {round(critical, 2)} = {round(1.15 * critical, 2)} (in-process; start-up apart)",
        "load_avg": os.getloadavg(),
        "cpu_ms_per_call": round(1000 * full["cpu_s"] / max(1, full["calls"]), 2),
        "startup_to_first_request_s": round(start, 2),
        "startup_cpu_s": round(start_cpu, 2),
        "litellm_imported_by_the_run": "litellm" in sys.modules,
        "import_litellm_s": round(floor, 2), "import_litellm_cpu_s": round(floor_cpu, 2),
        "store_bytes_per_turn": round(full["bytes_per_turn"]),
        f"store_bytes_per_turn_at_{max(2, args.turns // 2)}_turns": round(half["bytes_per_turn"]),
        "tokens_estimated_vs_measured": estimate and {
            r: {"input": [estimate[r]["prompt_tokens"], measured[r]["prompt_tokens"]],
                "output": [estimate[r]["completion_tokens"], measured[r]["completion_tokens"]]}
            for r in ROLES
        },
    }
    result["targets_met"] = {
        "first_request_le_1s": start <= 1.0,
        "cpu_le_2ms_per_call": result["cpu_ms_per_call"] <= 2.0,
        "wall_le_1.15x_critical": full["wall_s"] <= 1.15 * critical,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
