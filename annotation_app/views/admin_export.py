"""Admin: download ratings or role-play sessions in the project's and the authors' formats."""

from __future__ import annotations

import streamlit as st

from annotation_app import ui
from annotation_app.services import MindEvalError

v, ws, studies, chosen = ui.admin_study_page("Export", "export_study")
study = next(s for s in studies if s.name == chosen)
if study.kind == "rating":
    formats = {"csv": "Ratings, CSV (one row per rating)", "jsonl": "Ratings, JSONL",
               "flags": "Skipped and flagged items, JSONL (with reasons)"}
    if ws.study_target(chosen).manifest.authors_release:  # the authors' schema holds MindEval's form only
        formats["authors"] = "Authors' human_annotations.jsonl"
else:
    formats = {"interactions": "Sessions as interactions.jsonl", "user-turns": "Authors' human_user_turns.jsonl"}
fmt = st.radio("Format", list(formats), format_func=formats.get, key="export_fmt")
try:
    data = ws.export_text(v, chosen, fmt)
except MindEvalError as exc:
    st.error(str(exc))
else:
    ext = "csv" if fmt == "csv" else "jsonl"
    slug = "".join(c if c.isalnum() else "-" for c in chosen.lower()).strip("-")
    st.download_button("Download", data, file_name=f"{slug}-{fmt}.{ext}", type="primary")
    st.caption(f"{data.count(chr(10))} lines")
