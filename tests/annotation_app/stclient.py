"""A simulated annotator that speaks Streamlit's own protocol (no browser): a WebSocket to
``/_stcore/stream`` carrying protobuf messages, and plain HTTP for the sign-in cookie route.

It does what the page does: runs the script (``rerun_script`` with the page, query string and
widget values), reads the elements the run sends back (widgets by their key), follows the
sign-in hand-off link (``/mindeval/session?t=...``) over HTTP and keeps the cookies it gets.
Used by the hosting tests and ``benchmarks/bench_app.py --hosting`` to put many annotators
on several app processes behind nginx. A dropped connection (its process was killed) is
reconnected by the caller with :meth:`StClient.connect`, as the page's own reconnect does.
"""

from __future__ import annotations

import re
import time
import urllib.request
from http.cookiejar import CookieJar
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

HANDOFF = re.compile(r'"(/mindeval/session\?t=[A-Za-z0-9_\-]+)"')
WIDGETS = ("text_input", "button", "radio", "text_area", "selectbox", "checkbox", "toggle")


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
        """One script run; returns when the server reports it finished (else :class:`Disconnected`)."""
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        msg.rerun_script.widget_states.widgets.extend(widgets or [])
        self.widgets, self.texts = {}, []
        try:
            self.ws.send(msg.SerializeToString())
            self._read_until_finished()
        except (ConnectionClosed, OSError, TimeoutError) as exc:
            raise Disconnected(str(exc)) from None

    def _read_until_finished(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(self.ws.recv(timeout=max(1.0, deadline - time.monotonic())))
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                self._note(fwd.delta.new_element)
            elif kind == "script_finished":
                if fwd.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    return
                self.widgets, self.texts = {}, []  # st.rerun(): the next run follows

    def _note(self, el) -> None:
        kind = el.WhichOneof("type")
        if kind in WIDGETS:
            w = getattr(el, kind)
            key = w.id.rsplit("-", 1)[-1] if "-" in w.id else w.id
            self.widgets[key] = (w.id, w)
        elif kind in ("html", "markdown", "alert", "heading"):
            self.texts.append(getattr(getattr(el, kind), "body", ""))
        elif kind == "bidi_component":  # a custom component's data (e.g. the sign-in hand-off's target)
            self.texts.append(el.bidi_component.json)

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

    def radio_ids(self) -> list[str]:
        """The widget ids of the rating pane's score radios, in page order."""
        return [wid for key, (wid, _) in self.widgets.items() if re.match(r"^a\d+_", key) and
                type(self.widgets[key][1]).__name__ == "Radio"]
