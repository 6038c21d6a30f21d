"""Gold items stay invisible in a real browser (issue 35): while her qualification is pending a
rater's pages show only her qualification items; after passing, her list, counts, labels, order
and transcript ids carry no trace of which items are gold.

Headless Chromium against ``mindeval app``; every wait is on what the page shows (WAIT_MS).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from appkit import free_port, start_app, stop, wait_healthy
from browserkit import WAIT_MS, checked_page, choose, settle, sign_in
from sqlalchemy import select
from test_app_gold import _kinds, _rate_all, _study

from annotation_app.services import Workspace
from annotation_app.store.tables import AssignmentRow, ItemRow

pytestmark = pytest.mark.browser
CODE = "alice-code-123456"
TELLS = re.compile(r"gold|qualif|known answer|expected rating", re.I)  # words that would mark an item


@pytest.fixture
def page(tmp_path):
    yield from checked_page(tmp_path, 1400, 1000)


def _names(ws: Workspace, who: int) -> dict[int, str]:
    """Assignment id -> the member's name, in the annotator's queue order (read from the database)."""
    with ws.db.read() as s:
        rows = s.execute(select(AssignmentRow.id, ItemRow.member_attributes).join(ItemRow, ItemRow.id == AssignmentRow.item_id)
                         .where(AssignmentRow.annotator_id == who).order_by(AssignmentRow.position)).all()
    return {aid: str(attrs["name"]) for aid, attrs in rows}


def _body(page) -> str:
    settle(page)
    return page.locator("body").inner_text()


def _options(page) -> list[str]:
    """The labels of the rating page's "Go to transcript" list, in order (the list is closed again)."""
    box = page.locator('[class*="st-key-pick_"] [data-testid="stSelectbox"]')
    box.click()
    options = page.get_by_role("option")
    options.first.wait_for(timeout=WAIT_MS)
    texts = [t.strip() for t in options.all_inner_texts()]
    page.keyboard.press("Escape")
    settle(page)
    return texts


def _shown_item(page, want: int | None = None) -> int:
    """The transcript (assignment id) the rating page names in its URL (waiting for ``want`` when given)."""
    page.wait_for_function("(w) => { const i = new URLSearchParams(location.search).get('item');"
                           " return i !== null && (w === null || i === String(w)); }", arg=want, timeout=WAIT_MS)
    return int(parse_qs(urlparse(page.url).query)["item"][0])


def test_a_qualifying_rater_sees_only_her_qualification_items_and_then_no_trace_of_gold(page, tmp_path):
    url = f"sqlite:///{tmp_path / 'gold.db'}"
    ws = Workspace(url)  # 3 gold items: 2 for the qualification, the third mixed among alice's 3 real items
    _study(ws, tmp_path, ["alice"], k=1, gold_rate=0.3, qualify=2, more_gold=("demo:demo-lian-1",))
    kinds, names = _kinds(ws, 1), _names(ws, 1)
    qualify = [a for a, k in kinds.items() if k == "qualify"]
    later_gold = next(a for a, k in kinds.items() if k == "gold")
    hidden = [names[a] for a in names if a not in qualify]
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        base = f"http://127.0.0.1:{port}/"
        sign_in(page, base, "alice", CODE)
        page.get_by_text("0 of 2 transcripts rated").first.wait_for()
        home = _body(page)
        assert not TELLS.search(home), home
        # pending: the rating page lists exactly her qualification items, and nothing else anywhere
        page.get_by_role("button", name="Continue rating").click()
        page.get_by_text("Transcript 1 of 2", exact=False).first.wait_for()
        assert _options(page) == [f"Transcript {n} · {names[a]} — ○ not started" for n, a in enumerate(qualify, 1)]
        assert _shown_item(page) in qualify
        text = _body(page)
        assert not TELLS.search(text) and not [n for n in hidden if n in text], text
        page.goto(f"{base}rate?study=1&item={later_gold}")  # a link to the later gold item opens nothing of it
        page.get_by_text("Transcript 1 of 2", exact=False).first.wait_for()
        assert _shown_item(page) in qualify and names[later_gold] not in _body(page)
        _rate_all(ws, "alice", lambda name: 3)  # both right: she passes (answered through the service)
        # passed: all six in her seeded order, labelled alike; counts are totals; ids follow the order
        page.goto(f"{base}rate?study=1&item={qualify[0]}")
        page.get_by_text("2 of 6 transcripts submitted").first.wait_for()
        marks = {a: "● submitted" if a in qualify else "○ not started" for a in names}
        assert _options(page) == [f"Transcript {n} · {names[a]} — {marks[a]}" for n, a in enumerate(names, 1)]
        assert list(names) == list(range(min(names), min(names) + 6))  # consecutive, gold among them
        seen = {}
        for aid in (later_gold, next(a for a, k in kinds.items() if k == "real")):
            n = list(names).index(aid) + 1
            choose(page, page.locator('[class*="st-key-pick_"] [data-testid="stSelectbox"]'),
                   re.compile(rf"^Transcript {n} · "))
            page.get_by_text(f"Transcript {n} of 6", exact=False).first.wait_for()
            assert _shown_item(page, aid) == aid
            text = _body(page)
            assert "2 of 6 transcripts submitted" in text and not TELLS.search(text), text
            seen[aid] = sorted(page.locator('[data-testid="stAlert"]').all_inner_texts())
        assert seen[later_gold] == seen[next(iter(set(seen) - {later_gold}))]  # same notices on gold and real
        page.goto(base)
        page.get_by_text("2 of 6 transcripts rated").first.wait_for()
        assert not TELLS.search(_body(page))
    finally:
        stop(proc)
        ws.close()
