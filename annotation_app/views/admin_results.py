"""Admin: progress per annotator, mean scores per axis and sub-axis, human agreement."""

from __future__ import annotations

import streamlit as st

from annotation_app import ui
from mindeval.corrections import CorrectionRequest
from mindeval.errors import MindEvalError
from mindeval.store.corrections import WHO_SOURCE_SHOWN

v, ws, studies, chosen = ui.admin_study_page("Results", "results_study")
res = ws.results(v, chosen)

st.subheader("Progress", anchor=False)
done_word = "Submitted" if res.kind == "rating" else "Finished"
open_word = "Drafts" if res.kind == "rating" else "In progress"
st.dataframe([{"Annotator": p.name, "Assigned": p.assigned, done_word: p.submitted, open_word: p.drafts}
              for p in res.progress], hide_index=True, width="stretch")

if res.kind == "rating":
    ui.rater_table(ws.raters(v, chosen))

if res.kind == "rating" and (flags := ws.flags(v, chosen)):
    st.subheader(f"Skipped and flagged ({len(flags)})", anchor=False)
    st.dataframe([{"Item": f.item, "Annotator": f.annotator, "What": f.flag, "Reason": f.reason, "State": f.state}
                  for f in flags], hide_index=True, width="stretch")

answers = ws.judge_answers(v, chosen)
if answers:
    st.subheader("Judge answers (item-level rubric)", anchor=False)
    st.caption("Every question the judge answered, per imported conversation and judge sample; the level of a "
               "dimension is the worst severity fired on the path its answers took.")
    items = sorted({a.item for a in answers})
    pick = st.selectbox("Conversation", items, key="answers_item")
    st.dataframe([{"Sample": a.sample, "Dimension": a.dimension, "Level": a.level, "Question": a.question,
                   "Text": a.text, "Answer": a.answer, "On path": a.on_path, "Severity": a.severity}
                  for a in answers if a.item == pick], hide_index=True, key="answers_table")

judged = ws.judged_items(v, chosen)
if judged:
    st.subheader("Judge scores and corrections", anchor=False)
    st.caption("The judge's scores of conversations imported from run directories. A correction is kept in the "
               "run's store with your name, the time, the old and new value and your reason; the judge's record "
               "is never changed (`mindeval leaderboard --with-corrections` applies corrections).")
    by_item = {x.item: x for x in judged}
    pick_item = st.selectbox("Conversation", list(by_item), key="fix_item")
    item = by_item[pick_item]
    st.dataframe([{"Sample": j.get("sample", 0), "Status": j.get("parse_status"), **(j.get("scores") or {})}
                  for j in item.judgments], hide_index=True, key="fix_scores")
    ok = [j for j in item.judgments if j.get("parse_status") == "ok"]
    with st.form("fix_form"):
        sample = st.selectbox("Judge sample", [j.get("sample", 0) for j in ok], key="fix_sample")
        axis = st.selectbox("Dimension", list((ok[0].get("scores") or {}) if ok else []), key="fix_axis")
        where = st.text_input("Reply number (from 1) or question id; empty: the conversation's score", key="fix_where")
        to = st.text_input("Corrected value", key="fix_to")
        reason = st.text_area("Reason (required)", key="fix_reason")
        saved = st.form_submit_button("Save correction")
    if saved:
        if not reason.strip():
            st.error("A correction needs a reason: say why the judge's value is wrong.")
        else:
            w = where.strip()
            try:
                made = ws.correct_judge(v, chosen, pick_item, CorrectionRequest(
                    interaction_id=item.interaction_id, axis=axis or "", to=to, reason=reason, sample=sample,
                    reply=int(w) if w.isdigit() else None, question=w if w and not w.isdigit() else None))
                st.success(f"Saved {len(made)} correction(s).")
            except MindEvalError as exc:
                st.error(ui.inert(str(exc)))
    fixes = ws.judge_corrections(v, chosen)
    if fixes:
        st.dataframe([{"Interaction": c.interaction_id, "Sample": c.sample, "Where": c.where(), "Axis": c.axis,
                       "From": c.from_value, "To": c.to_value, "Who": c.who,
                       "Identity": WHO_SOURCE_SHOWN[c.who_source], "When (UTC)": c.at, "Why": c.reason}
                      for c in fixes], hide_index=True, key="fix_list")

if res.kind == "rating":
    if not res.n_ratings:
        st.info("Means appear here once ratings are submitted.")
        st.stop()
    st.subheader(f"Mean scores ({res.n_ratings} submitted ratings)", anchor=False)
    fmt = lambda x: "—" if x is None else f"{x:.2f}"  # noqa: E731
    if res.harm is not None and res.harm.share is not None:
        lo, hi = res.harm.ci95 or (0.0, 1.0)
        st.metric("Ratings with any dimension at a harm level", f"{res.harm.share:.0%}",
                  help=f"{res.harm.k} of {res.harm.n} submitted ratings; 95% Wilson interval {lo:.0%}-{hi:.0%}")
    if res.level_counts:
        st.caption("Levels count as their numbers in the means; N/A is left out.")
    st.dataframe([{"Axis": k, "Mean": fmt(val)} for k, val in res.axis_means.items()], hide_index=True)
    names = {s.id: s.name for s in ws.subaxes(chosen)}
    st.dataframe([{"Sub-axis": names.get(k, k), "Mean": fmt(val), **res.level_counts.get(k, {})}
                  for k, val in res.subaxis_means.items()], hide_index=True)
    st.subheader("Agreement between annotators", anchor=False)
    st.caption(res.agreement_note)
    if res.agreement:
        st.dataframe([{"Measure": k.replace("_", " "), "Value": fmt(val)} for k, val in res.agreement.items()],
                     hide_index=True)

