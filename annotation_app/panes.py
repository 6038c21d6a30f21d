"""Page parts that act in the browser: Streamlit custom components (v2), inline in the page.

The transcript pane (its own scroll box, scrolled to a turn or to its end), the role-play
clock (ticks, and tells Python at zero) and the sign-in hand-off (sends the browser to a
cookie route). Each one's HTML is built by its own script (assets/panes/), every text through
``textContent``; its CSS is scoped by its root class. Nothing here selects Streamlit's own
elements: the page reaches only what these components draw.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import streamlit as st
from pydantic import BaseModel

PANES = Path(__file__).resolve().parent / "assets" / "panes"


def _component(name: str):
    css = PANES / f"{name}.css"
    return st.components.v2.component(
        f"mindeval_{name}", html=f'<div class="mindeval-{name}"></div>',
        css=css.read_text(encoding="utf-8") if css.exists() else None,
        js=(PANES / f"{name}.js").read_text(encoding="utf-8"),
        isolate_styles=False)  # its CSS is scoped by its root class; tests reach its elements


_TRANSCRIPT = _component("transcript")
_CLOCK = _component("clock")
_GO = _component("go")


class Turn(BaseModel):
    """One card of the transcript pane: its 1-based turn number, role, who speaks, the text."""

    n: int
    role: str  # clinician | patient
    who: str
    text: str


class Transcript(BaseModel):
    """What the transcript pane shows: its cards (only the search hits while searching), the turn
    to scroll to the top of the pane (``jump``), or else whether to scroll to its end (``end``)."""

    turns: list[Turn]
    jump: int | None = None
    end: bool = False
    empty: str = ""  # shown when there is no card (a search without hits)


def transcript(pane: Transcript, key: str) -> None:
    """Mount the transcript pane (its height follows the window; see assets/panes/transcript.css)."""
    _TRANSCRIPT(data=pane.model_dump(), key=key)


def clock(session_id: int, seconds_left: float, time_up: bool) -> None:
    """Mount the role-play clock: minutes and seconds left, ticking in the browser. At zero it
    sends the trigger ``zero``, which reruns the page (now past the deadline: the chat box is
    shown disabled); ``time_up``: the page knows already. A later run never winds it back."""
    _CLOCK(data={"session": session_id, "left": math.ceil(max(seconds_left, 0.0)), "up": time_up,
                 "render": uuid.uuid4().hex}, key=f"clock_{session_id}", on_zero_change=_rerun_only)


def _rerun_only() -> None:
    """The clock's trigger needs nothing but the rerun it starts."""


def navigate(target: str) -> None:
    """Send the browser to ``target`` (a path of this server), replacing the page in its history."""
    _GO(data={"target": target, "render": uuid.uuid4().hex}, key="mindeval_go")
