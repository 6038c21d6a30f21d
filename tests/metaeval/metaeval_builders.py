"""Builders for metaeval tests: rows in the authors' annotation schema, judge run directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIELDS = ("criterion_1", "criterion_2", "criterion_3", "criterion_4", "criterion_6", "criterion_7",
          "criterion_8", "criterion_9", "criterion_10", "criterion11")
SYSTEMS = ("sys/alpha", "sys/beta", "sys/gamma")


def attributes(name: str, age: int = 40, goal: str = "Feel calmer") -> dict[str, Any]:
    """A complete attribute set in the authors' spelling (``mood``, ``interaction_goal``)."""
    return {
        "name": name, "sex": "Female", "gender_identity": "Female", "sexual_orientation": "Heterosexual",
        "age": age, "race": "Caucasian", "thought_process": "linear", "general_outlook": "hopeful",
        "conversation_style": "brief", "mood": "flat", "education": "college", "profession": "Teacher",
        "employment_status": "employed", "financial_situation": "stable", "support_system": "friends",
        "siblings": "one brother", "relationship_status": "single", "living_situation": "alone",
        "exercise": "walks", "sleep_quality": "poor", "attitude_towards_mindfulness": "curious",
        "region": "urban", "depressive_symptoms": "mild depressive symptoms",
        "anxious_symptoms": "moderate anxious symptoms", "interaction_goal": goal,
    }


def authors_row(iid: str, name: str, system: str, scores: dict[str, list[int]], users: list[str],
                age: int = 40) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": iid, "model": system, "member_attributes": attributes(name, age, goal=f"goal for {system}"),
        "messages": [
            {"role": "assistant", "content": f"Hi {name}. How are you doing?"},
            {"role": "user", "content": "Not great, honestly."},
            {"role": "assistant", "content": "I am sorry to hear that. What has been hardest?"},
        ],
    }
    for f in FIELDS:
        row[f"{f}.responses"] = scores[f]
        row[f"{f}.responses.users"] = users
    return row


def write_judgments(out: Path, rows: list[dict[str, Any]], config: dict[str, Any] | None = None) -> Path:
    """A judge run directory with judgments.jsonl (run-directory schema of docs/architecture.md) and config.json."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "judgments.jsonl").open("w", encoding="utf-8") as fh:
        for r in rows:
            full = {"parse_status": "ok" if r.get("scores") else "failed", "sample": 0, "attempts": 1,
                    "raw_text": "", "rationale": None, "error": None, "severe": False, "n_turns": 20, **r}
            fh.write(json.dumps(full) + "\n")
    (out / "config.json").write_text(json.dumps(config or {"run_id": "r1"}), encoding="utf-8")
    return out


def human_file(tmp_path: Path, n: int = 8) -> Path:
    """A human_user_turns.jsonl of ``n`` turns over three profiles."""
    rows = []
    for i in range(n):
        prof = {k: v for k, v in attributes(f"P{i % 3}").items() if k not in ("mood", "interaction_goal")}
        prof.update(recent_mood="low", program_goal="sleep better", backstory=f"You are person {i}.")
        rows.append({"patient_profile": prof, "content": f"Hey. Rough week {i}, work is a lot."})
    p = tmp_path / "turns.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def weighted_cohen(a: list[int], b: list[int], k: int = 4) -> float:
    """Quadratic-weighted Cohen's κ of two raters' levels ``0..k-1``, from its definition."""
    n = len(a)
    obs = sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) / n
    exp = sum((i - j) ** 2 * (a.count(i) / n) * (b.count(j) / n) for i in range(k) for j in range(k))
    return 1 - obs / exp
