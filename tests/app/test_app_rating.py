"""AppTest: rate mode — N/A rules, autosave, submit, resume and revise with history."""

from __future__ import annotations

import pytest
from appkit import DEMO_CODE, all_text, radios, sign_in, viewer

from annotation_app.services import MindEvalError

NA_ALLOWED = {"respect_inclusion", "alliance_maintenance"}


def open_rating(at):
    at.button(key="open_1").click().run()
    assert not at.exception, at.exception
    return at


def fill_all(at, value: int = 4):
    for sub in list(radios(at)):
        radios(at)[sub].set_value(value).run()
    return at


def test_na_is_offered_only_where_the_guidelines_allow_it(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    rs = radios(at)
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
    radios(at)["coherence_style"].set_value(2).run()
    radios(at)["respect_inclusion"].set_value("N/A").run()
    at.text_area(key=f"a{second}_r0_open_justification").input("Too many lists.").run()
    assert any("scores saved at" in h.proto.body for h in at.get("html"))

    v = viewer(demo_ws, "demo", DEMO_CODE)
    stored = demo_ws.item(v, second)
    assert stored.values == {"coherence_style": 2, "respect_inclusion": 0}
    assert stored.justification == "Too many lists."

    again = open_rating(sign_in("demo", DEMO_CODE))  # e.g. after closing the tab
    assert again.session_state["assignment_id"] == second
    rs = radios(again)
    assert rs["coherence_style"].value == 2
    assert rs["respect_inclusion"].value == "N/A"
    assert rs["evidence_based_intervention"].value is None
    assert again.text_area(key=f"a{second}_r0_open_justification").value == "Too many lists."


def test_submit_requires_every_subaxis_and_a_justification(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    radios(at)["coherence_style"].set_value(3).run()
    at.button(key=f"submit_{aid}").click().run()
    warning = " ".join(w.value for w in at.warning)
    assert "Evidence-Based Intervention Use" in warning and "justification" in warning
    v = viewer(demo_ws, "demo", DEMO_CODE)
    assert demo_ws.item(v, aid).state == "draft"

    fill_all(at, 5)
    at.text_area(key=f"a{aid}_r0_open_justification").input("Warm and focused.").run()
    at.button(key=f"submit_{aid}").click().run()
    assert not at.exception
    assert any("Rating submitted" in s.value for s in at.success)
    assert demo_ws.item(v, aid).state == "submitted"
    assert at.session_state["assignment_id"] != aid  # moved on to the next transcript
    assert "1 of 6 transcripts submitted" in all_text(at)


def test_revise_keeps_the_history(demo_ws):
    at = open_rating(sign_in("demo", DEMO_CODE))
    aid = at.session_state["assignment_id"]
    fill_all(at, 4)
    at.text_area(key=f"a{aid}_r0_open_justification").input("First look.").run()
    at.button(key=f"submit_{aid}").click().run()
    at.session_state["assignment_id"] = aid
    at.run()
    assert all(r.disabled for r in radios(at).values())  # a submitted rating is read-only
    at.button(key=f"revise_{aid}").click().run()
    rs = radios(at)
    assert not rs["coherence_style"].disabled
    rs["coherence_style"].set_value(1).run()
    at.button(key=f"submit_{aid}").click().run()

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
