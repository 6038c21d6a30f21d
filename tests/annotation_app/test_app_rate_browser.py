"""The rating page in a real browser: rapid clicks are never lost (not even by a reload right
after them), two tabs never silently revert each other, mouse-only and keyboard rating (1-6 and
a categorical form's levels), text boxes that can be used, layout at 1280x720."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from appkit import (
    DEMO_CODE,
    SYSTEM,
    add_target_study,
    free_port,
    make_workspace,
    start_app,
    stop,
    viewer,
    wait_healthy,
)
from browserkit import (
    NOTHING_WAITING_JS,
    SHOWN_SCORES_JS,
    WAIT_MS,
    block_sends,
    open_browser,
    page_errors,
    pane_ready,
    saved,
    served_workspace,
    settle,
    sign_in,
    stored,
    whole_rating,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from annotation_app.services import Workspace

pytestmark = pytest.mark.browser


@pytest.fixture
def app(tmp_path):
    """A running app on the demo workspace: (base URL, workspace for reading the database)."""
    yield from served_workspace(tmp_path)


def as_values(labels: list, subs) -> dict:
    """Labels in sub-axis order ("N/A", "1".."6", None = unset) → the stored values they mean."""
    return {s.id: (0 if x == "N/A" else int(x)) for s, x in zip(subs, labels) if x is not None}


def open_rating(page, base: str) -> None:
    sign_in(page, base)
    page.get_by_role("button", name="Continue rating").click()
    page.locator('.st-key-rating-pane [data-testid="stRadio"]').nth(8).wait_for()
    settle(page)


def shown_vs_saved(page, ws: Workspace) -> tuple[list, list]:
    """(scores the page shows as chosen, scores in the database) of the transcript on screen."""
    v = viewer(ws, "demo", DEMO_CODE)
    pos = int(re.search(r"Transcript (\d+) of", page.inner_text("body")).group(1))
    aid = ws.queue(v, 1)[pos - 1].assignment_id
    saved = ws.item(v, aid).values
    shown = page.evaluate(SHOWN_SCORES_JS)
    db = [None if sub.id not in saved else ("N/A" if saved[sub.id] == 0 else str(saved[sub.id]))
          for sub in ws.subaxes()]
    return shown, db


def test_rapid_clicks_are_all_saved(app, page):
    base, ws = app
    open_rating(page, base)
    rng = random.Random(12)
    mismatches = []
    for n in range(20):
        if n and n % 4 == 0:  # also on fresh transcripts (their first save creates the rating)
            before = page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment")
            page.get_by_role("button", name="Next ▶").click()
            page.wait_for_function("(a) => document.querySelector('[data-mindeval-saved]')"
                                   "?.getAttribute('data-mindeval-assignment') !== a", arg=before)
        pane_ready(page, 9)  # waits out a rerun that still shows the old form beside the new one
        groups = page.locator('.st-key-rating-pane [data-testid="stRadio"]')
        want = []
        for i in range(9):
            score = str(rng.randint(1, 6))
            want.append(score)
            groups.nth(i).locator("label").filter(has_text=re.compile(rf"^{score}$")).click()
            page.wait_for_timeout(rng.randint(60, 100))  # a person's pace between clicks
        stored(page, want)
        shown, db = shown_vs_saved(page, ws)
        if shown != db:
            mismatches.append((n, shown, db))
        aid = int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
        whole_rating(ws, viewer(ws, "demo", DEMO_CODE), aid, as_values(want, ws.subaxes()))
    assert mismatches == [], f"{len(mismatches)} of 20 passes lost a click: {mismatches}"


def test_a_reload_right_after_fast_clicks_loses_no_score(app, page):
    """20 passes of 9 fast clicks, then a reload ~100 ms after the last: every score is stored
    (unsent ones are kept in the browser and sent again), and the reload comes back to the
    same transcript; leaving with unsent changes asks first."""
    base, ws = app
    open_rating(page, base)
    asked = []
    page.on("dialog", lambda d: (asked.append(d.type), d.accept()))
    rng = random.Random(7)
    v = viewer(ws, "demo", DEMO_CODE)
    lost, url = [], None
    for _pass in range(20):
        pane_ready(page, 9)
        url = url or page.url
        assert page.url == url  # the same study and transcript after every reload
        pos = int(re.search(r"Transcript (\d+) of", page.inner_text("body")).group(1))
        aid = ws.queue(v, 1)[pos - 1].assignment_id
        shown = page.evaluate(SHOWN_SCORES_JS)
        groups = page.locator('.st-key-rating-pane [data-testid="stRadio"]')
        want = []
        for i in range(9):
            score = rng.choice([s for s in "123456" if s != shown[i]])  # every click changes a score
            want.append(score)
            groups.nth(i).locator("label").filter(has_text=re.compile(rf"^{score}$")).click()
        page.wait_for_timeout(100)  # the scenario: reload ~100 ms after the last click
        page.reload()
        pane_ready(page, 9)
        page.wait_for_function(NOTHING_WAITING_JS)  # stored, and nothing kept in the tab to send
        settle(page)
        db = ws.item(v, aid).values
        got = [str(db.get(s.id)) if s.id in db else None for s in ws.subaxes()]
        lost.append(sum(a != b for a, b in zip(got, want)))
        whole_rating(ws, v, aid, as_values(want, ws.subaxes()))
    assert sum(lost) == 0, f"{sum(lost)} of 180 scores lost; per pass: {lost}"
    assert "beforeunload" in asked  # leaving with unsent changes asked for confirmation


def test_a_late_save_of_the_previous_page_load_costs_no_carried_over_change(app, page):
    """The race behind a reload right after fast clicks, made deterministic: the previous page
    load's last save lands (a newer version) after this load rendered, so the next write is
    refused as stale. A change carried over from before the reload, on a field nobody else
    changed, is still sent and stored; the late save is not reverted."""
    base, ws = app
    open_rating(page, base)
    v = viewer(ws, "demo", DEMO_CODE)
    aid = int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
    subs = [s.id for s in ws.subaxes()]
    item = ws.item(v, aid)
    assert item.values == {}
    ws.save_value(v, aid, subs[0], 2, version=item.version)  # the old page load's late save
    refused_before = page.get_attribute("[data-mindeval-saved]", "data-mindeval-refused")
    owner = page.get_attribute("[data-mindeval-saved]", "data-mindeval-owner")
    # the change as the previous page load of this tab kept it (a tab id whose page is gone)
    page.evaluate("""([o, k]) => localStorage.setItem(`mindeval-rate:${o}|gone`, JSON.stringify(
        {scores: {[k]: {value: '5', t: 1, from: ''}}, texts: {}}))""", [owner, subs[7]])
    page.wait_for_function("(r) => document.querySelector('[data-mindeval-saved]')"
                           "?.getAttribute('data-mindeval-refused') !== r", arg=refused_before)
    page.wait_for_function(NOTHING_WAITING_JS, timeout=WAIT_MS)
    settle(page)
    whole_rating(ws, v, aid, {subs[0]: 2, subs[7]: 5})
    assert page.get_attribute("#mindeval-restored", "data-mindeval-restored") == "1"


def test_two_tabs_never_silently_revert_each_other(app, tmp_path):
    """Tab 1 sets a sub-axis 3 -> 5; tab 2, still showing 3, saves another sub-axis: refused,
    tab 2 is reloaded with a visible message showing the newer value, nothing reverted."""
    base, ws = app
    subs = [s.id for s in ws.subaxes()]
    coh, other = subs.index("coherence_style"), subs.index("evidence_based_intervention")
    gen = open_browser(tmp_path, 1280, 720)
    tab1 = next(gen)
    try:
        open_rating(tab1, base)
        radio = lambda p, i, s: p.locator('.st-key-rating-pane [data-testid="stRadio"]').nth(i).locator(  # noqa: E731
            "label").filter(has_text=re.compile(rf"^{s}$")).click()
        radio(tab1, coh, "3")
        want = [None] * 9
        want[coh] = "3"
        stored(tab1, want)
        tab2 = tab1.context.new_page()
        tab2.goto(tab1.url)  # the same transcript, showing 3
        pane_ready(tab2, 9)
        stored(tab2, want)
        radio(tab1, coh, "5")
        want[coh] = "5"
        stored(tab1, want)
        radio(tab2, other, "4")  # tab 2 still shows 3 for coherence
        tab2.get_by_text("changed in another tab or device").wait_for()
        stored(tab2, want)  # refreshed: shows the newer 5, and its refused change is not stored
        body = tab2.inner_text("body")
        assert "is now 5" in body and "showed 3" in body
        v = viewer(ws, "demo", DEMO_CODE)
        aid = int(tab2.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
        whole_rating(ws, v, aid, {"coherence_style": 5})
        tab2.on("dialog", lambda d: d.accept())
        tab2.reload()  # the refused change is not kept to be sent again
        pane_ready(tab2, 9)
        stored(tab2, want)
        settle(tab2)
        whole_rating(ws, v, aid, {"coherence_style": 5})
    finally:
        gen.close()


def test_mouse_only_rating_with_a_justification(app, page):
    """Every score and the justification by mouse at 1280x720; digits typed into the box stay
    text (they never re-score); Escape leaves the box and keys rate again."""
    base, ws = app
    open_rating(page, base)
    clicks = 0
    groups = page.locator('.st-key-rating-pane [data-testid="stRadio"]')
    want = [str(1 + i % 6) for i in range(9)]
    for i, score in enumerate(want):
        groups.nth(i).locator("label").filter(has_text=re.compile(rf"^{score}$")).click()
        clicks += 1
    stored(page, want)
    for label in ("Justification", "Safety concerns (optional)"):
        box = page.get_by_label(label)
        assert box.bounding_box()["height"] > 30
        size = page.evaluate("(l) => document.querySelector(`textarea[aria-label=\"${l}\"]`)"
                             ".closest('[data-testid=stElementContainer]').getBoundingClientRect().height", label)
        assert size > 30, f"{label}: its container is {size} px high"
    page.get_by_label("Justification").click()
    clicks += 1
    text = "Scores 2 and 6; N/A nowhere. Up, down: 5 turns."
    page.keyboard.type(text)
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Escape")  # leaves the box (and stores it); the keys rate again
    page.wait_for_function("() => document.activeElement?.tagName !== 'TEXTAREA'")
    v = viewer(ws, "demo", DEMO_CODE)
    aid = int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
    page.wait_for_function("(t) => JSON.parse(document.querySelector('[data-mindeval-saved]')"
                           ".getAttribute('data-mindeval-texts')).justification === t", arg=text)
    assert [str(ws.item(v, aid).values[s.id]) for s in ws.subaxes()] == want  # no digit re-scored anything
    page.get_by_role("button", name="Submit rating").click()
    clicks += 1
    page.get_by_text("Rating submitted").wait_for()
    item = ws.item(v, aid)
    assert item.state == "submitted" and item.justification == text
    whole_rating(ws, v, aid, as_values(want, ws.subaxes()), justification=text)
    assert clicks == 11


def test_keyboard_rating_lands_in_the_database(app, page):
    base, ws = app
    open_rating(page, base)
    keys = []
    for n, sub in enumerate(ws.subaxes()):
        keys.append("n" if sub.allow_na and n % 2 else str(1 + n % 6))
    for k in keys:
        page.keyboard.press(k)
        page.wait_for_timeout(40)
    saved(page)
    shown, db = shown_vs_saved(page, ws)
    want = ["N/A" if k == "n" else k for k in keys]
    assert shown == db == want
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Justification"
    page.keyboard.type("Kind, a little rushed.")  # no click: the last score moved on to the text box
    page.keyboard.press("Control+Enter")
    page.get_by_text("Rating submitted").wait_for()
    v = viewer(ws, "demo", DEMO_CODE)
    first = ws.queue(v, 1)[0].assignment_id
    item = ws.item(v, first)
    assert item.state == "submitted"
    whole_rating(ws, v, first, as_values(want, ws.subaxes()), justification="Kind, a little rushed.")


def test_five_subaxes_and_submit_fit_at_1280x720_and_turns_can_be_found(app, page):
    base, ws = app
    open_rating(page, base)
    visible = page.evaluate("""() => {
      const pane = document.querySelector('.st-key-rating-pane').getBoundingClientRect();
      return [...document.querySelectorAll('.st-key-rating-pane [data-testid="stRadio"]')]
        .map(g => g.getBoundingClientRect())
        .filter(r => r.top >= Math.max(0, pane.top) && r.bottom <= Math.min(window.innerHeight, pane.bottom)).length;
    }""")
    submit = page.get_by_role("button", name="Submit rating").bounding_box()
    scrolled = page.evaluate("() => document.scrollingElement.scrollTop")
    Path("test-artifacts").mkdir(exist_ok=True)
    page.screenshot(path="test-artifacts/rate-1280x720.png")
    assert visible >= 5, f"only {visible} sub-axes visible without scrolling"
    assert scrolled == 0 and submit["y"] >= 0 and submit["y"] + submit["height"] <= 720, submit

    n_turns = page.locator(".mindeval-transcript [data-turn]").count()
    page.get_by_placeholder(re.compile("Jump to turn")).click()
    page.get_by_role("option", name=str(n_turns), exact=True).click()
    settle(page)
    in_view = f"""() => {{
      const pane = document.querySelector('.mindeval-transcript .tr-box')?.getBoundingClientRect();
      const r = document.querySelector('.mindeval-transcript [data-turn="{n_turns}"]')?.getBoundingClientRect();
      return !!(pane && r) && r.top >= pane.top - 1 && r.top < pane.bottom; }}"""
    try:  # the pane scrolls after the rerun the choice starts: wait for it, however busy the machine
        page.wait_for_function(in_view, timeout=30_000)
    except PlaywrightTimeout:
        pytest.fail("the chosen turn was not scrolled into view")

    page.get_by_placeholder("Search the transcript").fill("zzz-not-there")
    page.keyboard.press("Enter")
    page.get_by_text(re.compile(r"0 of \d+ turns contain")).wait_for()
    assert page.locator(".mindeval-transcript [data-turn]").count() == 0
    v = viewer(ws, "demo", DEMO_CODE)
    whole_rating(ws, v, int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment")), {})


@pytest.fixture
def target_app(tmp_path):
    """A running app whose only study rates on a categorical target's form (``demo`` rates it)."""
    url = f"sqlite:///{tmp_path / 'target.db'}"
    ws = Workspace(url)
    ws.add_annotator(SYSTEM, "demo", code=DEMO_CODE)
    add_target_study(ws)
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        yield f"http://127.0.0.1:{port}/", ws
    finally:
        stop(proc)
        ws.close()


def test_a_categorical_form_is_rated_with_the_keyboard(target_app, page):
    base, ws = target_app
    study = ws.studies(SYSTEM)[0]
    g = ws.guidelines(study.id)
    subs = g.human_subaxes
    sign_in(page, base)
    page.get_by_role("button", name="Continue rating").click()
    page.locator('.st-key-rating-pane [data-testid="stRadio"]').nth(len(subs) - 1).wait_for()
    settle(page)
    body = page.inner_text("body")
    assert all(lv.label in body for lv in g.levels)
    assert "1 = Best practice · 2 = Suboptimal · 3 = Potential for harm" in body
    # key n picks the n-th level; N marks N/A where the form offers it, and is ignored elsewhere
    keys = ["3" if n % 2 == 0 else ("n" if s.allow_na else "2") for n, s in enumerate(subs)]
    assert "n" in keys and "3" in keys
    page.keyboard.press("n")  # the first sub-axis takes no N/A: nothing happens, focus stays
    for k in keys:
        page.keyboard.press(k)
        page.wait_for_timeout(40)
    saved(page)
    v = viewer(ws, "demo", DEMO_CODE)
    aid = ws.queue(v, study.id)[0].assignment_id
    item = ws.item(v, aid)
    na = item.scale.na_value
    want = [na if k == "n" else g.levels[int(k) - 1].value for k in keys]
    assert [item.values.get(s.id) for s in subs] == want
    assert page.evaluate(SHOWN_SCORES_JS) == ["N/A" if k == "n" else g.levels[int(k) - 1].label for k in keys]
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Justification"
    page.keyboard.type("Missed the goodbye in turn 3.")
    page.keyboard.press("Control+Enter")
    page.get_by_text("Rating submitted").wait_for()
    item = ws.item(v, aid)
    assert item.state == "submitted"
    whole_rating(ws, v, aid, {s.id: w for s, w in zip(subs, want)}, justification="Missed the goodbye in turn 3.")
    assert 0 in want and g.is_harm(0)  # the harm level was rated by key, stored as its value 0


# Text a rater may type that the page's HTML sanitiser treats specially: it round-trips byte for byte.
TRICKY_TEXT = 'Turn 3 </script> then </title> <!-- "quoted" \'single\' & <b>bold</b> ]]> --> 🙂 done'


def test_a_justification_with_markup_is_stored_and_shown_as_saved(app, page):
    """A justification holding ``</script>``, ``</title>``, ``<!--``, quotes and emoji is stored
    byte for byte and the save line then says so (the stored-state marker lost such text to the
    page's HTML sanitiser, and the line said "Text not saved yet" forever)."""
    base, ws = app
    open_rating(page, base)
    page.get_by_label("Justification").click()
    page.keyboard.insert_text(TRICKY_TEXT)
    page.keyboard.press("Escape")  # leaves the box and stores it
    v = viewer(ws, "demo", DEMO_CODE)
    aid = int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
    page.wait_for_function("(t) => JSON.parse(document.querySelector('[data-mindeval-saved]')"
                           "?.getAttribute('data-mindeval-texts') || '{}').justification === t", arg=TRICKY_TEXT)
    saved(page)
    assert "Text not saved yet" not in page.inner_text("body")
    assert page.get_by_label("Justification").input_value() == TRICKY_TEXT
    whole_rating(ws, v, aid, {}, justification=TRICKY_TEXT)


def test_text_typed_but_not_yet_saved_survives_a_reload(app, page):
    """A justification still in its box (not committed) when the page reloads: leaving asks
    first, and after the reload the text is back in the box and stored."""
    base, ws = app
    open_rating(page, base)
    asked = []
    page.on("dialog", lambda d: (asked.append(d.type), d.accept()))
    text = "Validated first, then 3 questions at once (turn 6)."
    page.get_by_label("Justification").click()
    page.keyboard.type(text)
    page.get_by_text("Text not saved yet").wait_for()
    page.reload()
    page.wait_for_function("(t) => JSON.parse(document.querySelector('[data-mindeval-saved]')"
                           "?.getAttribute('data-mindeval-texts') || '{}').justification === t", arg=text)
    assert page.get_by_label("Justification").input_value() == text
    assert asked == ["beforeunload"]
    v = viewer(ws, "demo", DEMO_CODE)
    aid = int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
    whole_rating(ws, v, aid, {}, justification=text)


def click_score(page, i: int, score: str) -> None:
    page.locator('.st-key-rating-pane [data-testid="stRadio"]').nth(i).locator("label").filter(
        has_text=re.compile(rf"^{score}$")).click()


def kept_in_browser(page, n: int) -> None:
    """Wait until the page keeps ``n`` changes it has not seen stored (and says so)."""
    page.wait_for_function("""(n) => Object.keys(localStorage).filter(k => k.startsWith('mindeval-rate:'))
      .map(k => JSON.parse(localStorage.getItem(k))).reduce((a, x) => a + Object.keys(x.scores).length
      + Object.keys(x.texts).length, 0) === n""", arg=n)
    page.wait_for_function("() => document.querySelector('[data-mindeval-saved]')"
                           "?.getAttribute('data-mindeval-state') === 'saving'")


def test_scores_of_a_tab_that_crashed_are_restored_by_the_next_tab(app, tmp_path):
    """Three clicks that never reached the server (the connection drops what the page sends),
    then the tab dies without its leave prompt: a new tab on the same transcript finds
    them, says "Restored 3 unsent changes", and stores them, and nothing else."""
    base, ws = app
    gen = open_browser(tmp_path, 1280, 720)
    tab = next(gen)
    try:
        errors = page_errors(tab)
        blocked = block_sends(tab)
        open_rating(tab, base)
        assert "✓ 0 of" not in tab.inner_text("body")  # no tick while nothing is saved
        tab.get_by_text("No scores saved yet (0 of 9)").wait_for()
        subs = [s.id for s in ws.subaxes()]
        v = viewer(ws, "demo", DEMO_CODE)
        aid = int(tab.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
        url = tab.url
        blocked["on"] = True
        for i, score in ((1, "4"), (4, "2"), (8, "6")):
            click_score(tab, i, score)
        kept_in_browser(tab, 3)
        whole_rating(ws, v, aid, {})  # nothing reached the server
        assert errors == []
        ctx = tab.context
        tab.close()  # the tab dies: no leave prompt (run_before_unload is off), its sessionStorage gone
        new = ctx.new_page()
        new.set_default_timeout(WAIT_MS)
        new_errors = page_errors(new)
        new.goto(url)
        new.locator("#mindeval-restored").wait_for()
        new.wait_for_function(NOTHING_WAITING_JS, timeout=WAIT_MS)
        settle(new)
        assert new.get_attribute("#mindeval-restored", "data-mindeval-restored") == "3"
        assert "Restored 3 unsent changes" in new.inner_text("#mindeval-restored")
        whole_rating(ws, v, aid, {subs[1]: 4, subs[4]: 2, subs[8]: 6})
        assert new.evaluate(SHOWN_SCORES_JS)[:9] == [None, "4", None, None, "2", None, None, None, "6"]
        assert "✓ 3 of 9 scores saved" in new.inner_text("body")
        assert new_errors == []
    finally:
        gen.close()


def test_changes_sent_while_the_server_restarts_are_sent_again(tmp_path, page):
    """Two clicks whose messages never reach the server, then the server restarts: the page
    sends them again by itself (no click, no reload) and they are stored, and nothing else."""
    url = f"sqlite:///{tmp_path / 'restart.db'}"
    make_workspace(url).close()
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    ws = Workspace(url)
    try:
        wait_healthy(port, proc)
        blocked = block_sends(page)
        open_rating(page, f"http://127.0.0.1:{port}/")
        subs = [s.id for s in ws.subaxes()]
        v = viewer(ws, "demo", DEMO_CODE)
        aid = int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
        blocked["on"] = True
        click_score(page, 2, "3")
        click_score(page, 6, "5")
        kept_in_browser(page, 2)
        stop(proc)
        blocked["on"] = False
        proc = start_app(url, port, tmp_path / "app2.log")
        wait_healthy(port, proc)
        page.wait_for_function(NOTHING_WAITING_JS, timeout=WAIT_MS)
        settle(page)
        whole_rating(ws, v, aid, {subs[2]: 3, subs[6]: 5})
    finally:
        stop(proc)
        ws.close()


def test_a_marker_without_texts_raises_no_error(app, page):
    """The page script reads the stored texts defensively: a marker that lacks them (as one
    rendered by another version of the page) raises no error, and nothing is stored."""
    base, ws = app
    open_rating(page, base)
    page.evaluate("""() => { const m = document.querySelector('[data-mindeval-saved]');
      m.removeAttribute('data-mindeval-texts');
      localStorage.setItem(`mindeval-rate:${m.getAttribute('data-mindeval-owner')}|other`,
        JSON.stringify({scores: {}, texts: {justification: {value: 'x', t: 1, from: ''}}}));
      sessionStorage.setItem('mindeval-rate-pending', JSON.stringify({[m.getAttribute('data-mindeval-assignment')]:
        {scores: {}, texts: {justification: {value: 'x', t: 1, from: ''}}}})); }""")
    page.wait_for_function("() => !localStorage.getItem(`mindeval-rate:${document.querySelector("
                           "'[data-mindeval-saved]').getAttribute('data-mindeval-owner')}|other`)")
    page.wait_for_function(NOTHING_WAITING_JS, timeout=WAIT_MS)
    settle(page)
    v = viewer(ws, "demo", DEMO_CODE)
    whole_rating(ws, v, int(page.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment")), {},
                 justification="x")


BROKEN_TREE_JS = ("() => window.dispatchEvent(new ErrorEvent('error', "
                  "{message: 'Uncaught Error: Cannot set a node at a delta path'}))")


def test_a_page_whose_streamlit_tree_broke_reloads_itself_and_sends_what_it_kept(app, tmp_path):
    """Streamlit's frontend can throw "Cannot set a node at a delta path" when a fragment's output
    arrives for a place a newer run removed, and then stops updating (seen once in CI). The page
    reloads itself without a leave prompt, sends the changes it kept, and does not reload in a loop."""
    base, ws = app
    gen = open_browser(tmp_path, 1280, 720)
    tab = next(gen)
    try:
        errors = page_errors(tab)
        prompts: list[str] = []
        tab.on("dialog", lambda d: (prompts.append(d.type), d.dismiss()))  # a dismissed prompt stops the reload
        blocked = block_sends(tab)
        open_rating(tab, base)
        subs = [s.id for s in ws.subaxes()]
        v = viewer(ws, "demo", DEMO_CODE)
        aid = int(tab.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
        blocked["on"] = True
        for i, score in ((0, "3"), (5, "5")):
            click_score(tab, i, score)
        kept_in_browser(tab, 2)
        with tab.expect_navigation():
            tab.evaluate(BROKEN_TREE_JS)
        blocked["on"] = False
        pane_ready(tab, 9)
        tab.wait_for_function(NOTHING_WAITING_JS, timeout=WAIT_MS)
        whole_rating(ws, v, aid, {subs[0]: 3, subs[5]: 5})
        assert prompts == []
        assert tab.evaluate("() => sessionStorage.getItem('mindeval-rate-recovered')")  # when it reloaded
        when = tab.evaluate("() => { const t = String(Date.now()); "
                            "sessionStorage.setItem('mindeval-rate-recovered', t); return t; }")
        tab.evaluate(BROKEN_TREE_JS)  # again within 10 s of a reload: no second one (no loop)
        assert tab.evaluate("() => sessionStorage.getItem('mindeval-rate-recovered')") == when
        assert errors == []
    finally:
        gen.close()


STALE_COPY_JS = """() => { const m = document.querySelector('[data-mindeval-saved]');
  const c = m.cloneNode(true); c.setAttribute('data-mindeval-run', '0'); c.id = 'mindeval-stale-copy';
  m.parentNode.insertBefore(c, m);
  if (document.querySelectorAll('[data-mindeval-saved]').length !== 2) throw new Error('no stale copy'); }"""


def _click_kept_across_a_reload(app, tmp_path, i: int, score: str, before: str, after: str) -> None:
    """With the page's messages held back: run ``before`` (JS), click ``score`` on sub-axis ``i``, run
    ``after``; the click is kept in the browser, and after a reload it is the whole stored rating."""
    base, ws = app
    gen = open_browser(tmp_path, 1280, 720)
    tab = next(gen)
    try:
        blocked = block_sends(tab)
        open_rating(tab, base)
        subs = [s.id for s in ws.subaxes()]
        v = viewer(ws, "demo", DEMO_CODE)
        aid = int(tab.get_attribute("[data-mindeval-saved]", "data-mindeval-assignment"))
        blocked["on"] = True
        tab.evaluate(before)
        click_score(tab, i, score)
        tab.evaluate(after)
        kept_in_browser(tab, 1)  # kept at the click: nothing after it remembers a click
        tab.reload()
        blocked["on"] = False
        pane_ready(tab, 9)
        tab.wait_for_function(NOTHING_WAITING_JS, timeout=WAIT_MS)
        whole_rating(ws, v, aid, {subs[i]: int(score)})
    finally:
        gen.close()


def test_a_score_clicked_beside_a_stale_copy_of_its_form_is_kept_across_a_reload(app, tmp_path):
    """During a busy run Streamlit can show a stale copy of the rating's marker beside the new one
    (CI lost the last two of nine clicks this way, reloaded 100 ms later). A score clicked then is
    still kept in the browser and stored after the reload."""
    _click_kept_across_a_reload(app, tmp_path, 7, "2", STALE_COPY_JS,
                                "() => document.getElementById('mindeval-stale-copy').remove()")


def test_a_score_clicked_before_the_form_s_marker_arrives_is_kept_across_a_reload(app, tmp_path):
    """A freshly loaded page shows the form before its stored-state marker (rendered after it; CI
    saw this right after the page reloaded itself). A score clicked in that moment is kept in the
    browser once the marker comes, and stored after a reload."""
    _click_kept_across_a_reload(
        app, tmp_path, 3, "5",
        """() => { const m = document.querySelector('[data-mindeval-saved]');
          window.__marker = [m, m.parentNode, m.nextSibling]; m.remove(); }""",  # not arrived yet
        "() => { const [m, p, next] = window.__marker; p.insertBefore(m, next); }")  # it arrives
