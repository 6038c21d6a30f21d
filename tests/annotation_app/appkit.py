"""Helpers of the annotation-app tests: seeded workspaces, AppTest helpers, a live server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from annotation_app.demo import seed_demo
from annotation_app.services import DB_ENV, SYSTEM, Workspace
from tests.support.net import free_port  # noqa: F401 - the app tests take it from here

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "annotation_app" / "app.py"
ADMIN_CODE = "ADMIN-CODE-1234"
DEMO_CODE = "DEMO-CODE-5678"


# A target folder outside the package, with a categorical scale (best practice 2 / suboptimal 1 /
# potential for harm 0, N/A allowed on some sub-axes only).
TOY_TARGET = ROOT / "tests" / "fixtures" / "targets" / "toy"
# The categorical form the app tests rate on: the crisis-safety target (five dimensions, levels best
# practice 2 / suboptimal 1 / potential for harm 0, N/A on two of them).
CATEGORICAL_TARGET: str | Path = "crisis"
TARGET_STUDY = "Crisis form: rate transcripts"


def make_workspace(url: str, clinician: str = "fake/echo", *, unit_studies: bool = False) -> Workspace:
    """The demo workspace; ``unit_studies``: with its risk-checklist and reply-by-reply studies
    (studies 3 and 4), which the tests of other forms leave out."""
    ws = Workspace(url)
    seed_demo(ws, admin_code=ADMIN_CODE, annotator_code=DEMO_CODE, clinician_model=clinician,
              unit_studies=unit_studies)
    return ws


def add_target_study(ws: Workspace, target: str | Path = CATEGORICAL_TARGET) -> int:
    """A rating study of ``target`` holding the six demo transcripts, all assigned to ``demo``."""
    info = ws.create_study(SYSTEM, TARGET_STUDY, "rating", target=target)
    ws.import_path(SYSTEM, TARGET_STUDY, ROOT / "data" / "demo_transcripts.jsonl")
    ws.assign(SYSTEM, TARGET_STUDY, annotators=["demo"])
    return info.id


def component(at, name: str) -> tuple[str, dict]:
    """A form component of an AppTest page (annotation_app.forms): (its widget id, the data Python gave it)."""
    el = next(e for e in at.get("bidi_component") if e.proto.component_name == name)
    return el.proto.id, json.loads(el.proto.json)


def rating_form(at) -> tuple[str, dict]:
    return component(at, "mindeval_rate")


def component_send(at, name: str, event: str, value: dict, *, trigger: bool):
    """What a form component's script sends: ``value`` as its state ``event`` or as its trigger
    ``event``, with the page's other widgets as they stand; runs the page."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from streamlit.runtime.state.session_state import STREAMLIT_INTERNAL_KEY_PREFIX

    wid, _ = component(at, name)
    states = at._tree.get_widget_states()
    kept = [w for w in states.widgets if w.id != wid]
    del states.widgets[:]
    states.widgets.extend(kept)
    if trigger:
        states.widgets.append(WidgetState(id=f"{STREAMLIT_INTERNAL_KEY_PREFIX}_{wid}__events",
                                          json_trigger_value=json.dumps([{"event": event, "value": value}])))
    else:
        states.widgets.append(WidgetState(id=wid, json_value=json.dumps({event: value})))
    return at._run(states)


def form_send(at, values: dict | None = None, texts: dict | None = None, *, submit: bool = False,
              tab: str = "apptest", item: int | None = None, seq: int | None = None, reply: int | None = None):
    """What the rating form's script sends: its whole state (the stored labels, ``values`` and
    ``texts`` changed) for its item (or ``item``) as the next ``(tab, seq)`` (or ``seq``: a replay),
    or that state's Submit, or (``reply``) its step to the reply at that position; runs the page."""
    _, data = rating_form(at)
    if seq is None:
        seq = getattr(at, "_form_seq", 0) + 1
        at._form_seq = seq
    act = {"tab": tab, "seq": seq, "item": data["item"] if item is None else item,
           "values": {**data["stored"], **(values or {})}, "texts": {**data["texts"], **(texts or {})},
           "version": data["version"]}
    if reply is not None:
        return component_send(at, "mindeval_rate", "step", act | {"reply": reply}, trigger=True)
    return component_send(at, "mindeval_rate", "submit" if submit else "form", act, trigger=submit)


class FormField:
    """One sub-axis of the rating form in an AppTest, used like the radio it replaced."""

    def __init__(self, at, data: dict, axis: dict) -> None:
        self.at, self.data, self.axis = at, data, axis
        self.options = axis["options"]
        self.disabled = bool(data["locked"])
        label = data["stored"].get(axis["id"], "")
        self.value = None if not label else (label if label == "N/A" or not label.isdigit() else int(label))

    def set_value(self, value):
        axis = self.axis["id"]
        return _Send(lambda: form_send(self.at, {axis: str(value)}))


class _Send:
    def __init__(self, go) -> None:
        self.go = go

    def run(self):
        return self.go()


def form_fields(at) -> dict[str, FormField]:
    """Sub-axis id → its field of the rating form (an AppTest page)."""
    _, data = rating_form(at)
    return {a["id"]: FormField(at, data, a) for a in data["axes"]}


# Seconds one AppTest script run may take: a run that takes 2 s idle takes a minute beside a CPU hog
# and three other test workers, and a timed-out run fails the test without telling anything.
APPTEST_TIMEOUT = float(os.environ.get("MINDEVAL_APPTEST_TIMEOUT", "300"))


def new_app(path: Path = APP):
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(path), default_timeout=APPTEST_TIMEOUT)


def sign_in(name: str, code: str):
    """A fresh browser session that signs in through the sign-in form."""
    at = new_app().run()
    at.text_input(key="signin_name").input(name)
    at.text_input(key="signin_code").input(code)
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at


def all_text(at) -> str:
    """Every element's content on the current page (for blinding and security checks)."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        children = getattr(node, "children", None) or {}
        for child in children.values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def viewer(ws: Workspace, name: str, code: str):
    signed = ws.sign_in(name, code)
    assert signed is not None
    return signed.viewer


def wait_for(check, what: str = "the expected state", timeout: float = 90.0, proc: subprocess.Popen | None = None):
    """Poll ``check()`` until it returns something truthy (observable state, no fixed sleep); fail after
    ``timeout`` seconds, or as soon as ``proc`` (when given) has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with code {proc.returncode}")
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> float:
    """Seconds until ``/_stcore/health`` answers ``ok``."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
                if r.read().decode().strip() == "ok":
                    return time.perf_counter() - start
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("the app did not become healthy")


def start_app(url: str, port: int, log: Path) -> subprocess.Popen:
    """``mindeval app --db URL`` (which execs ``streamlit run``) on 127.0.0.1:port."""
    env = dict(os.environ)
    env[DB_ENV] = url
    return subprocess.Popen(
        [sys.executable, "-m", "mindeval", "app", "--db", url, "--port", str(port)],
        stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, cwd=ROOT,
    )


def stop(proc: subprocess.Popen, timeout: float = 15) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


__all__ = ["SYSTEM"]
