"""Admin: disagreement review. Items whose raters differ by at least N points on a sub-axis,
one at a time (a list and Previous/Next reach every one): their ratings and justifications
side by side, and an adjudicated rating (its own rater)."""

from __future__ import annotations

import statistics

import streamlit as st

from annotation_app import forms, ui
from annotation_app.services import MindEvalError, RatingIncomplete
from annotation_app.store.models import Message
from annotation_app.store.ratings import na_value

v, ws, studies, chosen = ui.admin_study_page("Disagreements", "review_study")
ui.show_flash()
if next(s.kind for s in studies if s.name == chosen) != "rating":
    st.info("Disagreements are reviewed in rating studies.")
    st.stop()
gap = int(st.number_input("Show items where two raters differ by at least (points, on one sub-axis)",
                          min_value=1, value=2, step=1, key="review_gap"))
items = ws.disagreements(v, chosen, gap)
subs = ws.subaxes(chosen)
names = {s.id: s.name for s in subs}
scale = ws.guidelines(chosen)
values = scale.score_values()
na = na_value(scale)
st.caption(f"{len(items)} item(s). Adjudicated ratings are stored as the rater **adjudicated**: exports mark "
           "them, the Results page and metaeval's agreement between annotators leave them out.")


def _label(value: int | None) -> str:
    if value is None:
        return "—"
    if value not in values:
        return "N/A"
    return str(value) if scale.scale_kind == "ordinal" else scale.level_of(value).label


if not items:
    st.stop()
by_id = {d.item_id: d for d in items}
ids = list(by_id)


def _title(d) -> str:
    """An item's line in the list: plain text, shown as is (no Markdown, so nothing to escape)."""
    gaps = ", ".join(f"{names.get(k, k)} (±{g})" for k, g in d.gaps.items())
    return f"{d.label}: {gaps}" + (" · adjudicated" if d.adjudicated else "")


def _go(item_id: int) -> None:
    """Previous/Next name the item they lead to, never a step from the current one: a click that
    reaches the server twice (a rerun cut short replays it) lands on the same item, and the first
    item's Previous can never wrap round to the last."""
    st.session_state["review_item"] = item_id


if st.session_state.get("review_item") not in ids:
    st.session_state["review_item"] = ids[0]
at = ids.index(st.session_state["review_item"])
back, pick, ahead = st.columns([1, 6, 1], vertical_alignment="bottom")
back.button("Previous", icon=":material/chevron_left:", disabled=at == 0, on_click=_go, args=(ids[max(at - 1, 0)],),
            key="review_prev", width="stretch")
ahead.button("Next", icon=":material/chevron_right:", disabled=at == len(ids) - 1, on_click=_go,
             args=(ids[min(at + 1, len(ids) - 1)],),
             key="review_next", width="stretch")
with pick:
    ui.pick_by_id(f"Item ({at + 1} of {len(ids)})", ids, {i: _title(d) for i, d in by_id.items()}, "review_item")

d = by_id[st.session_state["review_item"]]
st.subheader(ui.inert(_title(d)), anchor=False)
# Column headers and cells are shown as plain text: names appear as written, nothing is markup.
st.dataframe([{"Sub-axis": s.name + (" ⚠" if s.id in d.gaps else ""),
               **{r.annotator: _label(r.values.get(s.id)) for r in d.ratings},
               **({"adjudicated": _label(d.adjudicated.values.get(s.id))} if d.adjudicated else {})}
              for s in subs], hide_index=True, width="stretch", key=f"review_table_{d.item_id}")
cols = st.columns(len(d.ratings))
for col, r in zip(cols, d.ratings):
    with col, st.container(border=True):
        st.markdown(f"**{ui.inert(r.annotator)}**  \n{ui.inert(r.justification) or '_no justification_'}")
        if r.safety_note:
            st.caption(f"Safety: {ui.inert(r.safety_note)}")
with st.expander("Transcript", expanded=False):
    ui.render_transcript([Message(role="patient" if m.get("role") == "user" else "clinician",
                                     content=str(m.get("content") or "")) for m in d.messages],
                         str(d.member_attributes.get("name", "member")), key=f"review-{d.item_id}-turn")


def _prior(s) -> int | None:
    """The value the form starts from: the stored adjudication's, else the raters' median."""
    prior = d.adjudicated.values.get(s.id) if d.adjudicated else None
    if prior is None:
        rated = [r.values[s.id] for r in d.ratings if r.values.get(s.id) in values]
        prior = min(values, key=lambda x: abs(x - statistics.median(rated))) if rated else None
    return prior


def _save() -> None:
    """The form's Save (run before the page script): store the values it sent on the item it
    NAMES, once per (tab, seq), whatever item the page has moved to meanwhile."""
    act = forms.action("adjudicate", "save")
    if act is None or not ws.first_time(v, act.tab, act.seq):
        return
    name = by_id[act.item].label if act.item in by_id else f"item {act.item}"
    try:
        rev = ws.adjudicate(v, chosen, act.item, {k: x for k, x in act.values.items() if x is not None},
                            act.justification)
    except RatingIncomplete as exc:
        ok, message = False, "Not saved: " + "; ".join(exc.problems) + "."
    except MindEvalError as exc:
        ok, message = False, f"Not saved: {exc}"
    else:
        ok, message = True, f"Adjudicated rating of {name} saved (revision {rev})."
    ws.applied(v, act.tab, act.seq)
    ui.flash("success" if ok else "error", ui.inert(message))
    st.session_state["adjudicate_ack"] = {"tab": act.tab, "seq": act.seq, "item": act.item, "ok": ok,
                                          "message": message}


fields = [{"id": s.id, "name": s.name,
           "options": [{"value": x, "label": _label(x)} for x in list(values) + ([na] if s.allow_na else [])]}
          for s in subs]
forms.adjudication_form(forms.Adjudication(
    item=d.item_id, label=d.label, fields=fields, values={s.id: _prior(s) for s in subs},
    justification=d.adjudicated.justification if d.adjudicated else "",
    ack=st.session_state.get("adjudicate_ack")), on_save=_save)
