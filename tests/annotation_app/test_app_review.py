"""Disagreement review: items whose raters differ by >= N points on a sub-axis, side by side with
their justifications, and an adjudicated rating stored as its own rater ("adjudicated") that
exports mark, the Results page leaves out and metaeval uses only when asked."""

from __future__ import annotations

import csv
import io
import json

import pytest
from appkit import ADMIN_CODE, DEMO_CODE, component, component_send, sign_in, viewer
from sqlalchemy import select, update

from annotation_app.services import SYSTEM, AccessDenied, RatingIncomplete, Workspace
from annotation_app.store import AnnotatorRow, AssignmentRow, read_ratings
from metaeval.sources import load_study

BEA = "BEA-CODE-000001"


def _rate(ws: Workspace, v, item_scores: dict[int, dict[str, int]], why: str) -> None:
    """Submit ``v``'s rating of each item: 4 on every sub-axis unless ``item_scores`` says otherwise."""
    with ws.db.read() as s:
        mine = dict(s.execute(select(AssignmentRow.item_id, AssignmentRow.id)
                              .where(AssignmentRow.annotator_id == v.id, AssignmentRow.study_id == 1)).all())
    for item, aid in mine.items():
        for sub in ws.subaxes(1):
            ws.save_value(v, aid, sub.id, item_scores.get(item, {}).get(sub.id, 4))
        ws.save_text(v, aid, justification=f"{why} on item {item}")
        ws.submit(v, aid)


@pytest.fixture
def two_raters(demo_ws):
    demo_ws.add_annotator(SYSTEM, "bea", code=BEA)
    demo_ws.assign(SYSTEM, 1, annotators=["demo", "bea"], k=2)
    demo, bea = viewer(demo_ws, "demo", DEMO_CODE), viewer(demo_ws, "bea", BEA)
    with demo_ws.db.read() as s:
        items = sorted(set(s.scalars(select(AssignmentRow.item_id).where(AssignmentRow.study_id == 1))))
    first = demo_ws.subaxes(1)[0].id
    last = demo_ws.subaxes(1)[-1].id
    _rate(demo_ws, demo, {}, "demo thinks")
    _rate(demo_ws, bea, {items[0]: {first: 1}, items[1]: {last: 5}}, "bea thinks")  # gaps 3 and 1
    return demo_ws, items, first, last


def test_items_with_a_large_gap_are_listed_with_every_rating_and_justification(two_raters):
    ws, items, first, last = two_raters
    found = ws.disagreements(SYSTEM, 1, 2)
    assert [(d.item_id, d.gaps) for d in found] == [(items[0], {first: 3})]
    d = found[0]
    assert sorted((r.annotator, r.values[first], r.justification) for r in d.ratings) == [
        ("bea", 1, f"bea thinks on item {items[0]}"), ("demo", 4, f"demo thinks on item {items[0]}")]
    assert d.adjudicated is None and d.messages and "Item " in d.label
    assert [(x.item_id, x.gaps) for x in ws.disagreements(SYSTEM, 1, 1)] == [(items[0], {first: 3}),
                                                                              (items[1], {last: 1})]
    assert ws.disagreements(SYSTEM, 1, 4) == []
    with pytest.raises(AccessDenied):
        ws.disagreements(viewer(ws, "demo", DEMO_CODE), 1, 2)


def test_an_adjudicated_rating_is_its_own_rater_marked_in_exports_and_left_out_of_agreement(two_raters, tmp_db_url):
    ws, items, first, _last = two_raters
    values = {s.id: 4 for s in ws.subaxes(1)}
    with pytest.raises(RatingIncomplete):
        ws.adjudicate(SYSTEM, 1, items[0], {first: 2}, "too short")
    with pytest.raises(RatingIncomplete):
        ws.adjudicate(SYSTEM, 1, items[0], values, "   ")  # a justification is required, as for raters
    before = ws.results(SYSTEM, 1)
    assert ws.adjudicate(SYSTEM, 1, items[0], values | {first: 2}, "bea missed the validation") == 1
    assert ws.adjudicate(SYSTEM, 1, items[0], values | {first: 3}, "on reflection, 3") == 2  # a revision
    d = ws.disagreements(SYSTEM, 1, 2)[0]
    assert d.adjudicated.annotator == "adjudicated" and d.adjudicated.values[first] == 3
    assert {r.annotator for r in d.ratings} == {"demo", "bea"}  # the adjudicated rating is no rater's

    people = {p.name: p for p in ws.annotators(SYSTEM)}
    assert not people["adjudicated"].can_sign_in
    assert ws.results(SYSTEM, 1).n_ratings == before.n_ratings == 12  # means and agreement: raters only
    assert ws.assign(SYSTEM, 1, k=2).created == 0  # nobody new is assigned; the adjudicator is not a rater

    rows = list(csv.DictReader(io.StringIO(ws.export_text(SYSTEM, 1, "csv"))))
    marked = [r for r in rows if r["adjudicated"] == "yes"]
    assert len(rows) == 13 and [(r["annotator"], r[first], r["revision"]) for r in marked] == [("adjudicated", "3", "2")]
    jl = [json.loads(x) for x in ws.export_text(SYSTEM, 1, "jsonl").splitlines()]
    assert [(r["annotator"], r["values"][first]) for r in jl if r.get("adjudicated")] == [("adjudicated", 3)]
    assert sum("adjudicated" in r for r in jl) == 1
    authors = ws.export_text(SYSTEM, 1, "authors")
    assert '"adjudicated"' not in authors  # the authors' layout has no place for it

    humans = load_study(read_ratings(tmp_db_url, 1))
    assert sorted(r.label for r in humans.raters) == ["bea", "demo"]  # default: raters only
    with_adj = load_study(read_ratings(tmp_db_url, 1), adjudicated=True)
    assert sorted(r.label for r in with_adj.raters) == ["adjudicated", "bea", "demo"]


def test_the_review_page_shows_the_disagreement_and_saves_an_adjudicated_rating(two_raters):
    ws, items, first, _last = two_raters
    at = sign_in("admin", ADMIN_CODE)
    at.switch_page("views/admin_review.py").run()
    assert not at.exception, at.exception
    assert len(at.expander) >= 1
    table = at.dataframe[0].value
    assert list(table.columns)[:3] == ["Sub-axis", "demo", "bea"] or list(table.columns)[:3] == ["Sub-axis", "bea", "demo"]
    text = " ".join(m.value for m in at.markdown)
    assert f"demo thinks on item {items[0]}" in text and f"bea thinks on item {items[0]}" in text
    at.number_input(key="review_gap").set_value(1).run()
    assert at.caption[0].value.startswith("2 item(s)")
    at.number_input(key="review_gap").set_value(2).run()

    _, form = component(at, "mindeval_adj")
    assert form["item"] == items[0]
    values = form["values"] | {first: 2}
    component_send(at, "mindeval_adj", "save", {"tab": "t", "seq": 1, "item": items[0], "values": values,
                                                "justification": "validation was partial"}, trigger=True)
    assert not at.exception, at.exception
    assert any("Adjudicated rating" in s.value for s in at.success), [s.value for s in at.success]
    d = ws.disagreements(SYSTEM, 1, 2)[0]
    assert d.adjudicated.values[first] == 2 and d.adjudicated.justification == "validation was partial"
    assert all(v == 4 for k, v in d.adjudicated.values.items() if k != first)  # the raters' median elsewhere


def test_rater_names_are_shown_as_written_and_never_as_markup(two_raters):
    """Table headers are plain text (no Markdown escapes such as ``Dr\\. Chen``); the cards escape."""
    ws, _items, _first, _last = two_raters

    odd = "Dr. Chen *x* <b>bold</b> [link](https://example.org)"
    with ws.db.write() as s:
        s.execute(update(AnnotatorRow).where(AnnotatorRow.name == "bea").values(name=odd))
    at = sign_in("admin", ADMIN_CODE)
    at.switch_page("views/admin_review.py").run()
    assert not at.exception, at.exception
    assert odd in list(at.dataframe[0].value.columns)
    cards = [m.value for m in at.markdown if "bold" in m.value]
    assert cards and all("<b>" not in c and "](https" not in c for c in cards), cards


def test_previous_and_next_land_on_the_item_they_name_even_when_a_click_arrives_twice(two_raters):
    """A click applied again after a rerun cut short had already moved the page (seen beside CPU
    hogs: Previous on the second item showed the last one) lands where the first did; the first
    item's Previous never wraps round to the last."""
    ws, items, _first, _last = two_raters
    at = sign_in("admin", ADMIN_CODE)
    at.switch_page("views/admin_review.py").run()
    at.number_input(key="review_gap").set_value(1).run()
    assert at.caption[0].value.startswith("2 item(s)")
    heading = lambda: at.subheader[0].value.replace("\\", "")  # noqa: E731  (the heading is escaped Markdown)
    assert heading().startswith("Item 1:")
    at.button(key="review_next").click().run()
    assert heading().startswith("Item 2:")
    at.button(key="review_prev").click().run()
    assert heading().startswith("Item 1:")
    at.button(key="review_next").click().run()
    # the Previous click applied once already (the run it started was cut short), then again
    at.session_state["review_item"] = ws.disagreements(SYSTEM, 1, 1)[0].item_id
    at.button(key="review_prev").click().run()
    assert heading().startswith("Item 1:"), heading()
    assert not at.exception, at.exception


def test_an_adjudication_is_stored_on_the_item_its_form_names_once(two_raters):
    """The form's Save names its item: sent while the page has moved to another item (a slow
    rerun once left the previous item's form on screen under the new header), it is stored on the
    item it names, and a Save that reaches the server twice (same tab and seq) is stored once."""
    ws, items, first, _last = two_raters
    at = sign_in("admin", ADMIN_CODE)
    at.switch_page("views/admin_review.py").run()
    at.number_input(key="review_gap").set_value(1).run()  # both items listed
    _, form = component(at, "mindeval_adj")
    assert form["item"] == items[0]
    at.session_state["review_item"] = items[1]  # the page moved on; the form of items[0] sends its Save
    text = 'Partial </script> </title> <!-- "q" \'s\' 🙂'
    save = {"tab": "t", "seq": 1, "item": items[0], "values": form["values"], "justification": text}
    component_send(at, "mindeval_adj", "save", save, trigger=True)
    assert not at.exception, at.exception
    assert any("revision 1" in s.value for s in at.success), [s.value for s in at.success]
    now = {d.item_id: d for d in ws.disagreements(SYSTEM, 1, 1)}
    assert now[items[0]].adjudicated.justification == text
    assert now[items[1]].adjudicated is None
    assert component(at, "mindeval_adj")[1]["item"] == items[1]  # the page shows the item it moved to
    component_send(at, "mindeval_adj", "save", save, trigger=True)  # the same Save again
    assert not any("revision 2" in s.value for s in at.success), [s.value for s in at.success]
