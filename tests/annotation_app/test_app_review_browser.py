"""Admin → Disagreements in a real browser, on the authors' 60 rated transcripts: every item is
reachable (list, Previous/Next) and adjudicable, with names shown as written."""

from __future__ import annotations

import re
import time

import pytest
from appkit import ADMIN_CODE, free_port, make_workspace, start_app, stop, wait_healthy
from browserkit import WAIT_MS, choose, open_browser, settle, sign_in

from annotation_app.services import SYSTEM

CHEN = "Dr. Chen"


@pytest.fixture
def page(tmp_path):
    yield from open_browser(tmp_path)


def _choose(page, label: str, option: re.Pattern | str, search: str = "") -> None:
    """Pick an option of a list; ``search`` is typed first (a long list shows only its first options)."""
    choose(page, page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first, option, search)


def _authors_study(tmp_path, shared_data):
    """A rating study of the authors' file, Dr. Chen rating as its first annotator: (url, workspace)."""
    url = f"sqlite:///{tmp_path / 'review.db'}"
    ws = make_workspace(url)
    ws.create_study(SYSTEM, "Authors", "rating")
    ws.add_annotator(SYSTEM, CHEN, code="CHEN-CODE-000001")
    first_rater = "b7386bab-913a-40d5-8d3e-f97d378b7b66"  # an annotator id of the authors' file
    ws.import_path(SYSTEM, "Authors", shared_data / "human_annotations.jsonl", map_annotators={first_rater: CHEN})
    return url, ws


def hold_replies(page) -> dict:
    """Route the page's Streamlit websocket through playwright; while ``flag["on"]`` what the server
    sends is held back (the page keeps showing its last render, as under load), and ``release()``
    delivers it in order. ``flag["finished"]`` counts the held script-finished messages."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    flag: dict = {"on": False, "held": [], "finished": 0}

    def handler(ws):
        server = ws.connect_to_server()
        ws.on_message(lambda m: server.send(m))

        def down(m):
            if not flag["on"]:
                ws.send(m)
                return
            flag["held"].append(m)
            if isinstance(m, bytes) and ForwardMsg.FromString(m).WhichOneof("type") == "script_finished":
                flag["finished"] += 1

        server.on_message(down)
        flag["client"] = ws

    def release():
        while flag["held"]:
            flag["client"].send(flag["held"].pop(0))
        flag["on"] = False
        while flag["held"]:
            flag["client"].send(flag["held"].pop(0))

    page.route_web_socket("**/_stcore/stream", handler)
    flag["release"] = release
    return flag


@pytest.mark.browser
def test_a_save_in_the_form_of_the_item_just_left_stores_on_that_item(page, tmp_path, shared_data):
    """Bug: after Next, the page showed the new item while the adjudication form below still belonged
    to the previous one (a slow rerun); a justification saved there was stored on the wrong item.
    Here the server's reply to Next is held back, the form of item 1 is filled and saved: the save
    names its item, so item 1 holds exactly that justification and item 2 nothing."""
    url, ws = _authors_study(tmp_path, shared_data)
    items = ws.disagreements(SYSTEM, "Authors", 2)
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        held = hold_replies(page)
        wait_healthy(port, proc)
        sign_in(page, f"http://127.0.0.1:{port}/", "admin", ADMIN_CODE)
        page.get_by_role("link", name="Disagreements").click()
        settle(page)
        _choose(page, "Study", "Authors")
        page.locator(f'.mindeval-adj[data-item="{items[0].item_id}"]').wait_for()  # item 1's form is on screen
        settle(page)
        held["on"] = True
        page.get_by_role("button", name="Next").click()
        end = time.monotonic() + WAIT_MS / 1000
        while held["finished"] < 1:  # the server has run Next (its reply is held: the page still shows item 1)
            assert time.monotonic() < end, "the server never finished the Next run"
            page.wait_for_timeout(50)
        assert page.get_attribute(".mindeval-adj", "data-item") == str(items[0].item_id)  # the form still shows item 1
        text = 'Item 1 after all </script> </title> <!-- "q" 🙂'
        page.get_by_label("Justification of the adjudicated rating").fill(text)
        page.get_by_role("button", name="Save adjudicated rating").click()
        while held["finished"] < 2:  # the server has run the save
            assert time.monotonic() < end, "the server never finished the save's run"
            page.wait_for_timeout(50)
        held["release"]()
        settle(page)
        now = {d.item_id: d for d in ws.disagreements(SYSTEM, "Authors", 2)}
        assert now[items[1].item_id].adjudicated is None, "the save landed on the item the form did not show"
        assert now[items[0].item_id].adjudicated is not None, "the save of item 1's form was lost"
        assert now[items[0].item_id].adjudicated.justification == text
    finally:
        stop(proc)
        ws.close()


@pytest.mark.browser
def test_all_sixty_disagreements_of_the_authors_file_are_reachable_and_adjudicable(page, tmp_path, shared_data):
    url, ws = _authors_study(tmp_path, shared_data)
    items = ws.disagreements(SYSTEM, "Authors", 2)
    assert len(items) == 60
    last = items[-1]
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        sign_in(page, f"http://127.0.0.1:{port}/", "admin", ADMIN_CODE)
        page.get_by_role("link", name="Disagreements").click()
        settle(page)
        _choose(page, "Study", "Authors")
        page.get_by_text("60 item(s).").wait_for()
        settle(page)
        page.get_by_role("button", name="Next").click()
        page.get_by_role("heading", name=re.compile(rf"^{items[1].label}:")).wait_for()
        settle(page)
        page.get_by_role("button", name="Previous").click()
        page.get_by_role("heading", name=re.compile(rf"^{items[0].label}:")).wait_for()
        settle(page)
        _choose(page, "Item (1 of 60)", re.compile(rf"^{last.label}:"), search=f"{last.label}:")
        page.get_by_role("heading", name=re.compile(rf"^{last.label}:")).wait_for()
        page.get_by_text("Item (60 of 60)").wait_for()
        settle(page)
        assert page.get_by_text(CHEN, exact=True).count() >= 1  # the rater's card: the name as written
        assert "Dr\\. Chen" not in page.inner_text("body")
        page.get_by_text("Transcript", exact=True).click()  # its turns render beside the other keys
        page.locator(f".st-key-review-{last.item_id}-turn-1").wait_for()
        assert "DuplicateElementKey" not in page.inner_text("body")

        page.get_by_label("Justification of the adjudicated rating").fill("Agreed after discussion.")
        page.get_by_role("button", name="Save adjudicated rating").click()
        page.get_by_text(f"Adjudicated rating of {last.label} saved").wait_for()
        settle(page)
        done = ws.disagreements(SYSTEM, "Authors", 2)[-1]
        assert done.item_id == last.item_id and done.adjudicated is not None
        assert done.adjudicated.justification == "Agreed after discussion."
        assert all(d.adjudicated is None for d in ws.disagreements(SYSTEM, "Authors", 2)[:-1])
        page.get_by_role("heading", name=re.compile(rf"^{last.label}:.*adjudicated$")).wait_for()  # still on it
    finally:
        stop(proc)
        ws.close()
