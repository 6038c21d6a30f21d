"""Studies of another target: migration 0005, the categorical rating form, results, exports, imports."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from appkit import (
    CATEGORICAL_TARGET,
    DEMO_CODE,
    ROOT,
    TARGET_STUDY,
    TOY_TARGET,
    add_target_study,
    form_fields,
    form_send,
    rating_form,
    sign_in,
    viewer,
)
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import IntegrityError

from annotation_app.services import SYSTEM, MindEvalError, Workspace
from annotation_app.store.migrations import (
    current_revision,
    downgrade,
    head_revision,
    upgrade,
)
from mindeval.cli import main
from mindeval.targets import load_target

NOW = "2026-01-02 03:04:05"
LEVELS = ["Best practice", "Suboptimal", "Potential for harm"]


# ------------------------------------------------------------------ migration 0005


def _seed_0004(url: str) -> None:
    """A database at revision 0004 with one submitted MindEval rating (one sub-axis N/A = 0)."""
    eng = create_engine(url)
    upgrade(eng, "0004")
    stmts = [
        "INSERT INTO ann_annotators (id, name, name_key, code_hash, is_admin, active, origin, created_at) "
        "VALUES (1, 'old-rater', 'old-rater', NULL, false, false, 'import', :t)",
        "INSERT INTO ann_studies (id, name, kind, description, k, seed, guidelines_version, created_at) "
        "VALUES (1, 'old study', 'rating', '', 1, 0, '1.0.0', :t)",
        "INSERT INTO ann_items (id, external_id, source, source_ref, member_attributes, messages, clinician_model, "
        "patient_kind, meta, created_at) VALUES (1, 'run:x:1', 'run', 'p', '{}', '[]', 'vendor/model', 'model', "
        "'{}', :t)",
        "INSERT INTO ann_assignments (id, study_id, item_id, annotator_id, position, created_at) "
        "VALUES (1, 1, 1, 1, 0, :t)",
        "INSERT INTO ann_ratings (id, assignment_id, state, revision, version, justification, extra, created_at, "
        "updated_at) VALUES (1, 1, 'draft', 0, 0, '', '{}', :t, :t)",
        "INSERT INTO ann_rating_values (rating_id, subaxis, value) VALUES (1, 'coherence_style', 2)",
        "INSERT INTO ann_rating_values (rating_id, subaxis, value) VALUES (1, 'respect_inclusion', 0)",
    ]
    with eng.begin() as c:
        for sql in stmts:
            c.execute(text(sql), {"t": NOW})
    eng.dispose()


def _insert_value(url: str, subaxis: str, value: int) -> None:
    eng = create_engine(url)
    try:
        with eng.begin() as c:
            c.execute(text("INSERT INTO ann_rating_values (rating_id, subaxis, value) VALUES (1, :s, :v)"),
                      {"s": subaxis, "v": value})
    finally:
        eng.dispose()


def test_migration_0005_gives_studies_a_target_and_follows_the_scale_both_ways(any_db_url):
    _seed_0004(any_db_url)
    with pytest.raises(IntegrityError):  # before: values outside 0-6 are refused by the database
        _insert_value(any_db_url, "na_below_the_levels", -1)

    ws = Workspace(any_db_url)  # upgrades to head on open
    assert current_revision(ws.db.engine) == head_revision()
    info = ws.study(SYSTEM, "old study")
    assert info.target == "mindeval" and ws.guidelines("old study").scale_kind == "ordinal"
    with ws.db.engine.connect() as c:
        assert sorted(c.execute(text("SELECT subaxis, value FROM ann_rating_values")).all()) == [
            ("coherence_style", 2), ("respect_inclusion", 0)]
    ws.close()
    _insert_value(any_db_url, "na_below_the_levels", -1)  # a categorical target's N/A can be stored

    eng = create_engine(any_db_url)
    with eng.begin() as c:
        c.execute(text("DELETE FROM ann_rating_values WHERE value < 0"))
    downgrade(eng, "0004")
    assert current_revision(eng) == "0004"
    assert "target" not in {col["name"] for col in inspect(eng).get_columns("ann_studies")}
    eng.dispose()
    with pytest.raises(IntegrityError):  # the range check is back
        _insert_value(any_db_url, "seven", 7)


# ------------------------------------------------------------------ the rating form (AppTest)


def open_target_study(study_id: int):
    at = sign_in("demo", DEMO_CODE)
    at.button(key=f"open_{study_id}").click().run()
    assert not at.exception, at.exception
    return at


def test_a_categorical_item_is_rated_with_level_labels_and_stored_as_level_values(demo_ws):
    sid = add_target_study(demo_ws)
    g = demo_ws.guidelines(sid)
    assert g.scale_kind == "categorical" and g.harm_levels == (0,)
    at = open_target_study(sid)
    rs = form_fields(at)
    subs = {s.id: s for s in g.human_subaxes}
    assert set(rs) == set(subs) and len(rs) >= 2
    for sub_id, r in rs.items():  # every level by its label, N/A only where the form allows it
        assert r.options == LEVELS + (["N/A"] if subs[sub_id].allow_na else []), sub_id
    assert "1 = Best practice · 2 = Suboptimal · 3 = Potential for harm" in rating_form(at)[1]["legend"]

    aid = at.session_state["assignment_id"]
    na_ok = [s for s in subs.values() if s.allow_na]
    no_na = [s for s in subs.values() if not s.allow_na]
    assert na_ok and no_na
    want: dict[str, int] = {}
    for n, sub in enumerate(subs.values()):
        level = g.levels[n % len(g.levels)]
        form_fields(at)[sub.id].set_value(level.label).run()
        want[sub.id] = level.value
    form_fields(at)[na_ok[0].id].set_value("N/A").run()
    na = demo_ws.item(viewer(demo_ws, "demo", DEMO_CODE), aid).scale.na_value
    assert na not in g.score_values()  # 0 is a level here, so N/A is stored apart from it
    want[na_ok[0].id] = na
    form_send(at, texts={"justification": "Missed the goodbye."})
    form_send(at, submit=True)
    assert not at.exception, at.exception
    assert "Rating submitted" in " ".join(s.value for s in at.success)

    v = viewer(demo_ws, "demo", DEMO_CODE)
    item = demo_ws.item(v, aid)
    assert item.state == "submitted" and item.values == want
    assert item.history[-1].values == want
    # the service refuses what the form does not offer
    second = demo_ws.queue(v, sid)[1].assignment_id
    with pytest.raises(MindEvalError, match="cannot be marked not applicable"):
        demo_ws.save_value(v, second, no_na[0].id, na)
    for bad in (3, 6, na - 1):
        with pytest.raises(MindEvalError, match="Potential for harm"):
            demo_ws.save_value(v, second, no_na[0].id, bad)
    demo_ws.save_value(v, second, no_na[0].id, 0)
    assert demo_ws.item(v, second).values == {no_na[0].id: 0}
    # the MindEval study beside it keeps its 1-6 form with 0 as N/A
    assert demo_ws.item(v, demo_ws.queue(v, 1)[0].assignment_id).scale.na_value == 0


def _rate(ws: Workspace, study_id: int, values: dict[str, int], n: int = 0) -> None:
    v = viewer(ws, "demo", DEMO_CODE)
    aid = ws.queue(v, study_id)[n].assignment_id
    for sub, value in values.items():
        ws.save_value(v, aid, sub, value)
    ws.save_text(v, aid, justification=f"rating {n}")
    ws.submit(v, aid)


def test_results_and_exports_follow_the_target(demo_ws):
    sid = add_target_study(demo_ws)
    g = demo_ws.guidelines(sid)
    subs = [s.id for s in g.human_subaxes]
    na_sub = next(s.id for s in g.human_subaxes if s.allow_na)
    na = demo_ws.item(viewer(demo_ws, "demo", DEMO_CODE), demo_ws.queue(viewer(demo_ws, "demo", DEMO_CODE), sid)[0]
                      .assignment_id).scale.na_value
    _rate(demo_ws, sid, {s: 2 for s in subs} | {na_sub: na}, 0)
    _rate(demo_ws, sid, {s: 1 for s in subs} | {subs[0]: 0}, 1)

    rows = list(csv.DictReader(io.StringIO(demo_ws.export_text(SYSTEM, sid, "csv"))))
    assert len(rows) == 2
    heads = list(rows[0])
    for s in subs:  # a value column per dimension with its level's label beside it
        assert heads[heads.index(s) + 1] == f"{s}_level"
    first, second = sorted(rows, key=lambda r: r["justification"])
    assert (first[na_sub], first[f"{na_sub}_level"]) == ("NA", "")
    assert (second[subs[0]], second[f"{subs[0]}_level"]) == ("0", "Potential for harm")
    assert {first[f"{s}_level"] for s in subs if s != na_sub} == {"Best practice"}

    lines = [json.loads(x) for x in demo_ws.export_text(SYSTEM, sid, "jsonl").splitlines()]
    assert {x["target"] for x in lines} == {demo_ws.study_target(sid).name} != {"mindeval"}
    harmed = next(x for x in lines if x["justification"] == "rating 1")
    assert harmed["values"][subs[0]] == 0 and harmed["levels"][subs[0]] == "Potential for harm"
    with pytest.raises(MindEvalError, match="authors' schema holds MindEval's form"):
        demo_ws.export_text(SYSTEM, sid, "authors")
    mindeval_csv = demo_ws.export_text(SYSTEM, 1, "csv").splitlines()[0]
    assert "_level" not in mindeval_csv and "coherence_style" in mindeval_csv

    res = demo_ws.results(SYSTEM, sid)
    assert (res.harm.n, res.harm.k, res.harm.share) == (2, 1, 0.5)
    lo, hi = res.harm.ci95
    assert 0.09 < lo < 0.1 and 0.9 < hi < 0.91  # Wilson 95% for 1 of 2
    assert res.level_counts[subs[0]] == {"Best practice": 1, "Suboptimal": 0, "Potential for harm": 1}
    assert res.level_counts[na_sub] == {"Best practice": 0, "Suboptimal": 1, "Potential for harm": 0}  # N/A left out
    assert res.subaxis_means[na_sub] == 1.0 and res.axis_means[g.judge_axes[0].code] == 1.0
    assert res.agreement is None and "metaeval compare" in res.agreement_note

    from annotation_app.store import read_ratings  # what metaeval compare reads

    got = read_ratings(demo_ws.db.engine.url.render_as_string(hide_password=False), sid)
    assert (got.target, got.na_value) == (demo_ws.study(SYSTEM, sid).target, na)
    assert sorted(r.values[subs[0]] for r in got.ratings) == [0, 2]  # 0 is the harm level, not "missing"


# ------------------------------------------------------------------ imports and the command line


def _run_dir(tmp_path, name: str, target: str | Path | None):
    """A minimal run directory (one interaction) made with ``target`` (``None``: MindEval)."""
    run = tmp_path / name
    run.mkdir()
    msgs = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi"}]
    row = {"id": f"{name}-0", "run_id": name, "profile_id": "kim-1", "model": "x/clin",
           "member_attributes": {"name": "Kim"}, "status": "complete", "messages": msgs}
    (run / "interactions.jsonl").write_text(json.dumps(row) + "\n")
    config = {"target": load_target(target).info()} if target else {}
    (run / "config.json").write_text(json.dumps({"run_id": name, "config": config}))
    return run


def test_a_run_directory_of_another_target_is_refused(tmp_path):
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "M", "rating")
    ws.create_study(SYSTEM, "T", "rating", target=TOY_TARGET)
    toy_run = _run_dir(tmp_path, "toyrun", TOY_TARGET)
    mindeval_run = _run_dir(tmp_path, "merun", None)
    with pytest.raises(MindEvalError, match="this run is of target 'toy' but study 'M' rates target 'mindeval'"):
        ws.import_path(SYSTEM, "M", toy_run)
    with pytest.raises(MindEvalError, match="this run is of target 'mindeval' but study 'T' rates target 'toy'"):
        ws.import_path(SYSTEM, "T", mindeval_run)
    with pytest.raises(MindEvalError, match="this run is of target 'toy'"):  # its interactions file alike
        ws.import_path(SYSTEM, "M", toy_run / "interactions.jsonl")
    assert ws.import_path(SYSTEM, "T", toy_run).items_added == 1
    assert ws.import_path(SYSTEM, "M", mindeval_run).items_added == 1
    assert (ws.study(SYSTEM, "M").n_items, ws.study(SYSTEM, "T").n_items) == (1, 1)
    ws.close()


def test_a_run_of_another_version_of_the_studys_target_is_refused_in_one_line(tmp_path, capsys):
    """Same name, other files: compared by the target's hash, as the leaderboard compares runs."""
    edited = tmp_path / "toy-edited"
    shutil.copytree(TOY_TARGET, edited)
    judge = edited / "prompts" / "judge.txt"
    judge.write_text(judge.read_text(encoding="utf-8") + "\nBe brief.\n", encoding="utf-8")
    assert load_target(edited).name == "toy" and load_target(edited).sha256 != load_target(TOY_TARGET).sha256
    old_run, new_run = _run_dir(tmp_path, "oldrun", TOY_TARGET), _run_dir(tmp_path, "newrun", edited)
    url = f"sqlite:///{tmp_path / 'v.db'}"
    ws = Workspace(url)
    ws.create_study(SYSTEM, "T", "rating", target=edited)
    for source in (old_run, old_run / "interactions.jsonl"):
        with pytest.raises(MindEvalError, match=r"this run was made with target toy 0\.1\.0 \([0-9a-f]{12}\) but "
                                                r"study 'T' rates toy 0\.1\.0 \([0-9a-f]{12}\): another version"):
            ws.import_path(SYSTEM, "T", source)
    assert ws.study(SYSTEM, "T").n_items == 0
    assert ws.import_path(SYSTEM, "T", new_run).items_added == 1  # the study's own version is accepted
    ws.close()

    assert main(["app", "admin", "--db", url, "import", "T", str(old_run)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "another version of the target" in err and "Traceback" not in err


def test_create_study_takes_a_target_by_path_and_refuses_an_unknown_one(tmp_path, capsys):
    db = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    assert main(["app", "admin", *db, "create-study", "Safety", "--target", str(TOY_TARGET)]) == 0
    out = capsys.readouterr().out
    assert f"target {TOY_TARGET.resolve()}" in out
    assert main(["app", "admin", *db, "create-study", "Nope", "--target", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "no target" in err and "Traceback" not in err
    assert main(["app", "admin", *db, "import", "Safety", str(ROOT / "data" / "demo_transcripts.jsonl")]) == 0
    assert main(["app", "admin", *db, "list"]) == 0
    listing = capsys.readouterr().out
    assert f"target={TOY_TARGET.resolve()}" in listing and "Nope" not in listing
    ws = Workspace(db[1])
    assert [s.id for s in ws.subaxes("Safety")] == [s.id for s in ws.guidelines("Safety").human_subaxes]
    ws.close()


def test_roleplay_of_a_target_uses_its_clinician_prompt_and_its_sessions_stay_with_the_target(tmp_path):
    from annotation_app.roleplay import clinician_template
    from annotation_app.store.tables import StudyRow

    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.create_study(SYSTEM, "Play", "roleplay", clinician_model="fake/echo", target=TOY_TARGET)
    ws.create_study(SYSTEM, "PlayM", "roleplay", clinician_model="fake/echo")
    ws.create_study(SYSTEM, "RateM", "rating")
    with ws.db.read() as s:
        play = s.query(StudyRow).filter_by(name="Play").one()
        play_m = s.query(StudyRow).filter_by(name="PlayM").one()
    assert clinician_template(play).sha256 == load_target(TOY_TARGET).template("clinician").sha256
    assert clinician_template(play_m).ref.startswith("clinician/default")
    assert clinician_template(play).sha256 != clinician_template(play_m).sha256
    with pytest.raises(MindEvalError, match="same target"):
        ws.add_roleplay_items(SYSTEM, "RateM", "Play")
    assert ws.add_roleplay_items(SYSTEM, "RateM", "PlayM") == 0

    # a session of the target's study: played, finished, rated in a rating study of the same target
    from mindeval.store.tables import RunRow

    ws.add_annotator(SYSTEM, "demo", code=DEMO_CODE)
    ws.add_annotator(SYSTEM, "rater", code="RATER-CODE-0001")
    ws.import_path(SYSTEM, "Play", TOY_TARGET / "profiles.jsonl")
    ws.assign(SYSTEM, "Play", annotators=["demo"])
    v = viewer(ws, "demo", DEMO_CODE)
    sess = ws.sessions(v, play.id)[0].session_id
    ws.start_session(v, sess)
    ws.send_message(v, sess, "I have not slept in days.")
    ws.finish_session(v, sess)
    with ws.db.read() as s:
        prompt = s.query(RunRow).one().config_json["prompt"]
    assert prompt["sha256"] == load_target(TOY_TARGET).template("clinician").sha256
    rate = ws.create_study(SYSTEM, "RateT", "rating", target=TOY_TARGET).id
    assert ws.add_roleplay_items(SYSTEM, "RateT", "Play") == 1
    ws.assign(SYSTEM, "RateT", annotators=["rater"])
    r = viewer(ws, "rater", "RATER-CODE-0001")
    item = ws.item(r, ws.queue(r, rate)[0].assignment_id)
    assert item.scale.kind == "categorical" and item.messages[0].content == "I have not slept in days."
    ws.close()


def test_the_admin_pages_follow_the_target(demo_ws):
    at = sign_in("admin", "ADMIN-CODE-1234")
    at.switch_page("views/admin_studies.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="create_target").options == ["mindeval", "checkins", "crisis", "reply_safety", "risk_checklist"]
    sid = add_target_study(demo_ws)
    at.run()
    table = at.dataframe[0].value
    assert set(table["Target"]) == {"mindeval", demo_ws.study(SYSTEM, sid).target}
    assert TARGET_STUDY in set(table["Study"])

    g = demo_ws.guidelines(sid)
    first = g.human_subaxes[0].id
    _rate(demo_ws, sid, {s.id: 1 for s in g.human_subaxes} | {first: 0})
    at.switch_page("views/admin_results.py").run()
    at.selectbox(key="results_study").set_value(TARGET_STUDY).run()
    assert not at.exception, at.exception
    assert at.metric[0].value == "100%"  # the one rating has a harm level
    subs = at.dataframe[-1].value
    assert list(subs["Sub-axis"]) == [s.name for s in g.human_subaxes]
    assert list(subs["Potential for harm"]) == [1] + [0] * (len(g.human_subaxes) - 1)

    at.switch_page("views/admin_export.py").run()
    at.selectbox(key="export_study").set_value(TARGET_STUDY).run()
    assert not at.exception, at.exception
    assert at.radio(key="export_fmt").options == ["Ratings, CSV (one row per rating)", "Ratings, JSONL",
                                                  "Skipped and flagged items, JSONL (with reasons)"]


def test_a_run_of_the_target_is_imported_with_its_judge_scores_and_rated_on_its_form(tmp_path):
    out = tmp_path / "run"
    target = str(CATEGORICAL_TARGET)
    fake = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--quiet"]
    assert main(["run", *fake, "--target", target, "--limit", "2", "--turns", "2", "--out", str(out)]) == 0
    ws = Workspace(f"sqlite:///{tmp_path / 'x.db'}")
    ws.add_annotator(SYSTEM, "demo", code=DEMO_CODE)
    ws.create_study(SYSTEM, "MindEval", "rating")
    with pytest.raises(MindEvalError, match="study 'MindEval' rates target 'mindeval'"):
        ws.import_path(SYSTEM, "MindEval", out)
    sid = ws.create_study(SYSTEM, "Safety", "rating", target=target).id
    rep = ws.import_path(SYSTEM, "Safety", out)
    assert (rep.kind, rep.items_added) == ("run", 2)
    with ws.db.read() as s:
        from annotation_app.store import ItemRow

        judged = [j["scores"] for item in s.query(ItemRow).all() for j in item.meta["judgments"]]
    g = ws.guidelines(sid)
    assert judged and all(set(sc) == set(g.axis_codes) and set(sc.values()) - {None} <= set(g.score_values()) for sc in judged)
    ws.assign(SYSTEM, "Safety")
    v = viewer(ws, "demo", DEMO_CODE)
    aid = ws.queue(v, sid)[0].assignment_id
    item = ws.item(v, aid)
    assert [s.id for s in item.subaxes] == [s.id for s in g.human_subaxes]
    assert item.messages and "fake" not in item.model_dump_json().lower()  # blinded: no model names
    for sub in g.human_subaxes:
        ws.save_value(v, aid, sub.id, g.levels[-1].value)
    ws.save_text(v, aid, justification="Missed every cue.")
    assert ws.submit(v, aid) == 1
    assert ws.results(SYSTEM, sid).harm.k == 1
    ws.close()


def test_an_item_rubric_target_is_rated_by_its_questions_and_admins_see_the_judge_answers(demo_ws, tmp_path):
    from tests.support.items import RISK_CHECKLIST, answers, scripted_run

    run = scripted_run(tmp_path / "run", "app-items", ["none", "bad", "good", "good", "good", "good"])
    sid = demo_ws.create_study(SYSTEM, "Checklist", "rating", target=RISK_CHECKLIST).id
    assert demo_ws.import_path(SYSTEM, "Checklist", run).items_added == 6
    demo_ws.assign(SYSTEM, "Checklist", annotators=["demo"])
    g = demo_ws.guidelines(sid)
    at = open_target_study(sid)
    rs = form_fields(at)
    # rated at the judge's unit: the questions as the answers reach them (test_app_unit_rating.py)
    assert sorted(rs) == ["q-n_cue_present"] and rs["q-n_cue_present"].options == ["Yes", "No"]
    with pytest.raises(MindEvalError, match="admin"):
        demo_ws.judge_answers(viewer(demo_ws, "demo", DEMO_CODE), sid)

    admin = sign_in("admin", "ADMIN-CODE-1234")
    admin.switch_page("views/admin_results.py").run()
    admin.selectbox(key="results_study").set_value("Checklist").run()
    assert not admin.exception, admin.exception
    assert "Judge answers (item-level rubric)" in [h.value for h in admin.subheader]
    items = admin.selectbox(key="answers_item").options
    assert len(items) == 6
    bad_item = next(i for i in items if "walter" in i)  # the second profile: answered "bad"
    admin.selectbox(key="answers_item").set_value(bad_item).run()
    table = admin.dataframe[1].value
    assert len(table) == sum(len(a.questions) for a in g.judge_axes) == 28
    ask = table[table["Dimension"] == "ASK"].set_index("Question")
    assert set(ask["Level"]) == {"Potential for harm"}
    assert ask.loc["a_asked", "Answer"] == "no" and ask.loc["a_asked", "Severity"] == "potential_harm"
    # answered yes, but off the path after a_asked = no: shown, fires nothing
    assert ask.loc["a_method_detail", "Answer"] == answers("bad")["a_method_detail"] == "yes"
    assert not ask.loc["a_method_detail", "On path"] and ask.loc["a_method_detail", "Severity"] == ""
    none_item = next(i for i in items if "priya" in i)
    admin.selectbox(key="answers_item").set_value(none_item).run()
    table = admin.dataframe[1].value
    assert set(table[table["Dimension"] == "NOTICE"]["Level"]) == {"not relevant"}
