"""Rating at the judge's unit in a real browser, on the rating form component (assets/forms/rate.js):
a target's questions answered by mouse and by keyboard (a branch, a gate, a "not relevant" answer,
the level each dimension's answers give), every reply of a transcript scored by keyboard beside the
transcript up to it (its level, its flags, ←/→ and the reply bar), and neither a reload ~100 ms
after the last click nor a second tab loses or reverts anything. Every wait is on the form's DOM."""

from __future__ import annotations

import json

import pytest
from appkit import DEMO_CODE, SYSTEM, viewer
from browserkit import (
    RATE_FORM,
    rate_focus_on,
    rate_form_on,
    rate_form_saved,
    rate_pick,
    rate_toggle,
    served_workspace,
    settle,
    sign_in,
)
from unitkit import BY_HAND, PATH

from annotation_app.demo import QUESTION_STUDY, REPLY_STUDY
from annotation_app.services import Workspace
from mindeval.records import ReplyRating

pytestmark = pytest.mark.browser
FLAGS = ["missed_risk_cue", "unsafe_advice", "claims_human", "diagnosis_overreach", "dismissive",
         "wrong_crisis_info", "unfitting_length", "boundary_slip"]  # keys a..h
LEVEL_KEYS = {"no_concern": "1", "minor": "2", "major": "3", "critical": "4"}
LABEL = {"yes": "Yes", "no": "No", "not_relevant": "Not relevant"}


@pytest.fixture
def app(tmp_path):
    """A running app on the demo workspace with its risk-checklist and reply-by-reply studies."""
    yield from served_workspace(tmp_path, "unit", unit_studies=True)


def open_study(page, base: str, ws: Workspace, name: str) -> int:
    """Sign in, open the study's first transcript; its assignment id."""
    sign_in(page, base)
    page.locator(f".st-key-open_{ws.study(SYSTEM, name).id} button").click()
    return rate_form_on(page)


def questions(qids: list[str]) -> list[str]:
    return ["q-" + q for q in qids]


def reply_fields(turn: int) -> list[str]:
    return [f"r{turn}-level"] + [f"r{turn}-f-{f}" for f in FLAGS]


# the transcript pane's last card (turn n) is within its scroll box, its bottom edge in view
END_IN_VIEW = """(n) => { const box = document.querySelector('.mindeval-transcript .tr-box');
  const card = box && box.querySelector(`[data-turn="${n}"]`);
  if (!card || card.nextElementSibling) return false;
  const b = box.getBoundingClientRect(), r = card.getBoundingClientRect();
  return r.bottom <= b.bottom + 1 && r.bottom > b.top; }"""


def reply_stored(ws: Workspace, v, aid: int, turn: int) -> tuple[str | None, set[str]]:
    r = ws.item(v, aid).replies[turn]
    return r.level, {k for k, on in r.flags.items() if on}


def test_a_rater_answers_the_questions_by_mouse_and_by_keyboard(app, page):
    """NOTICE by mouse, the rest by keys 1/2/3 (a_now: 3 = not relevant; h_urgent: 2 skips to
    h_trusted_people); each question appears only when the answers reach it, the highlight follows,
    the levels stored and shown are those the judge's rule gives, and after the last answer the
    keys lead on to the justification and Ctrl+Enter submits."""
    base, ws = app
    aid = open_study(page, base, ws, QUESTION_STUDY)
    order = list(PATH)
    rate_form_on(page, questions(order[:1]))
    for n, qid in enumerate(order):
        rate_form_on(page, questions(order[: n + 1]))  # the next question, nothing beyond it
        if qid.startswith("n_"):
            rate_pick(page, "q-" + qid, LABEL[PATH[qid]])
        else:
            rate_focus_on(page, "q-" + qid)  # the keys act on this question
            page.keyboard.press({"yes": "1", "no": "2", "not_relevant": "3"}[PATH[qid]])
    page.wait_for_function("() => document.activeElement?.dataset?.text === 'justification'")  # on to the text
    rate_form_saved(page)
    v = viewer(ws, "demo", DEMO_CODE)
    item = ws.item(v, aid)
    assert item.answers == PATH and item.values == BY_HAND
    assert json.loads(page.get_attribute(RATE_FORM, "data-stored")) == [LABEL[PATH[q]] for q in order]
    g = ws.guidelines(item.study_id)
    headings = page.locator(f"{RATE_FORM} .rate-heading").all_inner_texts()
    sub = {s.axis: s.id for s in item.subaxes}  # each dimension's sub-axis (BY_HAND's keys)
    want = [f"{ax.name} · level: {next(lv.label for lv in g.levels if lv.value == BY_HAND[sub[ax.code]])}"
            for ax in g.judge_axes if sub.get(ax.code) in BY_HAND]
    assert headings == want  # each dimension headed by the level its answers give
    shown = page.inner_text(RATE_FORM)
    assert "h_emergency" not in str(item.answers) and "Did the companion clearly encourage" not in shown
    page.keyboard.type("Keyboard and mouse alike.")
    page.keyboard.press("Control+Enter")
    page.get_by_text("Rating submitted").wait_for()
    item = ws.item(v, aid)
    assert item.state == "submitted" and item.justification == "Keyboard and mouse alike."


def test_a_rater_scores_every_reply_by_keyboard(app, page):
    """Digits pick each reply's level, letters toggle its flags, → goes on; the transcript pane
    never shows a turn after the reply under rating; the reply bar says where the rater is; ←
    and the bar's ◀ go back and show what is stored."""
    base, ws = app
    aid = open_study(page, base, ws, REPLY_STUDY)
    v = viewer(ws, "demo", DEMO_CODE)
    turns = [i for i, m in enumerate(ws.item(v, aid).messages) if m.role == "clinician"]
    plan = {turns[0]: ("no_concern", []), turns[1]: ("major", ["a", "e"]), turns[2]: ("minor", ["g"]),
            turns[3]: ("critical", ["a", "b"])}
    bar = page.locator(f"{RATE_FORM} .rate-reply .rate-where")
    for n, turn in enumerate(turns):
        rate_form_on(page, reply_fields(turn), aid)
        assert bar.inner_text().startswith(f"Reply {n + 1} of {len(turns)} (turn {turn + 1}) · {n} of {len(turns)}")
        cards = page.locator(".mindeval-transcript [data-turn]")
        assert cards.count() == turn + 1  # the conversation up to this reply only
        page.wait_for_function(END_IN_VIEW, arg=turn + 1)  # the pane shows the reply under rating
        level, letters = plan[turn]
        page.keyboard.press(LEVEL_KEYS[level])
        for k in letters:
            page.keyboard.press(k)
        rate_form_saved(page)
        assert reply_stored(ws, v, aid, turn) == (level, {FLAGS["abcdefgh".index(k)] for k in letters})
        if n < len(turns) - 1:
            page.keyboard.press("ArrowRight")
    want = [ReplyRating(turn=t, level=lv, flags={f: "abcdefgh"[i] in ks for i, f in enumerate(FLAGS)})
            for t, (lv, ks) in plan.items()]
    got = ws.item(v, aid)
    assert [ReplyRating(turn=t, level=r.level or "", flags={f: bool(r.flags.get(f)) for f in FLAGS})
            for t, r in sorted(got.replies.items())] == want
    assert got.values == {"reply_severity": 0}  # the worst reply: critical
    assert page.locator(f'{RATE_FORM} .rate-step[data-step="1"]').is_disabled()  # the last reply
    page.keyboard.press("ArrowLeft")  # back to the third reply: what is stored is shown
    rate_form_on(page, reply_fields(turns[2]), aid)
    assert page.locator(f'{RATE_FORM} .rate-check[data-sub="r{turns[2]}-f-unfitting_length"] input').is_checked()
    assert page.locator(f'{RATE_FORM} fieldset[data-sub="r{turns[2]}-level"] input:checked').get_attribute(
        "value") == "Minor"
    page.locator(f'{RATE_FORM} .rate-step[data-step="-1"]').click()  # the bar's ◀: the second reply
    rate_form_on(page, reply_fields(turns[1]), aid)
    assert json.loads(page.get_attribute(RATE_FORM, "data-shown")) == (
        ["Major"] + ["yes" if f in ("missed_risk_cue", "dismissive") else "" for f in FLAGS])


def test_a_reload_right_after_the_last_click_and_a_second_tab_lose_or_revert_nothing(app, page, tmp_path):
    base, ws = app
    v = viewer(ws, "demo", DEMO_CODE)
    aid = open_study(page, base, ws, REPLY_STUDY)
    turn = [i for i, m in enumerate(ws.item(v, aid).messages) if m.role == "clinician"][0]
    rate_form_on(page, reply_fields(turn), aid)
    page.on("dialog", lambda d: d.accept())
    rate_pick(page, f"r{turn}-level", "Major")
    rate_toggle(page, f"r{turn}-f-dismissive")
    rate_toggle(page, f"r{turn}-f-boundary_slip")
    page.wait_for_timeout(100)  # the scenario: reload ~100 ms after the last click
    page.reload()
    rate_form_on(page, reply_fields(turn), aid)
    rate_form_saved(page)
    assert reply_stored(ws, v, aid, turn) == ("major", {"dismissive", "boundary_slip"})

    # the question form: three answers, the reload 100 ms after the last click
    qaid = ws.queue(v, ws.study(SYSTEM, QUESTION_STUDY).id)[0].assignment_id
    page.goto(f"{base}rate?study={ws.study(SYSTEM, QUESTION_STUDY).id}&item={qaid}")
    order = list(PATH)
    for n in range(3):
        rate_form_on(page, questions(order[: n + 1]), qaid)
        rate_pick(page, "q-" + order[n], LABEL[PATH[order[n]]])
    page.wait_for_timeout(100)
    page.reload()
    rate_form_on(page, questions(order[:4]), qaid)
    rate_form_saved(page)
    assert ws.item(v, qaid).answers == {q: PATH[q] for q in order[:3]}

    # two tabs on the reply form: tab 2 still shows "Major" when tab 1 stores "Critical"
    page.goto(f"{base}rate?study={ws.study(SYSTEM, REPLY_STUDY).id}&item={aid}&reply={aid}.0")  # its first reply
    rate_form_on(page, reply_fields(turn), aid)
    tab2 = page.context.new_page()
    tab2.on("dialog", lambda d: d.accept())
    tab2.goto(page.url)
    rate_form_on(tab2, reply_fields(turn), aid)
    settle(tab2)
    rate_pick(page, f"r{turn}-level", "Critical")
    rate_form_saved(page)
    rate_toggle(tab2, f"r{turn}-f-unsafe_advice")
    tab2.get_by_text("changed in another tab or device").wait_for()
    assert "is now **Critical**" not in tab2.inner_text("body") and "is now Critical" in tab2.inner_text("body")
    rate_form_on(tab2, reply_fields(turn), aid)
    rate_form_saved(tab2)
    settle(tab2)
    assert reply_stored(ws, v, aid, turn) == ("critical", {"dismissive", "boundary_slip"})
    assert tab2.locator(f'{RATE_FORM} fieldset[data-sub="r{turn}-level"] input:checked').get_attribute(
        "value") == "Critical"
    assert not tab2.locator(f'{RATE_FORM} .rate-check[data-sub="r{turn}-f-unsafe_advice"] input').is_checked()
