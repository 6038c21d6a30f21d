"""A simulated annotator that speaks Streamlit's own protocol (no browser): a WebSocket to
``/_stcore/stream`` carrying protobuf messages, and plain HTTP for the sign-in cookie route.

It does what the page does: runs the script (``rerun_script`` with the page, query string and
widget values), reads the elements the run sends back (widgets by their key), follows the
sign-in hand-off link (``/mindeval/session?t=...``) over HTTP and keeps the cookies it gets.
Used by the hosting tests and ``benchmarks/bench_app.py --hosting`` to put many annotators
on several app processes behind nginx. A dropped connection (its process was killed) is
reconnected by the caller with :meth:`StClient.connect`, as the page's own reconnect does.

Custom components (v2, ``bidi_component`` elements) are read by name (:meth:`StClient.component`:
their element id, the JSON data Python gave them, the fragment that holds them), and
:meth:`StClient.component_send` sends a state or a trigger the way the browser does: all the
page's widget states as they stand, the component's replaced, as a *fragment* rerun when the
component lives in an ``st.fragment`` (the page script's hash, the fragment's id).
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
import uuid
from http.cookiejar import CookieJar
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.runtime.state.session_state import STREAMLIT_INTERNAL_KEY_PREFIX
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

HANDOFF = re.compile(r'"(/mindeval/session\?t=[A-Za-z0-9_\-]+)"')
WIDGETS = ("text_input", "button", "radio", "text_area", "selectbox", "checkbox", "toggle")


class Component:
    """A custom component (v2) as the last run showed it."""

    def __init__(self, el, fragment_id: str) -> None:
        self.name, self.id, self.fragment_id = el.component_name, el.id, fragment_id
        self.data = json.loads(el.json) if el.json else None


class Disconnected(Exception):
    """The app process went away mid-run (the caller reconnects, maybe to another process)."""


class StClient:
    """One simulated browser on ``base`` (``http://host:port``), with its own cookie jar."""

    def __init__(self, base: str, timeout: float = 180.0) -> None:
        self.base = base.rstrip("/")
        self.timeout = timeout
        self.jar = CookieJar()
        self.http = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.ws = None
        self.widgets: dict[str, tuple[str, object]] = {}  # user key -> (widget id, element proto)
        self.texts: list[str] = []
        self.components: dict[str, Component] = {}  # component name -> as last shown
        self.states: dict[str, WidgetState] = {}  # widget id -> the value this page holds (sent again each run)
        self.page_hash = ""
        self.query = ""

    def cookie(self, name: str) -> str | None:
        return next((c.value for c in self.jar if c.name == name), None)

    def get(self, path: str) -> int:
        with self.http.open(self.base + path, timeout=self.timeout) as r:
            r.read()
            return r.status

    def connect(self) -> None:
        """Open the page's WebSocket (the first GET sets the routing and XSRF cookies)."""
        self.close()
        self.get("/_stcore/health")
        host = urlsplit(self.base).netloc
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.jar)
        xsrf = self.cookie("_streamlit_xsrf") or ""
        self.ws = connect(f"ws://{host}/_stcore/stream", subprotocols=["streamlit", xsrf] if xsrf else ["streamlit"],
                          additional_headers={"Cookie": cookies, "Origin": self.base}, open_timeout=30,
                          max_size=None).__enter__()

    def close(self) -> None:
        if self.ws is not None:
            try:
                self.ws.close()
            except Exception:  # noqa: BLE001 - a dead process's socket
                pass
            self.ws = None

    def run(self, page: str = "", query: str = "", widgets: list[WidgetState] | None = None) -> None:
        """One script run of the whole page (a page load when ``widgets`` is empty: this page's
        remembered widget states start afresh); returns when the server reports it finished
        (else :class:`Disconnected`)."""
        if not widgets:
            self.states = {}
        msg = BackMsg()
        msg.rerun_script.query_string = self.query = query
        msg.rerun_script.page_name = page
        msg.rerun_script.widget_states.widgets.extend(widgets or [])
        self.widgets, self.texts, self.components = {}, [], {}
        self._send(msg)

    def _send(self, msg: BackMsg) -> None:
        try:
            self.ws.send(msg.SerializeToString())
            self._read_until_finished()
        except (ConnectionClosed, OSError, TimeoutError) as exc:
            raise Disconnected(str(exc)) from None

    def component(self, name: str) -> Component | None:
        return self.components.get(name)

    def component_send(self, name: str, event: str, value: dict, *, trigger: bool = False) -> None:
        """What component ``name``'s script sends: ``value`` as its state ``event`` (``setStateValue``)
        or its trigger ``event`` (``setTriggerValue``), with the page's other widget states as they
        stand; a fragment rerun when the component is in a fragment, as the browser sends it."""
        comp = self.components[name]
        if trigger:
            tid = f"{STREAMLIT_INTERNAL_KEY_PREFIX}_{comp.id}__events"
            sent = WidgetState(id=tid, json_trigger_value=json.dumps([{"event": event, "value": value}]))
        else:
            state = json.loads(self.states[comp.id].json_value) if comp.id in self.states else {}
            sent = WidgetState(id=comp.id, json_value=json.dumps({**state, event: value}))
            self.states[comp.id] = sent
        msg = BackMsg()
        run = msg.rerun_script
        run.query_string, run.page_script_hash, run.fragment_id = self.query, self.page_hash, comp.fragment_id
        run.widget_states.widgets.extend([w for wid, w in self.states.items() if wid != sent.id] + [sent])
        self.texts = []  # a fragment run shows the fragment's texts; a whole run the page's
        if not comp.fragment_id:
            self.widgets, self.components = {}, {}
        self._send(msg)

    def _read_until_finished(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(self.ws.recv(timeout=max(1.0, deadline - time.monotonic())))
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                self._note(fwd.delta.new_element, fwd.delta.fragment_id)
            elif kind == "new_session":
                self.page_hash = fwd.new_session.page_script_hash
            elif kind == "script_finished":
                if fwd.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    return
                self.widgets, self.texts, self.components = {}, [], {}  # st.rerun(): the next run follows

    def _note(self, el, fragment_id: str = "") -> None:
        kind = el.WhichOneof("type")
        if kind == "bidi_component":  # a custom component: its data (e.g. the sign-in hand-off's target) too
            self.components[el.bidi_component.component_name] = Component(el.bidi_component, fragment_id)
            self.texts.append(el.bidi_component.json)
        elif kind in WIDGETS:
            w = getattr(el, kind)
            key = w.id.rsplit("-", 1)[-1] if "-" in w.id else w.id
            self.widgets[key] = (w.id, w)
        elif kind in ("html", "markdown", "alert", "heading"):
            self.texts.append(getattr(getattr(el, kind), "body", ""))

    def text(self) -> str:
        return "\n".join(self.texts)

    def sign_in(self, name: str, code: str) -> None:
        """Fill the sign-in form, click the button and follow the hand-off to the session cookie."""
        self.run()
        n_id, c_id = (self.widgets[k][0] for k in ("signin_name", "signin_code"))
        b_id = next(wid for wid, w in self.widgets.values() if getattr(w, "is_form_submitter", False))
        states = [WidgetState(id=n_id, string_value=name), WidgetState(id=c_id, string_value=code),
                  WidgetState(id=b_id, trigger_value=True)]
        self.run(widgets=states)
        found = HANDOFF.search(self.text())
        if not found:
            raise AssertionError(f"no sign-in hand-off for {name}: {self.text()[:300]}")
        self.get(found.group(1))
        if not self.cookie("mindeval_session"):
            raise AssertionError(f"the session route set no cookie for {name}")
        self.connect()  # the page reloads: a new connection that carries the session cookie


class RateTab:
    """The rating form's browser side (annotation_app/assets/forms/rate.js) on a :class:`StClient`:
    one tab id and its sequence numbers; each change sent as the form's whole state."""

    NAME = "mindeval_rate"

    def __init__(self, client: StClient) -> None:
        self.c = client
        self.tab = uuid.uuid4().hex[:16]
        self.seq = 0

    def data(self) -> dict | None:
        """What Python last gave the form (``None``: no rating form on the page)."""
        comp = self.c.component(self.NAME)
        return comp.data if comp else None

    def state(self, values: dict[str, str], texts: dict[str, str] | None = None) -> dict:
        """The next state: what is stored with ``values`` / ``texts`` changed, at the shown version."""
        d = self.data()
        self.seq += 1
        return {"tab": self.tab, "seq": self.seq, "item": d["item"], "values": {**d["stored"], **values},
                "texts": {**d["texts"], **(texts or {})}, "version": d["version"]}

    def send(self, state: dict, *, submit: bool = False) -> None:
        """Send ``state`` (a fragment run) or its Submit (a trigger)."""
        self.c.component_send(self.NAME, "submit" if submit else "form", state, trigger=submit)

    def acked(self, state: dict) -> bool:
        """The form's data says ``state`` was applied (or seen before) and every value in it is stored."""
        d = self.data()
        return (d is not None and d["item"] == state["item"] and d["ack"].get(self.tab, 0) >= state["seq"]
                and all(d["stored"].get(f) == v for f, v in state["values"].items() if v))
