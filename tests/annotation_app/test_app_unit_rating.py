"""Rating at the judge's unit (AppTest and the store): a target's questions with their branches,
gates and "not relevant"; every clinician reply with its level and flags; versioned saves;
submission, export, read-back and import in the judge's shapes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from appkit import (
    DEMO_CODE,
    ROOT,
    SYSTEM,
    component_send,
    form_send,
    make_workspace,
    rating_form,
    sign_in,
    viewer,
)
from unitkit import BY_HAND, NA, PATH

from annotation_app.demo import QUESTION_STUDY, REPLY_STUDY
from annotation_app.services import DB_ENV, MindEvalError, Stale, Workspace
from annotation_app.store.read import read_ratings
from mindeval.judging.reply_format import answer_label
from mindeval.records import ReplyRating


@pytest.fixture
def unit_ws(tmp_db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    monkeypatch.setenv(DB_ENV, tmp_db_url)
    ws = make_workspace(tmp_db_url, unit_studies=True)
    yield ws
    ws.close()


def questions_on_page(at) -> list[str]:
    """The questions the rating form shows, in order."""
    return [a["id"][2:] for a in rating_form(at)[1]["axes"] if a["id"].startswith("q-")]


def answer(at, qid: str, value: str):
    """Answer ``qid`` on the form as the browser does (by its label)."""
    form_send(at, {f"q-{qid}": answer_label(value)})
    assert not at.exception, at.exception
    return at


def headings(at) -> str:
    """The form's headings (each dimension with the level its answers give), one text."""
    return " ".join(a["heading"] for a in rating_form(at)[1]["axes"])


def submit(at, justification: str):
    """Write the justification and press Submit on the form."""
    form_send(at, texts={"justification": justification})
    form_send(at, submit=True)
    assert not at.exception, at.exception


def open_study(at, name: str, ws: Workspace):
    sid = ws.study(SYSTEM, name).id
    at.button(key=f"open_{sid}").click().run()
    assert not at.exception, at.exception
    return at


def test_the_questions_appear_as_the_answers_reach_them_and_the_levels_follow(unit_ws):
    at = open_study(sign_in("demo", DEMO_CODE), QUESTION_STUDY, unit_ws)
    aid = at.session_state["assignment_id"]
    assert questions_on_page(at) == ["n_cue_present"]  # nothing else before the gate is answered
    for qid, a in PATH.items():
        assert questions_on_page(at)[-1] == qid  # the next question the walk reaches, nothing beyond
        answer(at, qid, a)
    shown = questions_on_page(at)
    assert "h_emergency" not in shown and "h_means" not in shown  # the branch h_urgent: no skipped them
    assert shown == list(PATH)
    v = viewer(unit_ws, "demo", DEMO_CODE)
    item = unit_ws.item(v, aid)
    assert item.answers == PATH and item.values == BY_HAND
    submit(at, "Asked, but never about reasons for living.")
    assert any("Rating submitted" in s.value for s in at.success), [w.value for w in at.warning]
    row = json.loads(unit_ws.export_text(SYSTEM, QUESTION_STUDY, "jsonl").splitlines()[0])
    assert row["answers"] == PATH and row["values"] == BY_HAND and "replies" not in row
    got = read_ratings(unit_ws.db.url, QUESTION_STUDY).ratings[0]
    assert got.answers == PATH and got.replies is None


def test_a_gate_makes_later_dimensions_not_relevant_and_a_changed_answer_drops_what_it_no_longer_reaches(unit_ws):
    at = open_study(sign_in("demo", DEMO_CODE), QUESTION_STUDY, unit_ws)
    aid = at.session_state["assignment_id"]
    for qid in ("n_cue_present", "n_cue_direct", "n_acknowledged"):
        answer(at, qid, "yes")
    answer(at, "n_cue_present", "no")  # the gate: no sign of risk
    assert questions_on_page(at) == ["n_cue_present", "c_method_info"]
    for qid in ("c_method_info", "c_encourage", "c_secrecy", "c_sensational", "c_false_claims"):
        answer(at, qid, "yes" if qid == "c_sensational" else "no")
    v = viewer(unit_ws, "demo", DEMO_CODE)
    item = unit_ws.item(v, aid)
    assert item.answers["n_cue_direct"] == "yes"  # the draft keeps it (answering yes again brings it back)
    assert item.values == {"noticing_risk": NA, "asking_about_risk": NA, "connecting_to_help": NA, "safe_content": 1}
    text = headings(at)
    assert text.count("level: not relevant") == 3 and "level: Suboptimal" in text
    unit_ws.save_text(v, aid, justification="No sign of risk.")
    unit_ws.submit(v, aid)
    got = read_ratings(unit_ws.db.url, QUESTION_STUDY).ratings[0]
    assert got.answers == {"n_cue_present": "no", "c_method_info": "no", "c_encourage": "no", "c_secrecy": "no",
                           "c_sensational": "yes", "c_false_claims": "no"}  # only what the walk reached


def test_a_level_that_follows_from_answers_is_never_chosen_directly_and_saves_are_versioned(unit_ws):
    v = viewer(unit_ws, "demo", DEMO_CODE)
    sid = unit_ws.study(SYSTEM, QUESTION_STUDY).id
    aid = unit_ws.queue(v, sid)[0].assignment_id
    with pytest.raises(MindEvalError, match="follows from the answers"):
        unit_ws.save_value(v, aid, "noticing_risk", 2)
    with pytest.raises(MindEvalError, match="not an answer of n_cue_present"):
        unit_ws.save_answer(v, aid, "n_cue_present", "maybe")
    first = unit_ws.save_answer(v, aid, "n_cue_present", "yes")
    unit_ws.save_answer(v, aid, "n_cue_direct", "no", version=first)  # the other tab
    with pytest.raises(Stale):  # this tab still shows version `first`
        unit_ws.save_answer(v, aid, "n_cue_present", "no", version=first)
    assert unit_ws.item(v, aid).answers == {"n_cue_present": "yes", "n_cue_direct": "no"}
    with pytest.raises(MindEvalError, match="answer the questions of 'Noticing risk'"):
        unit_ws.save_text(v, aid, justification="x")
        unit_ws.submit(v, aid)


def _level_field(at) -> str:
    """The field of the reply level the form shows (``r<turn>-level``)."""
    return next(a["id"] for a in rating_form(at)[1]["axes"] if a["id"].endswith("-level"))


def _level(at, ws: Workspace, level: str) -> None:
    """Choose the reply's level ``level`` (an id) on the form, as its label."""
    g = ws.guidelines(ws.item(viewer(ws, "demo", DEMO_CODE), at.session_state["assignment_id"]).study_id)
    form_send(at, {_level_field(at): next(lv.label for lv in g.levels if lv.id == level)})


def _next_reply(at) -> None:
    """The form's reply bar ▶: a step to the next reply, carrying the form's state."""
    _, data = rating_form(at)
    at._form_seq = getattr(at, "_form_seq", 0) + 1
    component_send(at, "mindeval_rate", "step", {
        "tab": "apptest", "seq": at._form_seq, "item": data["item"], "values": data["stored"],
        "texts": data["texts"], "reply": data["reply"]["pos"] + 1}, trigger=True)


def test_every_reply_is_rated_beside_the_transcript_up_to_it(unit_ws):
    at = open_study(sign_in("demo", DEMO_CODE), REPLY_STUDY, unit_ws)
    aid = at.session_state["assignment_id"]
    v = viewer(unit_ws, "demo", DEMO_CODE)
    messages = unit_ws.item(v, aid).messages
    turns = [i for i, m in enumerate(messages) if m.role == "clinician"]
    want = []
    for n, turn in enumerate(turns):
        cards = [m.value for m in at.markdown if " · turn " in m.value]
        assert cards and f"· turn {turn + 1} " in cards[-1] and len(cards) == turn + 1  # nothing after this reply
        assert _level_field(at) == f"r{turn}-level"
        level = "major" if n == 1 else "no_concern"
        _level(at, unit_ws, level)
        if n == 1:
            form_send(at, {f"r{turn}-f-dismissive": "yes"})
        want.append(ReplyRating(turn=turn, level=level, flags={f: (n == 1 and f == "dismissive") for f in (
            "missed_risk_cue", "unsafe_advice", "claims_human", "diagnosis_overreach", "dismissive",
            "wrong_crisis_info", "unfitting_length", "boundary_slip")}))
        if n < len(turns) - 1:
            _next_reply(at)
        assert not at.exception, at.exception
    assert unit_ws.item(v, aid).values == {"reply_severity": 1}  # the worst reply: major
    submit(at, "The second reply brushed the member off.")
    assert any("Rating submitted" in s.value for s in at.success), [w.value for w in at.warning]
    row = json.loads(unit_ws.export_text(SYSTEM, REPLY_STUDY, "jsonl").splitlines()[0])
    assert [ReplyRating.model_validate(r) for r in row["replies"]] == want and "answers" not in row
    assert read_ratings(unit_ws.db.url, REPLY_STUDY).ratings[0].replies == want


def test_submit_says_which_replies_are_not_rated_and_a_user_turn_is_refused(unit_ws):
    at = open_study(sign_in("demo", DEMO_CODE), REPLY_STUDY, unit_ws)
    aid = at.session_state["assignment_id"]
    _level(at, unit_ws, "minor")
    submit(at, "Partly done.")
    warning = " ".join(w.value for w in at.warning)
    assert "rate every clinician reply (3 of 4 not rated yet: reply 2, 3, 4)" in warning
    v = viewer(unit_ws, "demo", DEMO_CODE)
    with pytest.raises(MindEvalError, match="turn 0 is not a clinician reply"):
        unit_ws.save_reply(v, aid, 0, level="minor")
    with pytest.raises(MindEvalError, match="not an issue flag"):
        unit_ws.save_reply(v, aid, 1, flag="rude", on=True)


def _rate_all(ws: Workspace, v, study: str) -> None:
    """Submit a complete rating of the first transcript of ``study`` through the service layer."""
    aid = ws.queue(v, ws.study(SYSTEM, study).id)[0].assignment_id
    if study == QUESTION_STUDY:
        for qid, a in PATH.items():
            ws.save_answer(v, aid, qid, a)
    else:
        for n, t in enumerate([i for i, m in enumerate(ws.item(v, aid).messages) if m.role == "clinician"]):
            ws.save_reply(v, aid, t, level="critical" if n == 2 else "minor")
            ws.save_reply(v, aid, t, flag="missed_risk_cue", on=n == 2)
    ws.save_text(v, aid, justification="Imported and exported alike.")
    ws.submit(v, aid)


def test_ratings_at_the_unit_import_as_they_were_exported(unit_ws, tmp_path):
    v = viewer(unit_ws, "demo", DEMO_CODE)
    for study in (QUESTION_STUDY, REPLY_STUDY):
        _rate_all(unit_ws, v, study)
        path = tmp_path / f"{study[:10]}.jsonl"
        path.write_text(unit_ws.export_text(SYSTEM, study, "jsonl"), encoding="utf-8")
        target = unit_ws.study(SYSTEM, study).target
        copy = f"{study} (copy)"
        unit_ws.create_study(SYSTEM, copy, "rating", target=target)
        unit_ws.import_path(SYSTEM, copy, ROOT / "data" / "demo_transcripts.jsonl")
        report = unit_ws.import_path(SYSTEM, copy, path)
        assert (report.kind, report.ratings_added) == ("ratings", 1)
        assert unit_ws.import_path(SYSTEM, copy, path).ratings_unchanged == 1  # again: a no-op
        a, b = read_ratings(unit_ws.db.url, study).ratings[0], read_ratings(unit_ws.db.url, copy).ratings[0]
        assert (a.values, a.answers, a.replies) == (b.values, b.answers, b.replies)
        assert (b.answers or b.replies) and b.annotator == "demo (imported)"


def test_a_bad_ratings_row_is_named_by_file_line_and_field_and_nothing_is_imported(unit_ws, tmp_path):
    v = viewer(unit_ws, "demo", DEMO_CODE)
    _rate_all(unit_ws, v, REPLY_STUDY)
    _rate_all(unit_ws, v, QUESTION_STUDY)
    good_r = json.loads(unit_ws.export_text(SYSTEM, REPLY_STUDY, "jsonl"))
    good_q = json.loads(unit_ws.export_text(SYSTEM, QUESTION_STUDY, "jsonl"))
    cases = [
        (REPLY_STUDY, good_r | {"replies": [{**good_r["replies"][0], "turn": 0}] + good_r["replies"][1:]},
         "replies.0.turn: turn 0 is not a clinician reply"),
        (REPLY_STUDY, good_r | {"replies": good_r["replies"][:2]}, "replies: rate every clinician reply"),
        (REPLY_STUDY, good_r | {"values": {"reply_severity": 2}}, "values.reply_severity: 2 does not follow"),
        (QUESTION_STUDY, good_q | {"answers": {**good_q["answers"], "a_now": "maybe"}}, "answers.a_now: 'maybe'"),
        (QUESTION_STUDY, good_q | {"answers": {"n_cue_present": "yes"}}, "answers: answer the questions of"),
    ]
    for n, (study, row, message) in enumerate(cases):
        copy = f"bad {n}"
        unit_ws.create_study(SYSTEM, copy, "rating", target=unit_ws.study(SYSTEM, study).target)
        unit_ws.import_path(SYSTEM, copy, ROOT / "data" / "demo_transcripts.jsonl")
        path = tmp_path / f"bad{n}.jsonl"
        path.write_text(json.dumps(good_r if study == REPLY_STUDY else good_q) + "\n" + json.dumps(row) + "\n")
        with pytest.raises(MindEvalError) as exc:
            unit_ws.import_path(SYSTEM, copy, path)
        assert f"{path}:2:{message}" in str(exc.value), str(exc.value)
        assert read_ratings(unit_ws.db.url, copy).ratings == []  # the good first line is not imported either
