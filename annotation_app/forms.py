"""The page forms that own their state: Streamlit custom components (v2), inline in the page.

A form component keeps what the person chose and typed in the browser and sends an action as
one *trigger* value naming its item and its ``(tab, seq)``: the page applies it to that item,
at most once (:meth:`annotation_app.services.Workspace.first_time`), whatever else the page
shows meanwhile. Its HTML is built by its own script (assets/forms/), every text through
``textContent``: nothing a person types or a model wrote becomes markup.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st
from pydantic import BaseModel, Field, ValidationError

FORMS = Path(__file__).resolve().parent / "assets" / "forms"


def _component(name: str):
    return st.components.v2.component(
        f"mindeval_{name}", html=f'<div class="mindeval-{name}"></div>',
        css=(FORMS / f"{name}.css").read_text(encoding="utf-8"), js=(FORMS / f"{name}.js").read_text(encoding="utf-8"),
        isolate_styles=False)  # its CSS is scoped by its root class; tests and page reach its elements


_ADJUDICATE = _component("adj")
_RATE = _component("rate")


class Action(BaseModel):
    """One action a form sent: which tab, its sequence number there, the item it names, and the
    form's values and text as they stood when the person acted."""

    tab: str = Field(min_length=1, max_length=64)
    seq: int = Field(ge=1)
    item: int
    values: dict[str, int | None] = Field(default_factory=dict)
    justification: str = ""


class RateAction(BaseModel):
    """The rating form's state or its Submit: the labels it shows per sub-axis ("" = none) and
    its texts, for the item it names."""

    tab: str = Field(min_length=1, max_length=64)
    seq: int = Field(ge=1)
    item: int
    values: dict[str, str] = Field(default_factory=dict)
    texts: dict[str, str] = Field(default_factory=dict)
    version: int | None = None  # the stored version the form showed when it acted
    reply: int | None = None  # a step to another reply (``unit: reply``): its position


def action(key: str, event: str, model: type[BaseModel] = Action):
    """The ``event`` value (a state or a trigger) of the form mounted with ``key``, as ``model``
    (``None``: none, or not an action this page understands)."""
    raw = (st.session_state.get(key) or {}).get(event)
    if not isinstance(raw, dict):
        return None
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


class RateAxis(BaseModel):
    id: str
    name: str
    heading: str = ""  # the axis name shown above its first sub-axis ("" when the sub-axis says it)
    options: list[str]  # the labels offered, in key order ("N/A" last where allowed)
    anchors: list[tuple[str, str]] = Field(default_factory=list)
    kind: str = "radio"  # radio | check (a flag: "yes" when set) | note (a line, no choice)


class RateForm(BaseModel):
    """What the rating form shows: the rating's owner (user:study:item, the browser's key for
    changes not yet acknowledged), its sub-axes, what is stored, and this session's answers."""

    owner: str
    item: int
    unit: str = "conversation"
    locked: bool
    axes: list[RateAxis]  # the fields shown now
    stored: dict[str, str]  # every field the form may show → stored label ("" when unset)
    texts: dict[str, str]  # stored justification and safety note
    saved_text: str
    refused: int = 0  # this session's refused stale writes of the item: the form drops its changes
    ack: dict[str, int] = Field(default_factory=dict)  # browser tab → highest seq applied
    show_anchors: bool = False
    version: int = 0  # the stored rating's version
    moot: list[str] = Field(default_factory=list)  # fields the stored answers no longer reach
    legend: str = ""  # the keys, one line
    reply: dict[str, int] | None = None  # unit reply: {pos, n, turn, rated}


def rating_form(form: RateForm, on_state: Callable[[], None], on_submit: Callable[[], None],
                on_step: Callable[[], None], key: str = "rate_form") -> None:
    """Mount the rating form; ``on_state`` / ``on_submit`` / ``on_step`` run before the script
    when it sends its state / its Submit / a step to another reply."""
    _RATE(data=form.model_dump(), key=key, on_form_change=on_state, on_submit_change=on_submit,
          on_step_change=on_step)


class Adjudication(BaseModel):
    """What the adjudication form shows: the item, its sub-axes with their options, what is stored."""

    item: int
    label: str
    fields: list[dict[str, Any]]  # {id, name, options: [{value, label}]}
    values: dict[str, int | None]
    justification: str = ""
    ack: dict[str, Any] | None = None  # this session's answer to the last save: {tab, seq, item, ok, message}


def adjudication_form(form: Adjudication, on_save: Callable[[], None], key: str = "adjudicate") -> None:
    """Mount the adjudication form; ``on_save`` runs (before the page script) when it sends a save."""
    _ADJUDICATE(data=form.model_dump(), key=key, on_save_change=on_save)
