"""Time an annotator spends on a transcript: the gaps between her actions on it, each counted up to
the store's :data:`MAX_ACTIVE_STEP`, kept in the session and stored with the rating in steps, not at
every key (a write each doubled a key's writes)."""

from __future__ import annotations

import time

import streamlit as st

from annotation_app.services import MindEvalError, Viewer, Workspace
from annotation_app.store.ratings import MAX_ACTIVE_STEP

FLUSH_S = 30.0


def track(ws: Workspace, v: Viewer, item_id: int, has_rating: bool, flush_at: float = FLUSH_S) -> None:
    """Count the gap since the last action on ``item_id``; store what is due: every ``flush_at``
    seconds once the rating exists (0: at Submit), and at once for a transcript she left."""
    now = time.monotonic()
    last = st.session_state.get("rate_clock")
    pending: dict[int, float] = st.session_state.setdefault("rate_time", {})
    if last and last[0] == item_id:
        pending[item_id] = pending.get(item_id, 0.0) + min(now - last[1], MAX_ACTIVE_STEP)
    st.session_state["rate_clock"] = (item_id, now)
    due = [a for a, secs in pending.items() if secs >= 1.0 and (a != item_id or (has_rating and secs >= flush_at))]
    for a in due:
        _store(ws, v, a, pending.pop(a))


def _store(ws: Workspace, v: Viewer, item_id: int, seconds: float) -> None:
    """Store ``seconds`` of gaps, each already capped, in steps the store takes whole: a transcript
    read for five minutes before its first score stored one capped step, 120 s, for 300."""
    while seconds > 0:
        step = min(seconds, MAX_ACTIVE_STEP)
        try:
            ws.add_active_time(v, item_id, step)
        except MindEvalError:
            return
        seconds -= step
