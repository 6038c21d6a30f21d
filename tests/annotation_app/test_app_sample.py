"""`app admin assign --per-system N`: n random conversations per clinician model, seeded, so the
rated subset `leaderboard --humans` needs is a random sample by construction."""

from __future__ import annotations

import json

from sqlalchemy import text

from annotation_app.services import Workspace
from mindeval.cli import main


def _items(tmp_path, n: int = 12):
    rows = [{"id": f"{m}-{i}", "model": f"vendor/{m}", "member_attributes": {"name": f"P{i}"},
             "messages": [{"role": "user", "content": "Hello."}]} for m in ("a", "b") for i in range(n)]
    rows.append({"id": "c-0", "model": "vendor/c", "member_attributes": {"name": "P0"},
                 "messages": [{"role": "user", "content": "Hello."}]})
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _assigned(url: str) -> dict[str, list[str]]:
    ws = Workspace(url)
    with ws.db.read() as s:
        rows = s.execute(text("SELECT DISTINCT i.clinician_model, i.external_id FROM ann_assignments a "
                              "JOIN ann_items i ON i.id = a.item_id")).all()
    ws.close()
    out: dict[str, list[str]] = {}
    for model, ext in rows:
        out.setdefault(model, []).append(ext)
    return {m: sorted(v) for m, v in out.items()}


def _study(tmp_path, name: str, seed: int) -> list[str]:
    db = ["--db", f"sqlite:///{tmp_path / name}"]
    assert main(["app", "admin", *db, "create-study", "S", "--k", "2", "--seed", str(seed)]) == 0
    assert main(["app", "admin", *db, "import", "S", str(_items(tmp_path)), "--kind", "interactions"]) == 0
    for who in ("ana", "ben"):
        assert main(["app", "admin", *db, "add-annotator", who]) == 0
    return db


def test_assign_per_system_draws_a_seeded_stratified_sample(tmp_path, capsys):
    db = _study(tmp_path, "one.db", 3)
    capsys.readouterr()
    assert main(["app", "admin", *db, "assign", "S", "--per-system", "5"]) == 0
    out = capsys.readouterr().out
    assert "22 new assignments (seed 3)" in out  # (5 + 5 + 1) conversations x k = 2
    assert "random sample of 5 per system (seed 3): vendor/a: 5, vendor/b: 5, vendor/c: 1" in out
    first = _assigned(db[1])
    assert {m: len(v) for m, v in first.items()} == {"vendor/a": 5, "vendor/b": 5, "vendor/c": 1}
    assert first["vendor/a"] != [f"file:a-{i}" for i in range(5)]  # not the first five: drawn

    # Same seed, another database: the same sample. Another seed: another sample.
    db2 = _study(tmp_path, "two.db", 3)
    assert main(["app", "admin", *db2, "assign", "S", "--per-system", "5"]) == 0
    assert _assigned(db2[1]) == first
    db3 = _study(tmp_path, "three.db", 4)
    assert main(["app", "admin", *db3, "assign", "S", "--per-system", "5"]) == 0
    assert _assigned(db3[1]) != first

    # A rerun tops up: the five stay and three more are drawn per system.
    capsys.readouterr()
    assert main(["app", "admin", *db, "assign", "S", "--per-system", "8"]) == 0
    assert "12 new assignments" in capsys.readouterr().out  # (3 + 3 + 0) x 2
    more = _assigned(db[1])
    assert all(set(first[m]) <= set(more[m]) for m in first) and len(more["vendor/a"]) == 8
    assert main(["app", "admin", *db, "assign", "S", "--per-system", "0"]) == 2
    assert "--per-system must be at least 1" in capsys.readouterr().err
