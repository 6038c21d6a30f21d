"""Imports and exports: the authors' file round-trips exactly; bad input names file, line and field."""

from __future__ import annotations

import csv
import io
import json

import pytest
from appkit import DEMO_CODE, make_workspace, viewer

from annotation_app.services import SYSTEM, MindEvalError, Workspace


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _ratings(rows: list[dict]) -> dict[tuple[str, str, str], object]:
    """Every (row id, field, annotator) → response of an authors' file."""
    out = {}
    for r in rows:
        for key, val in r.items():
            if key.endswith(".responses") and val is not None:
                for user, resp in zip(r[key + ".users"], val, strict=True):
                    out[(r["id"], key, user)] = resp
    return out


def test_the_authors_file_round_trips_without_changing_a_rating(shared_data, tmp_path):
    src = shared_data / "human_annotations.jsonl"
    original = _rows(src.read_text(encoding="utf-8"))
    ws = Workspace(f"sqlite:///{tmp_path / 'one.db'}")
    ws.create_study(SYSTEM, "authors", "rating")
    report = ws.import_path(SYSTEM, "authors", src)
    assert (report.kind, report.items_added, report.ratings_added, report.annotators_added) == ("authors", 60, 240, 4)
    exported = ws.export_text(SYSTEM, "authors", "authors")
    assert _rows(exported) == original  # identical rows, keys in the same order
    assert list(_rows(exported)[0]) == list(original[0])
    again = ws.import_path(SYSTEM, "authors", src)
    assert (again.items_added, again.ratings_added, again.ratings_unchanged) == (0, 0, 240)

    out = tmp_path / "exported.jsonl"
    out.write_text(exported, encoding="utf-8")
    ws2 = Workspace(f"sqlite:///{tmp_path / 'two.db'}")
    ws2.create_study(SYSTEM, "re-import", "rating")
    ws2.import_path(SYSTEM, "re-import", out)
    second = _rows(ws2.export_text(SYSTEM, "re-import", "authors"))
    assert _ratings(second) == _ratings(original)
    assert len(_ratings(original)) > 2000
    ws.close()
    ws2.close()

    table = list(csv.DictReader(io.StringIO(Workspace(f"sqlite:///{tmp_path / 'one.db'}").export_text(SYSTEM, 1, "csv"))))
    assert len(table) == 240
    assert {r["respect_inclusion"] for r in table} >= {"NA", "4"}


def test_a_changed_rating_is_refused_on_reimport(shared_data, tmp_path):
    rows = _rows((shared_data / "human_annotations.jsonl").read_text(encoding="utf-8"))[:2]
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "S", "rating")
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws.import_path(SYSTEM, "S", path)
    rows[1]["criterion_2.responses"][0] = 1 if rows[1]["criterion_2.responses"][0] != 1 else 2
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(MindEvalError) as err:
        ws.import_path(SYSTEM, "S", path)
    assert str(err.value).startswith(f"{path}:2:")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", ":1: malformed JSON"),
        ('{"id": "a", "model": "m/x", "member_attributes": {"name": "A"}, "messages": []}', ":1:messages:"),
        ('{"id": "a", "model": "m/x", "member_attributes": {"name": "A"}, '
         '"messages": [{"role": "doctor", "content": "x"}]}', ":1:messages.0:"),
        ('{"model": "m/x", "member_attributes": {"name": "A"}, "messages": [{"role": "user", "content": "x"}]}',
         ":1:id:"),
    ],
)
def test_bad_interaction_files_name_the_line_and_field(tmp_path, line, message):
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "S", "rating")
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(MindEvalError) as err:
        ws.import_path(SYSTEM, "S", path, kind="interactions")
    assert message in str(err.value) and str(path) in str(err.value)


def test_a_run_directory_keeps_judge_scores_for_the_admin_only(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    msgs = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi"}]
    rows = [{"id": f"i{n}", "run_id": "r9", "profile_id": "kim-1", "model": "x/clin", "member_attributes": {"name": "Kim"},
             "status": st, "messages": msgs if st == "complete" else []} for n, st in enumerate(("complete", "failed"))]
    (run / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    judgment = {"interaction_id": "i0", "profile_id": "kim-1", "model": "x/clin", "judge_model": "j/x", "sample": 0,
                "scores": {"CAC": 3, "EPC": 4, "AR": 3, "TRA": 5, "ASCQ": 4}, "parse_status": "ok"}
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "S", "rating")
    # a judgment row that breaks the run-directory schema is refused as by every other reader
    (run / "judgments.jsonl").write_text(json.dumps({**judgment, "scores": {"CAC": 3}}) + "\n")
    with pytest.raises(MindEvalError, match=r"judgments.jsonl:1:scores: scores must have exactly the axes"):
        ws.import_path(SYSTEM, "S", run)
    (run / "judgments.jsonl").write_text(json.dumps(judgment) + "\n")
    rep = ws.import_path(SYSTEM, "S", run)
    assert (rep.kind, rep.items_added, rep.skipped) == ("run", 1, 1)
    with ws.db.read() as s:
        from annotation_app.store import ItemRow

        item = s.query(ItemRow).one()
    assert item.meta["judgments"][0]["judge_model"] == "j/x" and item.clinician_model == "x/clin"


def test_roleplay_exports_use_the_interactions_and_human_turns_schemas(tmp_db_url):
    ws = make_workspace(tmp_db_url)
    v = viewer(ws, "demo", DEMO_CODE)
    sid = ws.sessions(v, 2)[0].session_id
    ws.start_session(v, sid)
    ws.send_message(v, sid, "I can't switch off at night.")
    ws.send_message(v, sid, "Maybe work.")
    ws.finish_session(v, sid)
    (inter,) = _rows(ws.export_text(SYSTEM, 2, "interactions"))
    assert inter["patient_model"] == "human" and inter["model"] == "fake/echo"
    assert [m["role"] for m in inter["messages"]] == ["user", "assistant", "user", "assistant"]
    assert [t["author"] for t in inter["turns"]] == ["human", "model", "human", "model"]
    assert set(inter) >= {"id", "run_id", "profile_id", "member_attributes", "status", "severe"}
    turns = _rows(ws.export_text(SYSTEM, 2, "user-turns"))
    assert [t["content"] for t in turns] == ["I can't switch off at night.", "Maybe work."]
    assert turns[0]["patient_profile"]["backstory"] and turns[0]["patient_profile"]["name"] == inter["member_attributes"]["name"]
    with pytest.raises(MindEvalError, match="rating study"):
        ws.export_text(SYSTEM, 1, "user-turns")
    ws.close()


def test_roleplay_turns_reach_metaeval_realism_as_data_read_by_the_command_line(tmp_db_url):
    """`metaeval realism --human-turns URL --study S`: the command line reads the study's turns
    through the app's data package; metaeval takes them as data and never opens the database."""
    from metaeval.realism import load_human_turns
    from mindeval.cli.studies import read_turns

    ws = make_workspace(tmp_db_url)
    v = viewer(ws, "demo", DEMO_CODE)
    sid = ws.sessions(v, 2)[0].session_id
    ws.start_session(v, sid)
    ws.send_message(v, sid, "I can't switch off at night.")
    ws.finish_session(v, sid)
    name = ws.study(SYSTEM, 2).name
    ws.close()
    read = read_turns(tmp_db_url, name)
    assert read is not None and read.source.endswith(f"#study={name}")
    turns = load_human_turns(tmp_db_url, name, read)
    assert [t.content for t in turns] == ["I can't switch off at night."] and turns[0].profile.name
    assert read_turns("human_user_turns.jsonl", None) is None  # a file is metaeval's to read
    with pytest.raises(MindEvalError, match="the turns source is a file"):  # a file holds no studies
        read_turns("human_user_turns.jsonl", name)
    with pytest.raises(MindEvalError, match="annotation database was not read"):
        load_human_turns(tmp_db_url, name)
