"""Active time on a transcript is stored in steps, not at every key: a key's fragment run wrote the
time since the last key besides the score itself (two writes per key). The time reaches the
rating every 30 s of it, at Submit, and when the annotator moves to another transcript."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from appkit import DEMO_CODE, form_fields, form_send, sign_in, viewer

from annotation_app import active_time


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The rate page's clock, in seconds, moved only by the test: however slow the machine, the time
    between two keys is what the test says (a clock that also followed real time counted a loaded
    machine's seconds too: 56.7 s stored for 51 beside two CPU hogs). Nothing else's clock moves."""
    shift = [1000.0]
    monkeypatch.setattr(active_time, "time", SimpleNamespace(monotonic=lambda: shift[0]))
    return shift


def test_active_time_is_written_every_30_s_and_at_submit_not_per_key(demo_ws, clock) -> None:
    at = sign_in("demo", DEMO_CODE)
    at.button(key="open_1").click().run()
    v = viewer(demo_ws, "demo", DEMO_CODE)
    aid = at.session_state["assignment_id"]
    subs = list(form_fields(at))
    form_send(at, {subs[0]: "3"})
    for n, sub in enumerate(subs[1:4], start=1):
        clock[0] += 5.0  # a key every 5 s: nothing written yet
        form_send(at, {sub: str(1 + n % 6)})
    assert demo_ws.item(v, aid).active_seconds == 0.0
    clock[0] += 20.0  # 35 s in all: one step
    form_send(at, {subs[4]: "2"})
    assert demo_ws.item(v, aid).active_seconds == 35.0
    for sub in subs[5:]:
        clock[0] += 4.0
        form_send(at, {sub: "4"})
    form_send(at, texts={"justification": "Steady."}, submit=True)
    assert not at.exception, at.exception
    item = demo_ws.item(v, aid)
    assert item.state == "submitted" and item.active_seconds == 35.0 + 16.0


def test_time_read_before_the_first_score_is_stored_whole_not_one_capped_step(demo_ws, clock) -> None:
    """Three 100 s gaps of reading (each under the 120 s cap) before the first key are 300 s: the
    store took their sum as one step and capped it, 120 s."""
    at = sign_in("demo", DEMO_CODE)
    at.button(key="open_1").click().run()
    v = viewer(demo_ws, "demo", DEMO_CODE)
    aid = at.session_state["assignment_id"]
    for _ in range(3):
        clock[0] += 100.0
        at.run()
    assert demo_ws.item(v, aid).active_seconds == 0.0  # nothing rated yet: nothing created
    clock[0] += 10.0
    form_send(at, {next(iter(form_fields(at))): "3"})
    assert not at.exception, at.exception
    assert demo_ws.item(v, aid).active_seconds == 310.0
