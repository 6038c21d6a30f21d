"""SIMULATED human unit ratings for pipeline demonstrations (never evidence about any judge).

Reads a judge run's ``judgments.jsonl`` and writes a unit ratings file (``metaeval compare --humans``)
in which each of ``--raters`` scripted raters copies the judge's unit answers with declared noise:
every answer is replaced by another allowed answer with probability ``--noise``, every reply
level moves one step (up or down, at random) and every flag flips with that probability. Seeded::

    python benchmarks/simulated_unit_raters.py RUN_DIR OUT.jsonl --raters 3 --noise 0.2 --seed 0
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from mindeval.records import read_jsonl
from mindeval.rundir import run_target
from mindeval.targets import load_target


def _answers(answers: dict[str, str], allowed: dict[str, list[str]], rng: random.Random, p: float) -> dict[str, str]:
    return {q: rng.choice([x for x in allowed[q] if x != a]) if rng.random() < p else a for q, a in answers.items()}


def _replies(replies: list[dict[str, Any]], levels: list[str], rng: random.Random, p: float) -> list[dict[str, Any]]:
    out = []
    for r in replies:
        i = levels.index(r["level"])
        if rng.random() < p:
            i = min(len(levels) - 1, max(0, i + rng.choice([-1, 1])))
        flags = {f: (not v) if rng.random() < p else v for f, v in r["flags"].items()}
        out.append({"turn": r["turn"], "level": levels[i], "flags": flags})
    return out


def simulate(run_dir: Path, raters: int, noise: float, seed: int) -> list[dict[str, Any]]:
    """One row per scripted rater and ok judgment (sample 0) of the run."""
    g = load_target(run_target(run_dir).name).guidelines
    allowed = {q.id: list(q.answers) for ax in g.judge_axes for q in ax.questions}
    levels = [lv.id for lv in sorted(g.levels, key=lambda lv: -lv.value)]
    rng = random.Random(seed)
    rows = []
    for _, j in read_jsonl(run_dir / "judgments.jsonl"):
        if j.get("parse_status") != "ok" or j.get("sample", 0) != 0:
            continue
        for k in range(1, raters + 1):
            row: dict[str, Any] = {"interaction_id": j["interaction_id"], "annotator": f"sim{k}",
                                   "profile_id": j["profile_id"], "system": j["model"]}
            if j.get("answers"):
                row["answers"] = _answers(j["answers"], allowed, rng, noise)
            if j.get("replies"):
                row["replies"] = _replies(j["replies"], levels, rng, noise)
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--raters", type=int, default=3)
    ap.add_argument("--noise", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rows = simulate(a.run_dir, a.raters, a.noise, a.seed)
    a.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} SIMULATED unit ratings ({a.raters} raters, noise {a.noise}) to {a.out}")


if __name__ == "__main__":
    main()
