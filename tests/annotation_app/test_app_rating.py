"""AppTest: rate mode — N/A rules, autosave, submit, resume and revise with history."""

from __future__ import annotations

import pytest
from appkit import (
    DEMO_CODE,
    all_text,
    component,
    component_send,
    form_fields,
    form_send,
    rating_form,
    sign_in,
    viewer,
)

from annotation_app.services import MindEvalError

NA_ALLOWED = {"respect_inclusion", "alliance_maintenance"}


def open_rating(at):
    at.button(key="open_1").click().run()
    assert not at.exception, at.exception
    return at


def fill_all(at, value: int = 4):
    for sub in list(form_fields(at)):
        form_fields(at)[sub].set_value(value).run()
    return at


def test_na_is_offered_only_where_the_guidelines_allow_it(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    rs = form_fields(at)
    assert len(rs) == 9
    for sub, r in rs.items():
        assert ("N/A" in r.options) == (sub in NA_ALLOWED), sub
        assert r.options[:6] == ["1", "2", "3", "4", "5", "6"]
    v = viewer(demo_ws, "demo", DEMO_CODE)
    aid = at.session_state["assignment_id"]
    with pytest.raises(MindEvalError, match="cannot be marked not applicable"):
        demo_ws.save_value(v, aid, "coherence_style", 0)
    demo_ws.save_value(v, aid, "respect_inclusion", 0)
    assert demo_ws.item(v, aid).values["respect_inclusion"] == 0


def test_choices_autosave_and_a_new_session_resumes_on_the_same_item(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    first = at.session_state["assignment_id"]
    at.button(key="next").click().run()  # move to the second transcript
    second = at.session_state["assignment_id"]
    assert second != first
    form_fields(at)["coherence_style"].set_value(2).run()
    form_fields(at)["respect_inclusion"].set_value("N/A").run()
    form_send(at, texts={"justification": "Too many lists."})
    assert "scores saved at" in rating_form(at)[1]["saved_text"]

    v = viewer(demo_ws, "demo", DEMO_CODE)
    stored = demo_ws.item(v, second)
    assert stored.values == {"coherence_style": 2, "respect_inclusion": 0}
    assert stored.justification == "Too many lists."

    again = open_rating(sign_in("demo", DEMO_CODE))  # e.g. after closing the tab
    assert again.session_state["assignment_id"] == second
    rs = form_fields(again)
    assert rs["coherence_style"].value == 2
    assert rs["respect_inclusion"].value == "N/A"
    assert rs["evidence_based_intervention"].value is None
    assert rating_form(again)[1]["texts"]["justification"] == "Too many lists."


def test_submit_requires_every_subaxis_and_a_justification(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    form_fields(at)["coherence_style"].set_value(3).run()
    form_send(at, submit=True)
    warning = " ".join(w.value for w in at.warning)
    assert "Evidence-Based Intervention Use" in warning and "justification" in warning
    v = viewer(demo_ws, "demo", DEMO_CODE)
    assert demo_ws.item(v, aid).state == "draft"

    fill_all(at, 5)
    form_send(at, texts={"justification": "Warm and focused."})
    form_send(at, submit=True)
    assert not at.exception
    assert any("Rating submitted" in s.value for s in at.success)
    assert demo_ws.item(v, aid).state == "submitted"
    assert at.session_state["assignment_id"] != aid  # moved on to the next transcript
    assert "1 of 6 transcripts submitted" in all_text(at)


def test_revise_keeps_the_history(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    fill_all(at, 4)
    form_send(at, texts={"justification": "First look."})
    form_send(at, submit=True)
    at.session_state["assignment_id"] = aid
    at.run()
    assert all(r.disabled for r in form_fields(at).values())  # a submitted rating is read-only
    at.button(key=f"revise_{aid}").click().run()
    rs = form_fields(at)
    assert not rs["coherence_style"].disabled
    rs["coherence_style"].set_value(1).run()
    form_send(at, submit=True)

    v = viewer(demo_ws, "demo", DEMO_CODE)
    item = demo_ws.item(v, aid)
    assert item.state == "submitted" and item.revision == 2
    assert [h.values["coherence_style"] for h in item.history] == [4, 1]
    assert [h.justification for h in item.history] == ["First look.", "First look."]
    at.session_state["assignment_id"] = aid
    at.run()
    assert "History (2 submissions)" in all_text(at)


def test_a_submitted_rating_cannot_change_without_revise(demo_ws):
    v = viewer(demo_ws, "demo", DEMO_CODE)
    aid = demo_ws.queue(v, 1)[0].assignment_id
    for sub in demo_ws.subaxes():
        demo_ws.save_value(v, aid, sub.id, 3)
    demo_ws.save_text(v, aid, justification="ok")
    demo_ws.submit(v, aid)
    with pytest.raises(MindEvalError, match="already submitted"):
        demo_ws.save_value(v, aid, "coherence_style", 6)
    with pytest.raises(MindEvalError, match="already submitted"):
        demo_ws.submit(v, aid)
    assert demo_ws.item(v, aid).values["coherence_style"] == 3


# ------------------------------------------------------------ versions, skip / flag, active time


def test_a_write_based_on_an_older_version_is_refused(any_db_url):
    """Two tabs of one annotator: the one that loaded before the other saved cannot revert it."""
    from appkit import make_workspace

    from annotation_app.services import Stale

    ws = make_workspace(any_db_url)
    try:
        v = viewer(ws, "demo", DEMO_CODE)
        aid = ws.queue(v, 1)[0].assignment_id
        base = ws.item(v, aid).version
        first = ws.save_value(v, aid, "coherence_style", 3, version=base)
        tab1 = tab2 = first  # both tabs show 3
        tab1 = ws.save_value(v, aid, "coherence_style", 5, version=tab1)
        with pytest.raises(Stale) as refused:  # tab 2 still shows 3 and saves another sub-axis
            ws.save_value(v, aid, "respect_inclusion", 4, version=tab2)
        assert refused.value.version == tab1
        with pytest.raises(Stale):
            ws.save_text(v, aid, justification="from the stale tab", version=tab2)
        item = ws.item(v, aid)
        assert item.values == {"coherence_style": 5} and item.version == tab1 and item.justification == ""
        for sub in ws.subaxes():
            tab1 = ws.save_value(v, aid, sub.id, 2, version=tab1)
        tab1 = ws.save_text(v, aid, justification="fine", version=tab1)
        with pytest.raises(Stale):  # Submit checks the version too
            ws.submit(v, aid, version=tab2)
        assert ws.item(v, aid).state == "draft"
        assert ws.submit(v, aid, version=tab1) == 1
    finally:
        ws.close()


def test_skip_and_flag_need_a_reason_and_are_kept_apart_from_the_scores(any_db_url):
    from appkit import make_workspace

    ws = make_workspace(any_db_url)
    try:
        v = viewer(ws, "demo", DEMO_CODE)
        q = ws.queue(v, 1)
        first, second = q[0].assignment_id, q[1].assignment_id
        with pytest.raises(MindEvalError, match="reason"):
            ws.set_flag(v, first, "skip", "  ")
        with pytest.raises(MindEvalError, match="'skip' or 'flag'"):
            ws.set_flag(v, first, "later", "x")
        before = ws.item(v, first).version
        ws.set_flag(v, first, "skip", "I know this member's real story")
        ws.set_flag(v, second, "flag", "turn 4 is cut off")
        item = ws.item(v, first)
        assert (item.flag, item.flag_reason, item.version) == ("skip", "I know this member's real story", before)
        assert [e.flag for e in ws.queue(v, 1)][:2] == ["skip", "flag"]
        assert ws.resume_target(v, 1) == second  # a skipped item is offered last
        ws.set_flag(v, first, None)
        assert ws.item(v, first).flag is None and ws.item(v, first).flag_reason == ""
    finally:
        ws.close()


def test_active_time_is_added_per_item_and_each_gap_is_capped(any_db_url):
    from appkit import make_workspace

    from annotation_app.store.ratings import MAX_ACTIVE_STEP

    ws = make_workspace(any_db_url)
    try:
        v = viewer(ws, "demo", DEMO_CODE)
        aid = ws.queue(v, 1)[0].assignment_id
        ws.save_value(v, aid, "coherence_style", 4)
        ws.add_active_time(v, aid, 12.5)
        ws.add_active_time(v, aid, 3600)  # the tab left open over lunch counts as one capped step
        ws.add_active_time(v, aid, -5)
        assert ws.item(v, aid).active_seconds == pytest.approx(12.5 + MAX_ACTIVE_STEP)
    finally:
        ws.close()


def test_the_rating_page_reloads_a_stale_rating_and_says_what_changed(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    form_fields(at)["coherence_style"].set_value(3).run()
    v = viewer(demo_ws, "demo", DEMO_CODE)
    other = demo_ws.item(v, aid).version
    demo_ws.save_value(v, aid, "coherence_style", 5, version=other)  # another tab
    form_fields(at)["respect_inclusion"].set_value(4).run()  # this tab still shows 3
    assert not at.exception, at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "changed in another tab or device" in warning and "not saved" in warning
    assert "Coherence" in warning and "now **5**" in warning and "showed 3" in warning
    assert demo_ws.item(v, aid).values == {"coherence_style": 5}  # not reverted, and the refused change not stored
    assert form_fields(at)["coherence_style"].value == 5 and form_fields(at)["respect_inclusion"].value is None
    form_fields(at)["respect_inclusion"].set_value(4).run()  # entered again, now on the newer version
    assert demo_ws.item(v, aid).values == {"coherence_style": 5, "respect_inclusion": 4}


def test_submit_after_another_tab_changed_the_rating_submits_nothing_and_says_so(demo_ws):
    """Submit stores what the page shows first; refused as stale, it submits nothing (the old
    page submitted the other tab's rating, which this page never showed) and reverts nothing."""
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    fill_all(at, 4)
    form_send(at, texts={"justification": "Steady."})
    v = viewer(demo_ws, "demo", DEMO_CODE)
    demo_ws.save_value(v, aid, "coherence_style", 6, version=demo_ws.item(v, aid).version)  # another tab
    form_send(at, {"respect_inclusion": "5"}, submit=True)  # changed on this page, sent with its Submit
    assert not at.exception, at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "changed in another tab or device" in warning and "now **6**" in warning
    item = demo_ws.item(v, aid)
    assert item.state == "draft" and not item.history
    assert item.values["coherence_style"] == 6 and item.values["respect_inclusion"] == 4
    assert form_fields(at)["coherence_style"].value == 6
    form_send(at, submit=True)  # checked, submitted again: now it is
    assert any("Rating submitted" in s.value for s in at.success)
    assert demo_ws.item(v, aid).state == "submitted" and demo_ws.item(v, aid).values["coherence_style"] == 6


def test_skip_with_a_reason_from_the_page_moves_on(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    at.radio(key=f"flagkind_{aid}").set_value("skip").run()
    at.text_input(key=f"flagreason_{aid}").input("conflict of interest").run()
    at.button(key=f"flagsave_{aid}").click().run()
    assert not at.exception, at.exception
    v = viewer(demo_ws, "demo", DEMO_CODE)
    assert demo_ws.item(v, aid).flag == "skip"
    assert at.session_state["assignment_id"] != aid
    assert "Guidelines (full text)" in all_text(at)
    # the message stays waiting until a run that showed it ends, then it is gone
    assert [i.value for i in at.info].count("Skipped: the study admin sees your reason.") == 1
    at.run()
    assert "Skipped: the study admin sees your reason." not in [i.value for i in at.info]


def test_flags_and_active_time_reach_the_admin_and_the_exports(demo_ws):
    import json

    from appkit import SYSTEM

    v = viewer(demo_ws, "demo", DEMO_CODE)
    q = demo_ws.queue(v, 1)
    demo_ws.set_flag(v, q[1].assignment_id, "flag", "=HYPERLINK turn 4 is cut off")
    aid = q[0].assignment_id
    for sub in demo_ws.subaxes():
        demo_ws.save_value(v, aid, sub.id, 4)
    demo_ws.save_text(v, aid, justification="ok")
    demo_ws.add_active_time(v, aid, 42.0)
    demo_ws.submit(v, aid)
    with pytest.raises(MindEvalError, match="only an admin"):
        demo_ws.flags(v, 1)
    flags = demo_ws.flags(SYSTEM, 1)
    assert [(f.annotator, f.flag, f.reason, f.state) for f in flags] == [
        ("demo", "flag", "=HYPERLINK turn 4 is cut off", "draft")]
    rows = [json.loads(x) for x in demo_ws.export_text(SYSTEM, 1, "flags").splitlines()]
    assert rows == [f.model_dump() for f in flags]
    rating = json.loads(demo_ws.export_text(SYSTEM, 1, "jsonl").splitlines()[0])
    assert rating["active_seconds"] == 42.0
    assert demo_ws.export_text(SYSTEM, 1, "csv").splitlines()[0].endswith(",active_seconds")


def test_the_address_brings_a_reload_back_to_the_same_transcript(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    at.button(key="next").click().run()
    at.button(key="next").click().run()
    third = at.session_state["assignment_id"]
    assert at.query_params["item"] == str(third) and at.query_params["study"] == "1"

    again = sign_in("demo", DEMO_CODE)  # a reload: a new session with the same address
    again.query_params["study"], again.query_params["item"] = "1", str(third)
    again.switch_page("views/rate.py").run()
    assert not again.exception, again.exception
    assert again.session_state["assignment_id"] == third
    other = sign_in("demo", DEMO_CODE)  # an item that is not this annotator's falls back to the queue
    other.query_params["study"], other.query_params["item"] = "1", "99999"
    other.switch_page("views/rate.py").run()
    assert other.session_state["assignment_id"] != 99999


def test_a_stale_tab_keeps_the_text_it_could_not_save_on_screen(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    v = viewer(demo_ws, "demo", DEMO_CODE)
    demo_ws.save_text(v, aid, justification="from the other tab", version=demo_ws.item(v, aid).version)
    form_send(at, texts={"justification": "my long careful text"})
    warning = " ".join(w.value for w in at.warning)
    assert "from the other tab" in warning and "my long careful text" in warning
    assert demo_ws.item(v, aid).justification == "from the other tab"


def test_a_browser_back_on_a_new_session_writes_at_the_version_its_form_showed(demo_ws):
    """A browser whose server session ended (its process restarted or died) sends its form's state
    to a new session: the write is based on the version the form showed, so a change another tab
    stored meanwhile is not overwritten (refused, and said), and one made on the current version is
    stored."""
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    v = viewer(demo_ws, "demo", DEMO_CODE)
    shown = rating_form(at)[1]["version"]
    demo_ws.save_value(v, aid, "coherence_style", 6, version=shown)  # another tab, meanwhile
    again = open_rating(sign_in("demo", DEMO_CODE))  # the new session; the old form's state arrives
    old = rating_form(at)[1]
    state = {"tab": "old-tab", "seq": 7, "item": aid, "version": shown, "texts": old["texts"],
             "values": {**old["stored"], "coherence_style": "2", "respect_inclusion": "4"}}
    component_send(again, "mindeval_rate", "form", state, trigger=False)
    assert demo_ws.item(v, aid).values == {"coherence_style": 6}
    assert "changed in another tab or device" in " ".join(w.value for w in again.warning)
    form_send(again, {"respect_inclusion": "4"}, tab="old-tab", seq=8)  # now on the version it shows
    assert demo_ws.item(v, aid).values == {"coherence_style": 6, "respect_inclusion": 4}


def test_the_transcript_pane_shows_the_search_hits_and_is_told_the_turn_to_jump_to(demo_ws):
    """The pane (annotation_app.panes) gets one card per turn, numbered from 1; a search sends only
    the hits, a chosen turn is sent as ``jump``; a rating-page transcript never scrolls to its end."""
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    messages = demo_ws.item(viewer(demo_ws, "demo", DEMO_CODE), aid).messages
    _, pane = component(at, "mindeval_transcript")
    assert [t["n"] for t in pane["turns"]] == list(range(1, len(messages) + 1))
    assert [t["text"] for t in pane["turns"]] == [m.content for m in messages]
    assert pane["jump"] is None and pane["end"] is False
    at.selectbox(key=f"t{aid}_jump").select(3).run()
    assert component(at, "mindeval_transcript")[1]["jump"] == 3
    word = messages[1].content.split()[0]
    at.text_input(key=f"t{aid}_search").input(word).run()
    hits = [n for n, m in enumerate(messages, start=1) if word.lower() in m.content.lower()]
    assert [t["n"] for t in component(at, "mindeval_transcript")[1]["turns"]] == hits and 2 in hits
    at.text_input(key=f"t{aid}_search").input("zzz-not-there").run()
    assert component(at, "mindeval_transcript")[1]["turns"] == []


def test_a_state_whose_change_is_already_stored_leaves_the_next_at_its_own_version(demo_ws):
    """A state re-sent to another process after a reconnect, whose change the dying process had
    already stored (its answer and its record lost): it writes nothing, and the tab's next state,
    based on the version its form shows now, is stored, not refused against the older version the
    re-sent one carried (a rolling restart at 20 annotators lost a key that way)."""
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    v = viewer(demo_ws, "demo", DEMO_CODE)
    shown = rating_form(at)[1]
    demo_ws.save_value(v, aid, "coherence_style", 3, version=shown["version"])  # stored by the process that died
    again = {"tab": "t1", "seq": 2, "item": aid, "version": shown["version"], "texts": shown["texts"],
             "values": {**shown["stored"], "coherence_style": "3"}}
    component_send(at, "mindeval_rate", "form", again, trigger=False)
    now = rating_form(at)[1]
    assert now["stored"]["coherence_style"] == "3" and now["version"] == shown["version"] + 1
    state = {"tab": "t1", "seq": 3, "item": aid, "version": now["version"], "texts": now["texts"],
             "values": {**now["stored"], "respect_inclusion": "4"}}
    component_send(at, "mindeval_rate", "form", state, trigger=False)
    assert demo_ws.item(v, aid).values == {"coherence_style": 3, "respect_inclusion": 4}
    assert not at.warning


def test_a_reload_right_after_clicks_is_not_refused_for_its_own_tabs_late_save(demo_ws):
    """A reload ~100 ms after clicks: the new page shows the rating before the page before's last
    state lands; that late save is the same tab's (same tab id, an earlier seq), so the new page's
    state is stored, not refused as another tab's (3 of 180 clicks were lost that way on
    PostgreSQL beside two CPU hogs). A write by another tab in between still refuses it."""
    before_reload = open_rating(sign_in("demo", DEMO_CODE))
    aid = before_reload.session_state["assignment_id"]
    v = viewer(demo_ws, "demo", DEMO_CODE)
    reloaded = open_rating(sign_in("demo", DEMO_CODE))  # the new page has rendered the rating
    shown = rating_form(reloaded)[1]
    form_send(before_reload, {"coherence_style": "3"}, tab="t1", seq=5)  # the late save lands
    state = {"tab": "t1", "seq": 6, "item": aid, "version": shown["version"], "texts": shown["texts"],
             "values": {**shown["stored"], "coherence_style": "3", "respect_inclusion": "4"}}
    component_send(reloaded, "mindeval_rate", "form", state, trigger=False)
    assert demo_ws.item(v, aid).values == {"coherence_style": 3, "respect_inclusion": 4}
    assert not reloaded.warning

    other = open_rating(sign_in("demo", DEMO_CODE))
    shown = rating_form(other)[1]
    demo_ws.save_value(v, aid, "coherence_style", 6, version=demo_ws.item(v, aid).version)  # another tab
    state = {"tab": "t2", "seq": 1, "item": aid, "version": shown["version"], "texts": shown["texts"],
             "values": {**shown["stored"], "alliance_maintenance": "2"}}
    component_send(other, "mindeval_rate", "form", state, trigger=False)
    assert "alliance_maintenance" not in demo_ws.item(v, aid).values
    assert "changed in another tab or device" in " ".join(w.value for w in other.warning)
