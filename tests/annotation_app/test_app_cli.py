"""``mindeval app admin …``: scripted studies, codes printed once, clear errors without tracebacks."""

from __future__ import annotations

import json

from mindeval.cli import main


def test_a_study_can_be_scripted_end_to_end(tmp_path, capsys, demo_profiles_path):
    db = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    transcripts = demo_profiles_path.parent / "demo_transcripts.jsonl"
    assert main(["app", "admin", *db, "create-study", "Pilot", "--k", "2", "--seed", "3"]) == 0
    assert main(["app", "admin", *db, "add-annotator", "ana"]) == 0
    assert main(["app", "admin", *db, "add-annotator", "ben"]) == 0
    out = capsys.readouterr().out
    assert out.count("access code for") == 2
    assert main(["app", "admin", *db, "import", "Pilot", str(transcripts)]) == 0
    assert main(["app", "admin", *db, "assign", "Pilot"]) == 0
    out = capsys.readouterr().out
    assert "12 new assignments (seed 3) — ana: 6, ben: 6" in out
    assert main(["app", "admin", *db, "create-study", "Play", "--kind", "roleplay", "--clinician-model", "fake/echo"]) == 0
    assert main(["app", "admin", *db, "import", "Play", str(demo_profiles_path)]) == 0
    assert main(["app", "admin", *db, "list"]) == 0
    listing = capsys.readouterr().out
    assert "Pilot\trating\t6 items\t12 assignments" in listing and "clinician fake/echo, 25 min" in listing
    assert main(["app", "admin", *db, "results", "Pilot"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert [p["assigned"] for p in res["progress"]] == [6, 6]
    out_file = tmp_path / "r.csv"
    assert main(["app", "admin", *db, "export", "Pilot", "--format", "csv", "--out", str(out_file)]) == 0
    assert "wrote 0 rows" in capsys.readouterr().out


def test_admin_code_from_the_environment_is_not_printed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MINDEVAL_ADMIN_CODE", "FROM-ENV-CODE-77")
    db = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    assert main(["app", "admin", *db, "add-annotator", "boss", "--admin"]) == 0
    out = capsys.readouterr().out
    assert "FROM-ENV-CODE-77" not in out and "added admin 'boss'" in out
    from annotation_app.services import Workspace

    assert Workspace(db[1]).sign_in("boss", "FROM-ENV-CODE-77").viewer.is_admin


def test_mistakes_exit_2_with_one_clear_line(tmp_path, capsys):
    db = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    assert main(["app", "admin", *db, "create-study", "S"]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "model": "m/x", "member_attributes": {"name": "A"}, "messages": "hi"}\n')
    capsys.readouterr()
    assert main(["app", "admin", *db, "import", "S", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: {bad}:1:messages: expected a non-empty list of messages"
    assert main(["app", "admin", *db, "assign", "nope"]) == 2
    assert "error: study: no study 'nope'" in capsys.readouterr().err
    assert main(["app", "admin", *db, "add-annotator", "x", "--code-env", "UNSET_VAR_FOR_TEST"]) == 2
    assert "UNSET_VAR_FOR_TEST" in capsys.readouterr().err
    assert main(["app", "--db", "notadb://x", "--port", "1"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_list_items_names_the_ids_a_gold_file_takes_before_anyone_rates(tmp_path, capsys, demo_profiles_path):
    """Issue 38: the gold file's ``item`` ids were documented nowhere, and the csv export that the
    docs pointed to is empty before anyone rates. ``list items STUDY`` lists them, gold marked."""
    db = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    transcripts = demo_profiles_path.parent / "demo_transcripts.jsonl"
    assert main(["app", "admin", *db, "create-study", "Pilot"]) == 0
    assert main(["app", "admin", *db, "import", "Pilot", str(transcripts)]) == 0
    capsys.readouterr()
    assert main(["app", "admin", *db, "list", "items", "Pilot"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    ids = [json.loads(line)["id"] for line in transcripts.read_text().splitlines() if line.strip()]
    assert [r[0] for r in rows] == [f"demo:{i}" for i in ids] and all(len(r) == 3 for r in rows)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"item": rows[1][0], "expected": {"collaborative_stance": 3}}) + "\n")
    assert main(["app", "admin", *db, "gold", "Pilot", "--file", str(gold)]) == 0
    capsys.readouterr()
    assert main(["app", "admin", *db, "list", "items", "Pilot"]) == 0
    marked = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [r[0] for r in marked if r[-1] == "gold"] == [rows[1][0]]
    assert main(["app", "admin", *db, "list", "items"]) == 2  # a study is needed
    assert main(["app", "admin", *db, "list", "items", "Nope"]) == 2
    err = capsys.readouterr().err
    assert "takes a study name" in err and "no study 'Nope'" in err and "Traceback" not in err
