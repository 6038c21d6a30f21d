"""Rating at the judge's unit in a real browser: a target's questions answered by mouse and by
keyboard (a branch, a gate, a "not relevant" answer), every reply of a transcript scored by
keyboard beside the transcript up to it, and neither a reload ~100 ms after the last click nor
a second tab loses or reverts anything."""

from __future__ import annotations

import pytest
from appkit import (
    DEMO_CODE,
    SYSTEM,
    viewer,
)
from browserkit import NOTHING_WAITING_JS, WAIT_MS, served_workspace, settle, sign_in
from unitkit import BY_HAND, PATH

from annotation_app.demo import QUESTION_STUDY, REPLY_STUDY
from annotation_app.services import Workspace
from mindeval.records import ReplyRating

pytestmark = pytest.mark.browser
PANE = ".st-key-rating-pane"
FLAGS = ["missed_risk_cue", "unsafe_advice", "claims_human", "diagnosis_overreach", "dismissive",
         "wrong_crisis_info", "unfitting_length", "boundary_slip"]  # keys a..h
LEVEL_KEYS = {"no_concern": "1", "minor": "2", "major": "3", "critical": "4"}


@pytest.fixture
def app(tmp_path):
    """A running app on the demo workspace with its risk-checklist and reply-by-reply studies."""
    yield from served_workspace(tmp_path, "unit", unit_studies=True)


def open_study(page, base: str, ws: Workspace, name: str) -> int:
    """Sign in, open the study's first transcript; its assignment id."""
    sign_in(page, base)
    page.locator(f".st-key-open_{ws.study(SYSTEM, name).id} button").click()
    page.wait_for_selector("[data-mindeval-saved]")
    settle(page)
    return int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))


def form_is(page, fields: list[str]) -> None:
    """Wait until the form shows exactly ``fields`` (the marker's list and one widget each)."""
    page.wait_for_function(
        """(want) => { const m = document.querySelector('[data-mindeval-saved]');
          if (!m || JSON.stringify(JSON.parse(m.getAttribute('data-mindeval-subaxes'))) !== JSON.stringify(want))
            return false;
          return document.querySelectorAll('.st-key-rating-pane :is([data-testid="stRadio"], [data-testid="stCheckbox"])')
            .length === want.length; }""", arg=fields, timeout=WAIT_MS)


def questions(qids: list[str]) -> list[str]:
    return ["q-" + q for q in qids]


def click_answer(page, qid: str, answer: str) -> None:
    label = {"yes": "Yes", "no": "No", "not_relevant": "Not relevant"}[answer]
    page.locator(f"{PANE} [class*='_q-{qid}'] label").filter(has_text=label).first.click()


def test_a_rater_answers_the_questions_by_mouse_and_by_keyboard(app, page):
    """NOTICE by mouse, the rest by keys 1/2/3 (a_now: 3 = not relevant; h_urgent: 2 skips to
    h_trusted_people); each question appears only when the answers reach it, focus follows, the
    levels stored are those the judge's rule gives, and after the last answer the keys lead on to
    the justification and Ctrl+Enter submits."""
    base, ws = app
    aid = open_study(page, base, ws, QUESTION_STUDY)
    order = list(PATH)
    form_is(page, questions(order[:1]))
    for n, qid in enumerate(order):
        form_is(page, questions(order[: n + 1]))  # the next question, nothing beyond it
        if qid.startswith("n_"):
            click_answer(page, qid, PATH[qid])
        else:
            page.wait_for_function("(q) => !!document.querySelector('.mindeval-focus')"
                                   "?.closest(`[class*='_q-${q}']`)", arg=qid)  # the keys act on this question
            page.keyboard.press({"yes": "1", "no": "2", "not_relevant": "3"}[PATH[qid]])
    page.wait_for_function("() => document.activeElement?.tagName === 'TEXTAREA'")  # on to the justification
    page.wait_for_function(NOTHING_WAITING_JS)
    v = viewer(ws, "demo", DEMO_CODE)
    item = ws.item(v, aid)
    assert item.answers == PATH and item.values == BY_HAND
    shown = page.inner_text(PANE)
    assert "h_emergency" not in str(item.answers) and "Did the companion clearly encourage" not in shown
    page.keyboard.type("Keyboard and mouse alike.")
    page.keyboard.press("Control+Enter")
    page.get_by_text("Rating submitted").wait_for()
    assert ws.item(v, aid).state == "submitted"


def reply_fields(turn: int) -> list[str]:
    return [f"r{turn}-level"] + [f"r{turn}-f-{f}" for f in FLAGS]


# the transcript pane's last card (turn n) is within its scroll box, its bottom edge in view
END_IN_VIEW = """(n) => { const box = document.querySelector('.mindeval-transcript .tr-box');
  const card = box && box.querySelector(`[data-turn="${n}"]`);
  if (!card || card.nextElementSibling) return false;
  const b = box.getBoundingClientRect(), r = card.getBoundingClientRect();
  return r.bottom <= b.bottom + 1 && r.bottom > b.top; }"""


def test_a_rater_scores_every_reply_by_keyboard(app, page):
    """Digits pick each reply's level, letters toggle its flags, → goes on; the transcript pane
    never shows a turn after the reply under rating."""
    base, ws = app
    aid = open_study(page, base, ws, REPLY_STUDY)
    v = viewer(ws, "demo", DEMO_CODE)
    turns = [i for i, m in enumerate(ws.item(v, aid).messages) if m.role == "clinician"]
    plan = {turns[0]: ("no_concern", []), turns[1]: ("major", ["a", "e"]), turns[2]: ("minor", ["g"]),
            turns[3]: ("critical", ["a", "b"])}
    for n, turn in enumerate(turns):
        form_is(page, reply_fields(turn))
        cards = page.locator(".mindeval-transcript [data-turn]")
        assert cards.count() == turn + 1  # the conversation up to this reply only
        page.wait_for_function(END_IN_VIEW, arg=turn + 1)  # the pane shows the reply under rating
        level, letters = plan[turn]
        page.keyboard.press(LEVEL_KEYS[level])
        for k in letters:
            page.keyboard.press(k)
        page.wait_for_function(NOTHING_WAITING_JS)
        if n < len(turns) - 1:
            page.keyboard.press("ArrowRight")
    want = [ReplyRating(turn=t, level=lv, flags={f: "abcdefgh"[i] in ks for i, f in enumerate(FLAGS)})
            for t, (lv, ks) in plan.items()]
    got = ws.item(v, aid)
    assert [ReplyRating(turn=t, level=r.level or "", flags={f: bool(r.flags.get(f)) for f in FLAGS})
            for t, r in sorted(got.replies.items())] == want
    assert got.values == {"reply_severity": 0}  # the worst reply: critical
    page.keyboard.press("ArrowLeft")  # back to the third reply: what is stored is shown
    form_is(page, reply_fields(turns[2]))
    assert page.locator(f"{PANE} [class*='-f-unfitting_length'] input").is_checked()


def test_a_reload_right_after_the_last_click_and_a_second_tab_lose_or_revert_nothing(app, page, tmp_path):
    base, ws = app
    v = viewer(ws, "demo", DEMO_CODE)
    aid = open_study(page, base, ws, REPLY_STUDY)
    turn = [i for i, m in enumerate(ws.item(v, aid).messages) if m.role == "clinician"][0]
    form_is(page, reply_fields(turn))
    page.on("dialog", lambda d: d.accept())
    page.locator(f"{PANE} [data-testid='stRadio'] label").filter(has_text="Major").click()
    page.locator(f"{PANE} [class*='-f-dismissive'] label").click()
    page.locator(f"{PANE} [class*='-f-boundary_slip'] label").click()
    page.wait_for_timeout(100)  # the scenario: reload ~100 ms after the last click
    page.reload()
    form_is(page, reply_fields(turn))
    page.wait_for_function(NOTHING_WAITING_JS, timeout=WAIT_MS)
    stored = ws.item(v, aid).replies[turn]
    assert (stored.level, {k for k, on in stored.flags.items() if on}) == ("major", {"dismissive", "boundary_slip"})

    # the question form: three answers, the reload 100 ms after the last click
    qaid = ws.queue(v, ws.study(SYSTEM, QUESTION_STUDY).id)[0].assignment_id
    page.goto(f"{base}rate?study={ws.study(SYSTEM, QUESTION_STUDY).id}&item={qaid}")
    order = list(PATH)
    for n in range(3):
        form_is(page, questions(order[: n + 1]))
        click_answer(page, order[n], PATH[order[n]])
    page.wait_for_timeout(100)
    page.reload()
    form_is(page, questions(order[:4]))
    page.wait_for_function(NOTHING_WAITING_JS, timeout=WAIT_MS)
    assert ws.item(v, qaid).answers == {q: PATH[q] for q in order[:3]}

    # two tabs on the reply form: tab 2 still shows "Major" when tab 1 stores "Critical"
    page.goto(f"{base}rate?study={ws.study(SYSTEM, REPLY_STUDY).id}&item={aid}&reply={aid}.0")  # its first reply
    form_is(page, reply_fields(turn))
    tab2 = page.context.new_page()
    tab2.on("dialog", lambda d: d.accept())
    tab2.goto(page.url)
    form_is(tab2, reply_fields(turn))
    settle(tab2)
    page.locator(f"{PANE} [data-testid='stRadio'] label").filter(has_text="Critical").click()
    page.wait_for_function(NOTHING_WAITING_JS)
    tab2.locator(f"{PANE} [class*='-f-unsafe_advice'] label").click()
    tab2.get_by_text("changed in another tab or device").wait_for()
    assert "is now **Critical**" not in tab2.inner_text("body") and "is now Critical" in tab2.inner_text("body")
    form_is(tab2, reply_fields(turn))
    tab2.wait_for_function(NOTHING_WAITING_JS)
    settle(tab2)
    stored = ws.item(v, aid).replies[turn]
    assert (stored.level, {k for k, on in stored.flags.items() if on}) == ("critical", {"dismissive", "boundary_slip"})
    assert tab2.locator(f"{PANE} [data-testid='stRadio'] input:checked").evaluate(
        "i => i.closest('label').innerText.trim()") == "Critical"
