"""``mindeval view``: the run viewer page (no sign-in; served on 127.0.0.1 only).

Lists the conversations of the run directories in ``$MINDEVAL_VIEW_RUNS`` with filters
(failed, score on a dimension, label, run); opening one shows its transcript, every judge
sample's full reply and parsed scores, tokens and cost per role, and its errors. A multi-session
run shows its figures per session number (summary.json's ``by_session``) under the list. All model
text is shown inert (:func:`annotation_app.ui.inert`) or as plain code text.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import streamlit as st

from annotation_app.ui import inert
from mindeval.corrections import CorrectionRequest, correct, describe, run_corrections
from mindeval.errors import MindEvalError
from mindeval.records import JudgmentRecord
from mindeval.store.corrections import WHO_SOURCE_SHOWN
from mindeval.viewer import (
    Conversation,
    RunSessions,
    filter_conversations,
    load_conversations,
    run_sessions,
)
from mindeval.viewer.data import AVERAGE

RUNS_ENV = "MINDEVAL_VIEW_RUNS"
SPEAKER = {"user": ("Patient", ":material/person:", "green"),
           "assistant": ("Clinician", ":material/medical_services:", "blue")}

st.set_page_config(page_title="MindEval runs", page_icon=":material/table_view:", layout="wide")


@st.cache_data(show_spinner="Reading the runs…")
def _load(paths: tuple[str, ...]) -> list[Conversation]:
    return load_conversations(list(paths))


@st.cache_data(show_spinner=False)
def _sessions(path: str) -> RunSessions | None:
    return run_sessions(path)


def _by_session(paths: tuple[str, ...]) -> None:
    """Each multi-session run's figures per session number (summary.json's ``by_session``)."""
    for path in paths:
        figures = _sessions(path)
        if figures is None:
            continue
        with st.expander(f"By session · {inert(Path(path).name)}", expanded=True, icon=":material/event_repeat:"):
            if figures.why:
                st.caption(f"n/a ({inert(figures.why)})")
                continue
            st.caption("Per session number, as summary.json's by_session holds it: n conversations, their "
                       "profiles and each figure with its [95% bootstrap interval over that session's profiles].")
            st.dataframe(pd.DataFrame(figures.cells(), columns=figures.header()), hide_index=True,
                         key=f"by-session-{path}")


def _money(v: float | None) -> str:
    return "n/a" if v is None else f"${v:.4f}"


def _session(c: Conversation) -> None:
    """A session's boundary: which session, the memory it started with, the patient's situation."""
    s = c.session
    if c.schedule:
        st.caption(f"Schedule drawn for this session: {inert(c.schedule_line)}")
    if s is None:
        return
    st.info(f"**{c.session_label.capitalize()}** of conversation {inert(s.member)}", icon=":material/event_repeat:")
    with st.expander(inert(c.memory_line.capitalize()), expanded=True):
        st.code(s.memory or "(empty)", language=None, wrap_lines=True)
    with st.expander("Patient's situation for this session"):
        st.code(s.situation or "(none)", language=None, wrap_lines=True)


def _detail(c: Conversation) -> None:
    st.subheader(f"{inert(c.profile_name or c.profile_id)} · {inert(c.run)}"
                 + (f" · {c.session_label}" if c.session else ""))
    st.caption(f"interaction {inert(c.interaction_id)} · clinician {inert(c.clinician)} · patient "
               f"{inert(c.patient_model or 'n/a')} · judge {inert(c.judge_model or 'n/a')} · {c.label} · "
               f"status {c.status}")
    for err in c.errors:
        st.error(inert(err), icon=":material/error:")
    if c.usage:
        st.markdown("**Tokens and cost**")
        st.dataframe(pd.DataFrame([{"role": u.role, "calls": u.calls, "failed calls": u.failed_calls,
                                    "input tokens": u.prompt_tokens, "output tokens": u.completion_tokens,
                                    "cost": _money(u.cost_usd)} for u in c.usage]),
                     hide_index=True, key="usage")
    left, right = st.columns([3, 2])
    with left:
        _session(c)
        st.markdown("**Transcript**")
        for n, m in enumerate(c.messages, start=1):
            who, icon, colour = SPEAKER.get(m.role, (m.role, ":material/notes:", "gray"))
            with st.container(border=True, key=f"turn-{n}"):
                st.markdown(f"{icon} **:{colour}[{who}]** · turn {n}  \n{inert(m.content)}")
    with right:
        st.markdown("**Judge**")
        if not c.judgments:
            st.info("not judged")
        for j in c.judgments:
            with st.container(border=True, key=f"judge-{j.sample}"):
                rounds = f"{j.rounds} rounds · " if j.rounds > 1 else ""
                st.markdown(f"sample {j.sample} · {j.parse_status} · {rounds}{j.attempts} attempt(s)")
                for i, why in enumerate(j.refused or [], start=1):
                    st.caption(f"round {i} refused: {inert(why)}")  # re-judged with --retry-refused
                if j.scores:
                    st.dataframe(pd.DataFrame([j.scores]), hide_index=True, key=f"scores-{j.sample}")
                st.code(j.raw_text or "(empty reply)", language=None, wrap_lines=True)
                if j.parse_status == "ok":
                    _correct_form(c, j)
        _corrections(c)


def _choices(c: Conversation, j: JudgmentRecord) -> dict[str, tuple[str, int | None, str | None]]:
    """What a reviewer may correct in one judge sample: label -> (axis, reply from 1, question)."""
    out: dict[str, tuple[str, int | None, str | None]] = {
        f"{ax} (conversation score: {_shown((j.scores or {}).get(ax))})": (ax, None, None) for ax in c.axes}
    for n, r in enumerate(j.replies or [], start=1):
        out[f"reply {n} (turn {r.turn + 1}) level: {r.level}"] = (c.axes[0], n, None)
        out.update({f"reply {n} (turn {r.turn + 1}) flag {f}: {'yes' if v else 'no'}": (f, n, None)
                    for f, v in r.flags.items()})
    for q, a in (j.answers or {}).items():
        axis = next((ax for ax, qs in c.questions.items() if q in qs), None)
        if axis is not None:
            out[f"question {q} of {axis} (answer: {a})"] = (axis, None, q)
    return out


def _shown(v: object) -> str:
    return "not relevant" if v is None else str(v)


def _correct_form(c: Conversation, j: JudgmentRecord) -> None:
    """A "Correct" control: what, the new value, a required reason, who; saved to the run store."""
    key = f"fix-{c.key}-{j.sample}"
    with st.expander("Correct a judge value", icon=":material/edit:"), st.form(key, clear_on_submit=False):
        choices = _choices(c, j)
        what = st.selectbox("Value to correct", list(choices), key=f"{key}-what")
        to = st.text_input("Corrected value (score, level id, answer id, yes/no, or not_relevant)", key=f"{key}-to")
        reason = st.text_area("Reason (required)", key=f"{key}-reason")
        who = st.text_input("Your name (recorded as self-declared; default: this computer's user)",
                            key=f"{key}-who")
        if not st.form_submit_button("Save correction", icon=":material/save:"):
            return
    if not reason.strip():
        st.error("A correction needs a reason: say why the judge's value is wrong.", icon=":material/error:")
        return
    axis, reply, question = choices[what]
    try:
        made = correct(c.run_path, CorrectionRequest(interaction_id=c.interaction_id, axis=axis, to=to,
                                                     reason=reason, who=who or None, reply=reply,
                                                     question=question, sample=j.sample))
    except MindEvalError as exc:
        st.error(inert(str(exc)), icon=":material/error:")
        return
    for m in made:
        st.success(f"Saved: {inert(describe(m))}", icon=":material/check:")


def _corrections(c: Conversation) -> None:
    """This conversation's corrections with their provenance (the judge's values above stay as judged)."""
    mine = [x for x in run_corrections(c.run_path) if x.interaction_id == c.interaction_id]
    if mine:
        st.markdown("**Corrections** (newest last; the judge's record is kept)")
        st.dataframe(pd.DataFrame([{"sample": x.sample, "where": x.where(), "axis": x.axis,
                                    "from": _shown(x.from_value), "to": _shown(x.to_value), "who": x.who,
                                    "identity": WHO_SOURCE_SHOWN[x.who_source],
                                    "when (UTC)": x.at.strftime("%Y-%m-%d %H:%M:%S") if x.at else "",
                                    "why": x.reason} for x in mine]), hide_index=True, key=f"corrections-{c.key}")


runs = tuple(p for p in os.environ.get(RUNS_ENV, "").split(os.pathsep) if p)
if not runs:
    st.error(f"No run directories: start the viewer with `mindeval view RUN_DIR...` (${RUNS_ENV} is empty).")
    st.stop()
conversations = _load(runs)
axes = sorted({a for c in conversations for a in c.axes}, key=lambda a: (conversations[0].axes + (a,)).index(a))

with st.sidebar:
    st.header("Filters")
    show = st.radio("Show", ["All", "Failed only", "Scored only"], key="show")
    dimension = st.selectbox("Dimension", [AVERAGE, *axes], key="dimension")
    low, high = st.slider("Score between", 0.0, 6.0, (0.0, 6.0), step=0.25, key="score")
    labels = st.multiselect("Label", sorted({c.label for c in conversations}), key="labels")  # the targets' own words
    names = sorted({c.run for c in conversations})
    chosen_runs = st.multiselect("Run", names, key="runs") if len(names) > 1 else []

bounded = (low, high) != (0.0, 6.0)
shown = filter_conversations(conversations, failed={"All": None, "Failed only": True, "Scored only": False}[show],
                             dimension=dimension, low=low if bounded else None, high=high if bounded else None,
                             labels=labels, runs=chosen_runs)
st.title("MindEval runs")
st.caption(f"{len(shown)} of {len(conversations)} conversations · {sum(c.failed for c in conversations)} with a "
           f"failure · runs: {', '.join(inert(n) for n in sorted({c.run for c in conversations}))}")

table = pd.DataFrame([{"run": c.run, "profile": c.profile_name or c.profile_id,
                       **({"session": c.session.session} if c.session else {}), "clinician": c.clinician,
                       "label": c.label, "status": "failed" if c.failed else "ok",
                       **{a: c.score(a) for a in (*axes, AVERAGE)}, "tokens": c.tokens, "cost": _money(c.cost_usd)}
                      for c in shown])
if not shown:
    st.info("No conversation matches the filters.")
    st.stop()
st.dataframe(table, hide_index=True, key="list")
_by_session(runs)
by_key = {c.key: c for c in shown}
opened = st.selectbox("Open a conversation", list(by_key), index=None, key="open",
                      format_func=lambda k: f"{by_key[k].run} · {by_key[k].profile_name or by_key[k].profile_id} · "
                      + (f"{by_key[k].session_label} · " if by_key[k].session else "") +
                      f"{'failed' if by_key[k].failed else 'ok'}",
                      placeholder="Choose a conversation to read")
if opened:
    _detail(by_key[opened])
