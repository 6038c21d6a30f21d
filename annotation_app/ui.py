"""Shared Streamlit helpers: the workspace, the signed-in person, safe text rendering.

Pages import this module and :mod:`annotation_app.services` only. All transcript,
profile and free text is shown through :func:`inert`, which escapes every Markdown
and HTML character, so text from models or files can never become markup or script.
"""

from __future__ import annotations

import json
import queue
import re
import string
import threading
import zlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import streamlit as st
from streamlit.navigation.page import StreamlitPage
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from annotation_app import handoff, panes, proxy_check
from annotation_app.services import Workspace, default_db_url
from annotation_app.store import signins
from annotation_app.store.models import Message, Viewer

ASSETS = Path(__file__).resolve().parent / "assets"
LEGACY_TOKEN_PARAM = "s"  # old links carried the session in the URL; it is ignored and removed
_PUNCT = re.compile("([" + re.escape(string.punctuation) + "])")


@st.cache_resource(show_spinner=False)
def _workspace(url: str) -> Workspace:
    return Workspace(url)


def workspace() -> Workspace:
    """The process-wide workspace of ``$MINDEVAL_APP_DB`` (migrated on first use)."""
    return _workspace(default_db_url())


# Direction controls (LRM/RLM, embeddings, overrides, isolates) could reorder what a
# reader sees; they are shown as visible tags such as [U+202E] instead of obeyed.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Markdown turns bare URLs, www. names and e-mail addresses into links even when
# escaped; an invisible word joiner after the scheme, "www" or "@" stops it.
_AUTOLINK = re.compile(r"(?i)\b(?:https?|mailto|xmpp)(?=:)|\bwww(?=\.)|@")
WORD_JOINER = "\u2060"


def visible_controls(text: str) -> str:
    """``text`` with its direction controls shown as tags such as [U+202E] (for a component that
    puts text on screen through textContent: no markup, but bidi controls would still act)."""
    return _BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


def inert(text: str) -> str:
    """Markdown that displays ``text`` literally: no links, HTML, math, formatting or bidi tricks."""
    text = visible_controls(text)
    text = _AUTOLINK.sub(lambda m: m.group() + WORD_JOINER, text)
    escaped = _PUNCT.sub(r"\\\1", text)
    return escaped.replace("\r\n", "\n").replace("\n", "  \n")


def _cookie_token() -> str | None:
    try:
        return st.context.cookies.get(handoff.COOKIE)
    except Exception:  # no browser connection (e.g. a script test)
        return None


def client_address() -> str:
    """The browser's IP address for sign-in throttling: the trusted proxy header's when one is
    configured (``mindeval app --trusted-proxy-header``), else the connection's ("" on this
    machine or without a browser). See :func:`annotation_app.store.signins.client_key`."""
    try:
        ip = st.context.ip_address
        header = signins.trusted_proxy_header()
        values = st.context.headers.get_all(header) if header else None
    except Exception:  # no browser connection
        return ""
    return signins.client_key(ip if isinstance(ip, str) else None, trusted_header=header, values=values)


def check_proxy_header() -> None:
    """Once per browser connection: note whether the configured trusted proxy header is on it
    (see :mod:`annotation_app.proxy_check`)."""
    if st.session_state.get("_proxy_checked"):
        return
    st.session_state["_proxy_checked"] = True
    try:
        header = signins.trusted_proxy_header()
        if not header:
            return
        present = bool(st.context.headers.get_all(header))
        peer = st.context.ip_address
    except Exception:  # no browser connection (e.g. a script test)
        return
    proxy_check.saw(header, present, peer if isinstance(peer, str) else None)


def proxy_notice() -> None:
    """For admins: say so while the configured trusted proxy header has never been seen."""
    try:
        note = proxy_check.missing_notice(signins.trusted_proxy_header())
    except Exception:  # a bad header name is refused at start-up
        return
    if note:
        st.warning(note, icon=":material/shield:")


def viewer() -> Viewer | None:
    """The signed-in person: this tab's token, else the browser's HttpOnly session cookie.

    The token never appears in the URL; a URL copied to another browser signs nobody in.
    """
    if LEGACY_TOKEN_PARAM in st.query_params:
        del st.query_params[LEGACY_TOKEN_PARAM]
    token = st.session_state.get("token") or _cookie_token()
    if not token:
        return None
    v = workspace().viewer(token)
    if v is None:
        st.session_state.pop("token", None)
        return None
    st.session_state["token"] = token
    return v


def signed_in(token: str) -> None:
    """Remember a new sign-in in this tab and have the browser store it as a cookie (see handoff)."""
    st.session_state["token"] = token
    st.session_state["_handoff"] = handoff.SESSION_ROUTE + "?t=" + workspace().issue_ticket(token)


def sign_out() -> None:
    """Revoke this session's token everywhere, then have the browser drop its cookie."""
    workspace().sign_out(st.session_state.get("token") or _cookie_token() or "")
    st.session_state.clear()
    st.session_state["_handoff"] = handoff.SIGNOUT_ROUTE


def follow_handoff() -> None:
    """Send the browser to a pending cookie route (right after sign-in or sign-out)."""
    target = st.session_state.pop("_handoff", None)
    if target:
        panes.navigate(target)


def require_viewer() -> Viewer:
    v = viewer()
    if v is None:
        st.info("Please sign in.")
        st.stop()
    return v


def require_admin() -> Viewer:
    v = require_viewer()
    if not v.is_admin:
        st.error("This page is for study admins.")
        st.stop()
    return v


def flash(kind: str, text: str) -> None:
    """Show a message once, on the next run (survives st.rerun / switch_page)."""
    st.session_state.setdefault("_flash", []).append((kind, text))


def show_flash() -> None:
    """Show the waiting messages. They are dropped only when the run showing them ends
    (``run_page``): a run cut short by the next click would otherwise lose one (e.g. "Rating
    submitted", shown by the run that carried the click)."""
    shown = list(st.session_state.get("_flash", []))
    for kind, text in shown:
        getattr(st, kind)(text)
    st.session_state["_flash_shown"] = len(shown)


def run_page(nav: StreamlitPage) -> None:
    """Run the chosen page; when it ran to its end (or to ``st.stop()``), drop the messages it
    showed. A run cut short by the next rerun (``RerunException``) keeps them."""
    st.session_state.pop("_flash_shown", None)
    try:
        nav.run()
    except StopException:
        _drop_shown()
        raise
    _drop_shown()


def _drop_shown() -> None:
    del st.session_state.setdefault("_flash", [])[: st.session_state.pop("_flash_shown", 0)]


def saved_now() -> None:
    st.session_state["saved_at"] = datetime.now().strftime("%H:%M:%S")


def render_pairs(pairs: list[tuple[str, str]]) -> None:
    """Label/value lines (e.g. an intake profile), all inert."""
    st.markdown("  \n".join(f"**{inert(k)}:** {inert(v)}" for k, v in pairs))


def render_transcript(messages: list[Message], member_name: str, *, chat: bool = False,
                      only: set[int] | None = None, key: str = "turn") -> None:
    """The conversation, clinician and member clearly labelled, all text inert.

    ``chat=True`` uses chat bubbles (role-play, where the view follows the newest
    message); otherwise each turn is a bordered card read from the top (e.g. the
    Disagreements page), keyed ``{key}-N`` (a page showing several transcripts gives each its
    own ``key``), and ``only`` limits the cards to those turns. The rating page's pane is
    :func:`transcript_pane`.
    """
    for n, m in enumerate(messages, start=1):
        if m.role == "clinician":
            who, icon, colour = "Clinician", ":material/medical_services:", "blue"
        else:
            who, icon, colour = inert(member_name), ":material/person:", "green"
        if chat:
            with st.chat_message("assistant" if m.role == "clinician" else "user", avatar=icon):
                st.markdown(f"**:{colour}[{who}]**  \n{inert(m.content)}")
        elif only is None or n in only:
            with st.container(border=True, key=f"{key}-{n}"):
                st.markdown(f"{icon} **:{colour}[{who}]** · turn {n}  \n{inert(m.content)}")


def transcript_pane(messages: list[Message], member_name: str, intake: list[tuple[str, str]], key: str, *,
                    end: bool = False) -> None:
    """A transcript to rate: search box, jump to a turn, intake profile, one scroll pane (a
    component, :func:`annotation_app.panes.transcript`); ``end``: show its last turn (the reply
    under rating) until a turn is chosen."""
    find, jump = st.columns([3, 2], vertical_alignment="bottom")
    query = (find.text_input("Search the transcript", key=f"{key}_search", label_visibility="collapsed",
                             placeholder="Search the transcript", icon=":material/search:") or "").strip()
    turn = jump.selectbox("Jump to turn", list(range(1, len(messages) + 1)), index=None, key=f"{key}_jump",
                          placeholder=f"Jump to turn (1-{len(messages)})", label_visibility="collapsed")
    hits = None
    if query:
        hits = {n for n, m in enumerate(messages, start=1) if query.lower() in m.content.lower()}
        found = ", ".join(map(str, sorted(hits)))
        st.caption(f"{len(hits)} of {len(messages)} turns contain “{inert(query)}”" + (f": turns {found}" if hits else ""))
    with st.expander("Member intake profile", expanded=False):
        render_pairs(intake)
    who = visible_controls(member_name)
    turns = [panes.Turn(n=n, role="clinician" if m.role == "clinician" else "patient",
                        who="Clinician" if m.role == "clinician" else who,
                        text=visible_controls(m.content))
             for n, m in enumerate(messages, start=1) if hits is None or n in hits]
    panes.transcript(panes.Transcript(turns=turns, jump=turn, end=end, empty="No turn matches the search."),
                     key=f"{key}_pane")


URL_STUDY, URL_ITEM = "study", "item"


def restore_from_url(studies) -> None:
    """On a tab's first run of the rating page, take the study and transcript from the URL
    (``?study=ID&item=ID``, see :func:`remember_in_url`), so a reload comes back to them."""
    if st.session_state.get("_rate_url_read"):
        return
    st.session_state["_rate_url_read"] = True
    try:
        study = int(st.query_params.get(URL_STUDY, ""))
        item = int(st.query_params.get(URL_ITEM, ""))
    except ValueError:
        return
    if study in [p.study_id for p in studies]:
        st.session_state["rate_study"] = study
        st.session_state["assignment_id"] = item  # checked against the study's queue by the page


def remember_in_url(study_id: int, assignment_id: int) -> None:
    """Keep the study and transcript on screen in the URL (no rerun)."""
    if st.query_params.get(URL_STUDY) != str(study_id) or st.query_params.get(URL_ITEM) != str(assignment_id):
        st.query_params.update({URL_STUDY: str(study_id), URL_ITEM: str(assignment_id)})


def stream_while(work: Callable[[Callable[[str], None]], None]) -> None:
    """Run ``work(on_text)`` in a worker thread, writing the text it passes to ``on_text`` as
    it streams (st.write_stream); re-raise its error. The work finishes (and commits) even
    if the page is left meanwhile."""
    pieces: queue.Queue[str | None] = queue.Queue()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work(pieces.put)
        except BaseException as exc:  # handed to the page below
            failed.append(exc)
        finally:
            pieces.put(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()

    def stream():
        while True:
            try:
                piece = pieces.get(timeout=0.2)
            except queue.Empty:
                # A yield point while nothing streams: a message sent meanwhile reruns the page
                # at once (the work goes on in its thread) instead of waiting for this reply.
                _ = "_" in st.session_state
                continue
            if piece is None:
                return
            yield piece

    st.write_stream(stream())
    worker.join()
    if failed:
        raise failed[0]


def countdown(session_id: int, seconds_left: float, time_up: bool) -> None:
    """Minutes and seconds left, ticking in the browser; at zero it reruns the page, which then
    disables the chat box (:func:`annotation_app.panes.clock`)."""
    panes.clock(session_id, seconds_left, time_up)


def pick_study(studies, state_key: str, reset_key: str) -> int:
    """The chosen study id, remembered in session state; a selectbox when there are several."""
    ids = [p.study_id for p in studies]
    if st.session_state.get(state_key) not in ids:
        st.session_state[state_key] = ids[0]
    if len(studies) > 1:
        st.selectbox("Study", ids, format_func=lambda i: next(p.name for p in studies if p.study_id == i),
                     key=state_key, on_change=lambda: st.session_state.pop(reset_key, None))
    return st.session_state[state_key]


def pick_by_id(label: str, ids: list[int], labels: dict[int, str], state_key: str) -> None:
    """A list of ids shown by their labels; the choice is kept in ``st.session_state[state_key]``
    (which must hold one of ``ids``), and only ever an id of the list.

    The browser sends a list's choice back as its shown label, and a label it no longer
    knows comes back as the label itself: so the list is a new widget whenever the choice or
    any label changes (a session started, an item adjudicated), never reading a stale label."""
    current = st.session_state[state_key]
    digest = zlib.crc32(json.dumps([[i, labels[i]] for i in ids]).encode())
    key = f"{state_key}_pick_{current}_{digest:08x}"

    def chosen() -> None:
        picked = st.session_state.get(key)
        if picked in ids:
            st.session_state[state_key] = picked

    st.selectbox(label, ids, index=ids.index(current), format_func=labels.__getitem__, key=key, on_change=chosen)


def admin_study_page(title: str, key: str):
    """Header of an admin page: title, the study list (stops when empty), the chosen study."""
    v = require_admin()
    ws = workspace()
    st.title(title, anchor=False)
    studies = ws.studies(v)
    if not studies:
        st.info("No studies yet.")
        st.stop()
    chosen = st.selectbox("Study", [s.name for s in studies], key=key)
    return v, ws, studies, chosen


def _interval(lo_hi, fmt: str = "{:.2f}") -> str:
    return "—" if lo_hi is None else f"{fmt.format(lo_hi[0])}–{fmt.format(lo_hi[1])}"


def rater_table(table) -> None:
    """The Results page's rater table (``Workspace.raters``): one row per rater, failed
    qualifications named, and the drift of each rater over her blocks of items."""
    if not table.raters:
        return
    st.subheader("Raters", anchor=False)
    st.caption(table.note)
    failed = [r.name for r in table.raters if r.qualification == "failed"]
    if failed:
        st.warning("Failed the qualification (they receive no real items; `app admin assign` gives their items "
                   "to others): " + ", ".join(inert(n) for n in failed))
    tau = lambda x: "—" if x is None or x.tau is None else f"{x.tau:.2f}"  # noqa: E731
    st.dataframe([{
        "Rater": r.name, "Qualification": r.qualification, "Submitted": r.submitted,
        "Gold right": f"{r.gold.k}/{r.gold.n}", "Gold accuracy": "—" if r.gold.share is None else f"{r.gold.share:.0%}",
        "Gold 95% CI": _interval(r.gold.ci95, "{:.0%}"),
        "Median s/item": "—" if r.median_seconds is None else f"{r.median_seconds:.0f}",
        "Median 95% CI": _interval(r.median_seconds_ci95, "{:.0f}"), "Timed n": r.timed,
        "Skips": r.skips, "Flags": r.flags, "LOO τ": tau(r.loo), "LOO 95% CI": _interval(r.loo.ci95 if r.loo else None),
        "LOO n": r.loo.n if r.loo else 0,
    } for r in table.raters], hide_index=True, width="stretch", key="rater_table")
    with st.expander(f"Drift: each rater's blocks of {table.block} successive items"):
        st.dataframe([{
            "Rater": r.name, "Block": b.block, "Items": f"{b.first}–{b.last}", "Gold right": f"{b.gold.k}/{b.gold.n}",
            "Gold 95% CI": _interval(b.gold.ci95, "{:.0%}"), "LOO τ": tau(b.loo),
            "LOO 95% CI": _interval(b.loo.ci95 if b.loo else None), "LOO n": b.loo.n if b.loo else 0,
        } for r in table.raters for b in r.blocks], hide_index=True, width="stretch", key="drift_table")
