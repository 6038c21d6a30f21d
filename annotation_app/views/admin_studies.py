"""Admin: create studies, bring in transcripts or profiles, assign them to annotators."""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from annotation_app import ui
from annotation_app.services import MindEvalError, parse_annotator_map

v = ui.require_admin()
ws = ui.workspace()
st.title("Studies", anchor=False)
ui.show_flash()

studies = ws.studies(v)
if studies:
    st.dataframe(
        [{"Study": s.name, "Kind": s.kind, "Target": s.target, "Items or profiles": s.n_items, "Assignments": s.n_assignments,
          "Annotators per item": s.k, "Seed": s.seed, "Clinician model": s.clinician_model,
          "Minutes": s.minutes} for s in studies],
        hide_index=True, width="stretch",
    )
else:
    st.info("No studies yet. Create one below.")

with st.expander("Create a study", expanded=not studies):
    with st.form("create_study"):
        name = st.text_input("Name")
        kind = st.radio("Kind", ["rating", "roleplay"], horizontal=True,
                        format_func=lambda k: "Rate transcripts" if k == "rating" else "Role-play patients")
        target = st.selectbox("Target (its rating form and prompts)", ws.target_names(), key="create_target",
                              help="A built-in target; `mindeval app admin create-study --target PATH` takes "
                                   "a target folder.")
        k = st.number_input("Annotators per item", min_value=1, value=1, step=1)
        seed = st.number_input("Random seed (assignment order)", min_value=0, value=0, step=1)
        model = st.text_input("Clinician model for role-play (litellm string)", value="local/smollm2")
        minutes = st.number_input("Role-play session length (minutes)", min_value=1, value=25, step=1)
        description = st.text_area("Description shown to annotators")
        if st.form_submit_button("Create study", type="primary"):
            extra = {"clinician_model": model, "minutes": int(minutes)} if kind == "roleplay" else {}
            try:
                ws.create_study(v, name, kind, k=int(k), seed=int(seed), description=description, target=target,
                                **extra)
            except MindEvalError as exc:
                st.error(str(exc))
            else:
                ui.flash("success", f"Study '{name}' created.")
                st.rerun()

if studies:
    st.subheader("Add items and assign", anchor=False)
    names = [s.name for s in studies]
    chosen = st.selectbox("Study", names, key="admin_study")
    upload = st.file_uploader(
        "Transcripts (interactions.jsonl or the authors' human_annotations.jsonl) or profiles.jsonl",
        type=["jsonl"], key="admin_upload",
    )
    path_text = st.text_input("…or a path on the server (file, or a `mindeval run` output folder)", key="admin_path")
    map_text = st.text_area(
        "Give an authors' file's ratings to existing people (optional, one `FILE_ID=NAME` per line)",
        key="admin_map", height=68,
        help="By default imported ratings belong to new, inactive imported annotators, never to a person "
             "who signs in, even one with the same name.")
    if st.button("Import", key="admin_import"):
        try:
            mapped = parse_annotator_map(map_text.splitlines())
            if upload is not None:
                with tempfile.TemporaryDirectory() as tmp:
                    target = Path(tmp) / Path(upload.name).name
                    target.write_bytes(upload.getvalue())
                    try:
                        report = ws.import_path(v, chosen, target, map_annotators=mapped)
                    except MindEvalError as exc:  # name the uploaded file, not its temporary copy
                        raise MindEvalError(str(exc).replace(str(target), target.name)) from None
            elif path_text.strip():
                report = ws.import_path(v, chosen, Path(path_text.strip()).expanduser(), map_annotators=mapped)
            else:
                raise MindEvalError("choose a file or type a path first")
        except MindEvalError as exc:
            st.error(ui.inert(str(exc)))
        else:
            if report.kind == "profiles":
                ui.flash("success", f"Imported: {report.profiles_added} profiles added to the study, "
                                    f"{report.skipped} already there.")
            else:
                ui.flash("success", f"Imported: {report.items_linked} items linked to the study "
                                    f"({report.items_added} new, {report.items_reused} identical ones already in "
                                    f"the workspace), {report.ratings_added} ratings, {report.annotators_added} "
                                    f"imported annotators, {report.skipped} skipped.")
            for w in report.warnings[:20]:
                ui.flash("caption", ui.inert(w))
            st.rerun()  # the study table above shows the new counts
    can_rate = [p.name for p in ws.annotators(v) if p.can_sign_in and not p.is_admin]
    who = st.multiselect("Annotators", can_rate, default=can_rate, key=f"assign_who_{chosen}",
                         help="Nobody is given a role-play session they played themselves.")
    study_k = next(s.k for s in studies if s.name == chosen)
    k_new = st.number_input("Ratings per item from these annotators", min_value=1, value=study_k, step=1,
                            key=f"assign_k_{chosen}",
                            help="Ratings by anybody else (imported raters, an earlier team) do not count, so an "
                                 "already-rated set can be given to a new team.")
    if st.button("Assign to annotators", key="admin_assign", disabled=not who,
                 help="Gives every item to this many of the chosen annotators, balanced, in a seeded random order."):
        try:
            rep = ws.assign(v, chosen, annotators=who, k=int(k_new))
        except MindEvalError as exc:
            st.error(str(exc))
        else:
            short = (f" {rep.short} item(s) have fewer annotators than asked: only the person who "
                     "role-played them was free." if rep.short else "")
            ui.flash("success", f"{rep.created} new assignments (seed {rep.seed}): "
                     + (", ".join(f"{ui.inert(n)}: {c}" for n, c in rep.per_annotator.items()) or "none") + "." + short)
            st.rerun()

rating_names = [s.name for s in studies if s.kind == "rating"]
if rating_names:
    st.subheader("Gold items and qualification", anchor=False)
    st.caption("Gold items have known answers. They are mixed into every rater's items, unmarked, and a study "
               "can ask a new rater to get its first gold items right before any real item opens. Mark gold "
               "items before assigning; Results shows each rater's gold accuracy.")
    gstudy = st.selectbox("Rating study", rating_names, key="gold_study")
    cur = ws.gold_settings(v, gstudy)
    with st.form(f"gold_settings_{gstudy}"):
        rate = st.number_input("Share of gold among a rater's items", min_value=0.0, max_value=0.9, step=0.05,
                               value=float(cur.gold_rate))
        qn = st.number_input("Qualification: gold items a new rater answers first (0 = none)", min_value=0,
                             step=1, value=int(cur.qualify_n))
        qp = st.number_input("Share of them that must be right", min_value=0.05, max_value=1.0, step=0.05,
                             value=float(cur.qualify_pass))
        if st.form_submit_button("Save gold settings"):
            try:
                ws.set_gold_settings(v, gstudy, gold_rate=float(rate), qualify_n=int(qn), qualify_pass=float(qp))
            except MindEvalError as exc:
                st.error(ui.inert(str(exc)))
            else:
                ui.flash("success", "Gold settings saved.")
                st.rerun()
    gfile = st.file_uploader("Gold file (JSON Lines: item, expected, tolerance)", type=["jsonl"], key="gold_upload")
    if st.button("Mark gold items", key="gold_import", disabled=gfile is None):
        with tempfile.TemporaryDirectory() as tmp:
            gpath = Path(tmp) / Path(gfile.name).name
            gpath.write_bytes(gfile.getvalue())
            try:
                n = ws.import_gold(v, gstudy, gpath)
            except MindEvalError as exc:
                st.error(ui.inert(str(exc).replace(str(gpath), gpath.name)))
            else:
                ui.flash("success", f"{n} gold item(s) marked.")
                st.rerun()
    if golds := ws.gold_items(v, gstudy):
        st.dataframe([{"Item": g.item, "Tolerance": g.tolerance, **g.expected} for g in golds], hide_index=True,
                     key="gold_table")
    with st.expander("The study's item ids (what a gold file's `item` names)"):
        st.dataframe([{"Item": it.item, "Source": it.source, "Clinician": it.clinician_model or "",
                       "Gold": "yes" if it.gold else ""} for it in ws.study_items(v, gstudy)],
                     hide_index=True, key="gold_item_ids")
