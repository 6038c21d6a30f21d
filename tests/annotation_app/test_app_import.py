"""People's names, imports that never drop data, and exports a spreadsheet cannot run."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from appkit import ADMIN_CODE, DEMO_CODE, make_workspace, sign_in, viewer
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from annotation_app.services import SYSTEM, MindEvalError, Workspace
from annotation_app.store import AnnotatorRow, ItemRow
from annotation_app.store.auth import hash_code
from annotation_app.store.migrations import upgrade
from mindeval.resources import data_dir


def _write(path: Path, rows: list[dict], prefix: str = "") -> Path:
    path.write_text(prefix + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _n_items(ws: Workspace) -> int:
    with ws.db.read() as s:
        return s.query(ItemRow).count()


def _rate_and_submit(ws: Workspace, v, assignment_id: int, justification: str = "fine",
                     safety: str | None = None) -> None:
    for sub in ws.subaxes():
        ws.save_value(v, assignment_id, sub.id, 4)
    ws.save_text(v, assignment_id, justification=justification, safety_note=safety)
    ws.submit(v, assignment_id)


# ------------------------------------------------------------------ names


def test_names_that_differ_only_in_case_are_one_name(any_db_url):
    ws = Workspace(any_db_url)
    _, code = ws.add_annotator(SYSTEM, "Bruno")
    for twin in ("bruno", " BRUNO ", "Bruno"):
        with pytest.raises(MindEvalError, match="already exists"):
            ws.add_annotator(SYSTEM, twin)
    with pytest.raises(IntegrityError):  # the database itself refuses, whoever writes
        with ws.db.write() as s:
            s.add(AnnotatorRow(name="bRUNO", code_hash=None, is_admin=False, origin="created"))
    assert [p.name for p in ws.annotators(SYSTEM)] == ["Bruno"]

    signed = ws.sign_in("bruno", code)
    assert signed is not None and signed.viewer.name == "Bruno"
    new = ws.reset_code(SYSTEM, "BRUNO")
    assert ws.sign_in("Bruno", code) is None and ws.sign_in("bruno", new) is not None
    ws.close()


def test_an_older_database_with_case_twins_keeps_both_people(any_db_url):
    eng = create_engine(any_db_url)
    upgrade(eng, "0002")
    with eng.begin() as c:
        for pid, name, code in ((1, "Bruno", "FIRST-CODE-1"), (2, "bruno", "SECOND-CODE-2")):
            c.execute(text("INSERT INTO ann_annotators (id, name, code_hash, is_admin, active, origin, created_at) "
                           "VALUES (:i, :n, :h, false, true, 'created', '2026-01-01 00:00:00')"),
                      {"i": pid, "n": name, "h": hash_code(code)})
    eng.dispose()
    ws = Workspace(any_db_url)  # upgrades to head
    assert sorted(p.name for p in ws.annotators(SYSTEM)) == ["Bruno", "bruno #2"]
    assert ws.sign_in("BRUNO", "FIRST-CODE-1").viewer.name == "Bruno"
    assert ws.sign_in("bruno #2", "SECOND-CODE-2") is not None  # the twin can sign in now
    ws.close()


# ------------------------------------------------------------------ imported annotators


def test_reimporting_an_export_does_not_give_ratings_to_existing_people(any_db_url, tmp_path):
    ws = make_workspace(any_db_url)
    demo = viewer(ws, "demo", DEMO_CODE)
    _rate_and_submit(ws, demo, ws.queue(demo, 1)[0].assignment_id)
    exported = tmp_path / "export.jsonl"
    exported.write_text(ws.export_text(SYSTEM, 1, "authors"), encoding="utf-8")

    ws.create_study(SYSTEM, "copy", "rating")
    rep = ws.import_path(SYSTEM, "copy", exported)
    assert (rep.ratings_added, rep.annotators_added, rep.items_linked) == (1, 1, 1)
    people = {p.name: p for p in ws.annotators(SYSTEM)}
    assert not people["demo (imported)"].active and not people["demo (imported)"].can_sign_in
    assert "copy" not in [p.name for p in ws.my_studies(demo)]  # demo's account got nothing
    assert [r.name for r in ws.results(SYSTEM, "copy").progress] == ["demo (imported)"]
    code = ws.reset_code(SYSTEM, "demo (imported)")  # an explicit choice to let it sign in
    assert ws.sign_in("DEMO (imported)", code).viewer.name == "demo (imported)"

    ws.create_study(SYSTEM, "mapped", "rating")
    ws.import_path(SYSTEM, "mapped", exported, map_annotators={"demo": "demo"})
    mine = {p.name: (p.done, p.total) for p in ws.my_studies(demo)}
    assert mine["mapped"] == (1, 1)  # only when the admin says so

    ws.create_study(SYSTEM, "typo", "rating")
    with pytest.raises(MindEvalError, match="nobody: not an annotator in this file"):
        ws.import_path(SYSTEM, "typo", exported, map_annotators={"nobody": "demo"})
    with pytest.raises(MindEvalError, match="no annotator named 'ghost'"):
        ws.import_path(SYSTEM, "typo", exported, map_annotators={"demo": "ghost"})
    assert ws.study(SYSTEM, "typo").n_items == 0
    ws.close()


# ------------------------------------------------------------------ nothing dropped


def _interaction(iid: str, text: str = "Hello.", name: str = "Kim") -> dict:
    return {"id": iid, "model": "x/clin", "member_attributes": {"name": name},
            "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "Hi."}]}


def test_an_id_reused_for_different_content_is_refused_and_nothing_is_imported(any_db_url, tmp_path):
    ws = Workspace(any_db_url)
    ws.create_study(SYSTEM, "S", "rating")
    first = _write(tmp_path / "a.jsonl", [_interaction("i1"), _interaction("i2")])
    ws.import_path(SYSTEM, "S", first)
    again = ws.import_path(SYSTEM, "S", first)
    assert (again.items_linked, again.items_reused, again.items_added) == (0, 2, 0)  # identical: a no-op

    second = _write(tmp_path / "b.jsonl", [_interaction("i3"), _interaction("i1", text="Something else.")])
    with pytest.raises(MindEvalError) as err:
        ws.import_path(SYSTEM, "S", second)
    assert f"{second}:2:messages: id 'i1' is already in the workspace with a different transcript" in str(err.value)
    assert f"{first}:1" in str(err.value)  # where the first one came from
    assert _n_items(ws) == 2  # i3 was not imported either

    twice = _write(tmp_path / "c.jsonl", [_interaction("j1"), _interaction("j1", name="Lee")])
    with pytest.raises(MindEvalError, match=r"c\.jsonl:2:member_attributes: id 'j1'"):
        ws.import_path(SYSTEM, "S", twice)
    ws.close()


def test_every_problem_of_a_file_is_listed_with_file_line_and_field(tmp_path):
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "S", "rating")
    bad = tmp_path / "bad.jsonl"
    good = json.dumps(_interaction("ok"))
    no_msgs = json.dumps({"id": "a", "member_attributes": {"name": "A"}, "messages": []})
    no_id = json.dumps({k: v for k, v in _interaction("b").items() if k != "id"})
    bad.write_text("\n".join([good, "{not json", no_msgs, no_id, "[1, 2]"]) + "\n", encoding="utf-8")
    with pytest.raises(MindEvalError) as err:
        ws.import_path(SYSTEM, "S", bad, kind="interactions")
    msg = str(err.value)
    assert msg.startswith(f"{bad}: 4 problems, nothing was imported")
    for where in (":2: malformed JSON", ":3:messages:", ":4:id:", ":5: each line must be a JSON object"):
        assert f"{bad}{where}" in msg, where
    assert _n_items(ws) == 0
    ws.close()


@pytest.mark.parametrize("content", ["", "\n\n  \n", "\ufeff"])
def test_an_empty_file_has_its_own_message(tmp_path, content):
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "S", "rating")
    path = tmp_path / "empty.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(MindEvalError, match="the file is empty: there is nothing to import"):
        ws.import_path(SYSTEM, "S", path)
    ws.close()


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "S", "rating")
    src = data_dir() / "demo_transcripts.jsonl"
    path = tmp_path / "excel.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    rep = ws.import_path(SYSTEM, "S", path)
    assert (rep.kind, rep.items_linked) == ("interactions", len(_rows(src)))
    ws.close()


def test_unknown_criterion_fields_are_refused_and_other_fields_come_back(shared_data, tmp_path):
    rows = _rows(shared_data / "human_annotations.jsonl")[:3]
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "S", "rating")
    rows[0]["notes"] = {"reviewed": True}
    odd = [dict(r) for r in rows]
    odd[1]["criterion_12.responses"] = [3, 3, 3, 3]
    odd[2]["criterion_12.responses"] = [4, 4, 4, 4]
    path = _write(tmp_path / "odd.jsonl", odd)
    with pytest.raises(MindEvalError) as err:
        ws.import_path(SYSTEM, "S", path)
    for line in (2, 3):
        assert f"{path}:{line}:criterion_12: criterion field(s) criterion_12 are not in the mapping" in str(err.value)
    assert _n_items(ws) == 0

    ok = _write(tmp_path / "ok.jsonl", rows)
    ws.import_path(SYSTEM, "S", ok)
    back = [json.loads(line) for line in ws.export_text(SYSTEM, "S", "authors").splitlines()]
    assert back == rows and list(back[0]) == list(rows[0])  # the extra key, in its place
    ws.close()


def _authors_interactions(shared_data: Path, n: int) -> list[dict]:
    """Rows in the authors' interaction layout (their generate_interactions output)."""
    out = []
    for p in _rows(shared_data / "profiles.jsonl")[:n]:
        profile = dict(p["member_attributes"], member_narrative=p["member_narrative"])
        out.append({"member_profile": profile,
                    "interaction": [{"role": "user", "content": "Hello"},
                                    {"role": "assistant", "content": f"Hi {profile['name']}, how are you?"},
                                    {"role": "user", "content": "Tired, mostly."}],
                    "clinician_thinking_traces": ["", ""], "member_thinking_traces": ["think"]})
    return out


def test_the_authors_interaction_layout_imports(shared_data, tmp_path):
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "S", "rating")
    rows = _authors_interactions(shared_data, 3)
    path = _write(tmp_path / "interactions.jsonl", rows)
    rep = ws.import_path(SYSTEM, "S", path)
    assert (rep.kind, rep.items_linked, rep.items_added) == ("interactions", 3, 3)
    assert ws.import_path(SYSTEM, "S", path).items_reused == 3  # ids come from the content
    with ws.db.read() as s:
        item = s.query(ItemRow).order_by(ItemRow.id).first()
    assert item.member_attributes == {k: v for k, v in rows[0]["member_profile"].items() if k != "member_narrative"}
    assert item.messages == rows[0]["interaction"]
    assert item.meta["member_narrative"] == rows[0]["member_profile"]["member_narrative"]
    assert item.meta["member_thinking_traces"] == ["think"]
    ws.close()


def test_the_import_page_says_how_many_items_were_linked(demo_ws, tmp_path):
    path = _write(tmp_path / "more.jsonl", [_interaction("n1"), _interaction("n2"), _interaction("n3")])
    admin = sign_in("admin", ADMIN_CODE)
    admin.switch_page("views/admin_studies.py").run()
    admin.text_input(key="admin_path").input(str(path))
    admin.button(key="admin_import").click().run()
    assert not admin.exception
    assert any("3 items linked to the study (3 new" in s.value for s in admin.success), [s.value for s in admin.success]
    admin.button(key="admin_import").click().run()
    assert any("0 items linked to the study (0 new, 3 identical" in s.value for s in admin.success)

    # the admin can give a file's ratings to an existing person, and only then they get them
    demo = viewer(demo_ws, "demo", DEMO_CODE)
    _rate_and_submit(demo_ws, demo, demo_ws.queue(demo, 1)[0].assignment_id)
    export = tmp_path / "export.jsonl"
    export.write_text(demo_ws.export_text(SYSTEM, 1, "authors"), encoding="utf-8")
    demo_ws.create_study(SYSTEM, "mapped", "rating")
    admin.run()
    admin.selectbox(key="admin_study").select("mapped")
    admin.text_input(key="admin_path").input(str(export))
    admin.text_area(key="admin_map").input("demo=Demo")
    admin.button(key="admin_import").click().run()
    assert any("1 ratings, 0 imported annotators" in s.value for s in admin.success), [s.value for s in admin.success]
    assert {p.name: p.done for p in demo_ws.my_studies(demo)}["mapped"] == 1
    admin.text_area(key="admin_map").input("just-a-name")
    admin.button(key="admin_import").click().run()
    assert any("expected FILE_ID=NAME" in e.value.replace("\\", "") for e in admin.error)
    admin.text_area(key="admin_map").input("")

    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n[]\n", encoding="utf-8")  # two problems, both listed
    admin.text_input(key="admin_path").input(str(bad))
    admin.button(key="admin_import").click().run()
    (err,) = [e.value.replace("\\", "") for e in admin.error]  # shown inert (markdown escaped)
    assert "2 problems" in err and "bad.jsonl:1" in err and "bad.jsonl:2" in err


# ------------------------------------------------------------------ exports


def test_csv_exports_neutralise_formulas(tmp_db_url):
    ws = make_workspace(tmp_db_url)
    demo = viewer(ws, "demo", DEMO_CODE)
    queue = ws.queue(demo, 1)
    attacks = ["=HYPERLINK(\"http://x.example\",\"click\")", "+1+1", "-2+3", "@SUM(A1:A2)"]
    for entry, attack in zip(queue, attacks):
        _rate_and_submit(ws, demo, entry.assignment_id, justification=attack, safety="\tcmd")
    table = list(csv.DictReader(io.StringIO(ws.export_text(SYSTEM, 1, "csv"))))
    assert sorted(r["justification"] for r in table) == sorted("'" + a for a in attacks)
    assert {r["safety_note"] for r in table} == {"'\tcmd"}
    assert {r["coherence_style"] for r in table} == {"4"}  # numbers are left alone
    ws.close()


def test_the_command_line_maps_annotators_and_lists_every_problem(tmp_path, capsys, shared_data):
    from mindeval.cli import main

    db = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    rows = _rows(shared_data / "human_annotations.jsonl")[:2]
    first_user = rows[0]["criterion_1.responses.users"][0]
    path = _write(tmp_path / "two.jsonl", rows)
    assert main(["app", "admin", *db, "add-annotator", "Dr Rivera"]) == 0
    assert main(["app", "admin", *db, "create-study", "S"]) == 0
    capsys.readouterr()
    assert main(["app", "admin", *db, "import", "S", str(path), "--map-annotator", f"{first_user}=dr rivera"]) == 0
    out = capsys.readouterr().out
    assert "2 items linked to the study (2 new" in out and "3 imported annotators" in out
    ws = Workspace(db[1])
    assert {p.name: p.total for p in ws.my_studies(ws.sign_in("Dr Rivera", ws.reset_code(SYSTEM, "Dr Rivera")).viewer)} \
        == {"S": 2}
    ws.close()
    assert main(["app", "admin", *db, "import", "S", str(path), "--map-annotator", "no-equals-sign"]) == 2
    assert "expected FILE_ID=NAME" in capsys.readouterr().err

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{oops\n{"id": "x", "model": "m/x", "member_attributes": {"name": "A"}, "messages": "hi"}\n')
    assert main(["app", "admin", *db, "import", "S", str(bad), "--kind", "interactions"]) == 2
    err = capsys.readouterr().err
    assert "2 problems, nothing was imported" in err and f"{bad}:1: malformed JSON" in err \
        and f"{bad}:2:messages:" in err and "Traceback" not in err


def test_a_changed_profile_is_a_new_profile_not_a_skipped_one(demo_profiles_path, tmp_path):
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "P", "roleplay", clinician_model="fake/echo")
    n = len(_rows(demo_profiles_path))
    assert ws.import_path(SYSTEM, "P", demo_profiles_path).profiles_added == n
    assert ws.import_path(SYSTEM, "P", demo_profiles_path).skipped == n
    changed = _rows(demo_profiles_path)
    changed[0]["member_narrative"] += " A different life."
    rep = ws.import_path(SYSTEM, "P", _write(tmp_path / "changed.jsonl", changed))
    assert (rep.profiles_added, rep.skipped) == (1, n - 1)
    assert ws.study(SYSTEM, "P").n_items == n + 1
    ws.close()
