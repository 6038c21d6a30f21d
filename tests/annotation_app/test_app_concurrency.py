"""Two tabs or two annotators at once never lose, duplicate or overwrite a rating.

Each "tab" is its own Workspace (own engine, own process-level lock), so only the
database's locks and constraints stand between them — as with two server processes.
"""

from __future__ import annotations

import threading

from appkit import DEMO_CODE, SYSTEM, make_workspace, viewer
from sqlalchemy import func, select

from annotation_app.services import Conflict, Workspace
from annotation_app.store import RatingRevisionRow, RatingRow
from mindeval.store.tables import TurnRow


def _race(*fns) -> list[object]:
    """Run the functions at the same moment; return each one's result or exception."""
    barrier = threading.Barrier(len(fns))
    out: list[object] = [None] * len(fns)

    def run(i, fn):
        barrier.wait()
        try:
            out[i] = fn()
        except Exception as exc:  # collected and asserted on by the caller
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def _complete(ws: Workspace, v, aid: int, value: int = 4) -> None:
    for sub in ws.subaxes():
        ws.save_value(v, aid, sub.id, value)
    ws.save_text(v, aid, justification="done")


def test_two_tabs_submitting_the_same_rating_store_it_once(any_db_url):
    tab1 = make_workspace(any_db_url)
    tab2 = Workspace(any_db_url)
    v = viewer(tab1, "demo", DEMO_CODE)
    aid = tab1.queue(v, 1)[0].assignment_id
    _complete(tab1, v, aid)
    for _ in range(3):
        results = _race(lambda: tab1.submit(v, aid), lambda: tab2.submit(v, aid))
        assert sorted(type(r).__name__ for r in results) in (["Conflict", "int"],)
        tab1.revise(v, aid)
    with tab1.db.read() as s:
        assert s.scalar(select(func.count()).select_from(RatingRow)) == 1
        revs = s.scalars(select(RatingRevisionRow.revision).order_by(RatingRevisionRow.revision)).all()
    assert revs == [1, 2, 3]
    tab1.close()
    tab2.close()


def test_two_tabs_editing_different_items_of_one_draft_lose_nothing(any_db_url):
    tab1 = make_workspace(any_db_url)
    tab2 = Workspace(any_db_url)
    v = viewer(tab1, "demo", DEMO_CODE)
    aid = tab1.queue(v, 1)[0].assignment_id
    subs = [s.id for s in tab1.subaxes()]

    def edit(ws, mine):
        for round_ in range(5):
            for sub in mine:
                ws.save_value(v, aid, sub, 1 + (round_ % 6))
        return True

    assert _race(lambda: edit(tab1, subs[:5]), lambda: edit(tab2, subs[5:])) == [True, True]
    assert tab1.item(v, aid).values == {s: 5 for s in subs}
    tab1.close()
    tab2.close()


def test_nothing_slips_into_a_rating_after_it_is_submitted(any_db_url):
    tab1 = make_workspace(any_db_url)
    tab2 = Workspace(any_db_url)
    v = viewer(tab1, "demo", DEMO_CODE)
    aid = tab1.queue(v, 1)[0].assignment_id
    _complete(tab1, v, aid)

    def keep_editing():
        for n in range(200):
            try:
                tab2.save_value(v, aid, "coherence_style", 1 + n % 6)
            except Conflict:
                return n
        return None

    edits, rev = _race(keep_editing, lambda: tab1.submit(v, aid))
    assert rev == 1
    item = tab1.item(v, aid)
    assert item.state == "submitted"
    assert item.history[-1].values == item.values  # the submitted copy is the stored rating
    tab1.close()
    tab2.close()


def test_two_annotators_rating_the_same_item_at_once_both_count(any_db_url):
    ws = make_workspace(any_db_url)
    ws.add_annotator(SYSTEM, "second", code="SECOND-CODE-1")
    ws.assign(SYSTEM, 1, k=2)
    other = Workspace(any_db_url)
    a, b = viewer(ws, "demo", DEMO_CODE), viewer(other, "second", "SECOND-CODE-1")
    item_of = {}
    for w, person in ((ws, a), (other, b)):
        for e in w.queue(person, 1):
            item_of.setdefault(person.name, {})[w.item(person, e.assignment_id).messages[1].content] = e.assignment_id
    shared = next(iter(set(item_of["demo"]) & set(item_of["second"])))
    aa, bb = item_of["demo"][shared], item_of["second"][shared]
    _complete(ws, a, aa, 2)
    _complete(other, b, bb, 6)
    assert _race(lambda: ws.submit(a, aa), lambda: other.submit(b, bb)) == [1, 1]
    assert ws.item(a, aa).values["coherence_style"] == 2
    assert other.item(b, bb).values["coherence_style"] == 6
    ws.close()
    other.close()


def test_two_tabs_sending_a_roleplay_message_at_once_store_both_in_order(any_db_url, monkeypatch):
    from annotation_app import roleplay

    tab1 = make_workspace(any_db_url)
    tab2 = Workspace(any_db_url)
    v = viewer(tab1, "demo", DEMO_CODE)
    sid = tab1.sessions(v, 2)[0].session_id
    tab1.start_session(v, sid)
    # The clinician answers only once the other tab has tried: "at once" must not depend on
    # how the threads happen to be scheduled (on a busy machine one could finish first).
    tried = threading.Event()
    answer = roleplay.reply
    monkeypatch.setattr(roleplay, "reply", lambda *a, **k: (tried.wait(10), answer(*a, **k))[1])

    def send(tab, text):
        try:
            return tab.send_message(v, sid, text)
        finally:
            tried.set()  # reached by the tab that was refused (the other waits in reply)

    results = _race(lambda: send(tab1, "from tab one"), lambda: send(tab2, "from tab two"))
    assert sorted(results) == [False, True]  # one was sent, the other queued behind its reply: none refused
    with tab1.db.read() as s:
        rows = s.execute(select(TurnRow.idx, TurnRow.role, TurnRow.content).order_by(TurnRow.idx)).all()
    first = "from tab one" if results[0] is False else "from tab two"
    second = "from tab two" if first == "from tab one" else "from tab one"
    assert [(i, r) for i, r, _ in rows] == [(0, "patient"), (1, "clinician"), (2, "patient"), (3, "clinician")]
    assert (rows[0][2], rows[2][2]) == (first, second)
    assert tab1.roleplay(v, sid).queued == []
    tab1.close()
    tab2.close()


def test_first_touch_from_two_tabs_makes_one_rating_row(any_db_url):
    tab1 = make_workspace(any_db_url)
    tab2 = Workspace(any_db_url)
    v = viewer(tab1, "demo", DEMO_CODE)
    aid = tab1.queue(v, 1)[0].assignment_id
    _race(lambda: tab1.save_value(v, aid, "coherence_style", 3),
          lambda: tab2.save_text(v, aid, justification="both kept"))
    with tab1.db.read() as s:
        assert s.scalar(select(func.count()).select_from(RatingRow)) == 1
    item = tab1.item(v, aid)
    assert item.values == {"coherence_style": 3} and item.justification == "both kept"
    tab1.close()
    tab2.close()
