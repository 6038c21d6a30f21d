"""Annotators one app process serves (``bench_app.py --annotators 1,10,20``): N simulated
annotators on ONE ``mindeval app`` process (no proxy), on SQLite or on ``--db`` (PostgreSQL: a
fresh database of that server, dropped afterwards).

Each annotator signs in through the page (form, hand-off, cookie), opens a transcript of her own
and gives ``--keys`` scores one key at a time on the rating form component, all annotators at
once. The protocol annotators (tests/annotation_app/stclient.py) send the form's whole state as
a fragment run, as the browser does; key → stored ends when the form's answer acknowledges that
state (``ack[tab] >= seq``) and shows the score stored. With ``--chromium K``, K of them are real
headless Chromium pages pressing digit keys; their key → stored ends when the form says
``saved`` with the score in ``data-stored``. Afterwards every score is checked in the database:
lost (given, not stored) and misattributed (stored where nobody gave it).
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from appkit import free_port, make_workspace, start_app, stop, viewer, wait_healthy
from bench_app_hosting import _database, _drop, pct
from hostkit import Annotator, add_raters, form_saved, run_threads, score

STUDY = "Demo: rate transcripts"
TARGET_P95_S = 1.0


class BrowserAnnotator:
    """One annotator in headless Chromium (own profile, own thread), pressing digit keys."""

    def __init__(self, base: str, who: int, name: str, code: str, study: int, tmp: Path) -> None:
        self.base, self.who, self.name, self.code, self.study, self.tmp = base, who, name, code, study, tmp
        self.signin_s: float | None = None
        self.key_s: list[float] = []
        self.expected: dict[int, dict[int, int]] = {}

    def work(self, aids: list[int], keys: int, think: float) -> None:
        from browserkit import chromium_context, sign_in
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            ctx = chromium_context(p, tempfile.mkdtemp(dir=self.tmp), 1280, 720)
            page = ctx.new_page()
            page.set_default_timeout(180_000)
            t = time.perf_counter()
            sign_in(page, self.base + "/", self.name, self.code)
            self.signin_s = time.perf_counter() - t
            for aid in aids:
                self._rate(page, aid, keys, think)
            ctx.close()

    def _rate(self, page, aid: int, keys: int, think: float) -> None:
        page.goto(f"{self.base}/rate?study={self.study}&item={aid}")
        form_saved(page, aid)
        page.evaluate("() => document.activeElement?.blur()")  # keys rate only outside a text box
        fields = page.evaluate("() => JSON.parse(document.querySelector('.mindeval-rate').dataset.fields)")
        want = self.expected.setdefault(aid, {})
        for j in range(keys):
            want[j] = score(self.who, aid, j)
            t = time.perf_counter()
            page.keyboard.press(str(want[j]))  # the highlight then moves to the next sub-axis
            form_saved(page, aid, fields[j], str(want[j]))
            self.key_s.append(time.perf_counter() - t)
            _pause(think)


def _pause(think: float) -> None:
    """An annotator's reading time between keys: exponential around ``think`` seconds (0: none)."""
    if think > 0:
        time.sleep(random.expovariate(1 / think))  # the scenario's pace, not a wait for the app


def _protocol_work(a: Annotator, aids: list[int], keys: int, think: float) -> None:
    a.sign_in()
    for aid in aids:
        a.rate(aid, keys, between=lambda: _pause(think))


def _check(ws, people: list, codes: dict[str, str]) -> tuple[int, int, int]:
    """(scores stored as given, lost, misattributed) over every annotator's whole queue."""
    ok = lost = wrong = 0
    for a in people:
        v = viewer(ws, a.name, codes[a.name])
        for q in ws.queue(v, 1):
            item = ws.item(v, q.assignment_id)
            want = {item.subaxes[j].id: val for j, val in a.expected.get(q.assignment_id, {}).items()}
            for sub, val in want.items():
                ok += item.values.get(sub) == val
                lost += item.values.get(sub) != val
            wrong += sum(1 for sub in item.values if sub not in want)
    return ok, lost, wrong


def cell(url: str, n: int, keys: int, items: int, chromium: int, think: float, tmp: Path) -> dict[str, object]:
    """``n`` annotators (``chromium`` of them in Chromium) on one app process on ``url``."""
    ws = make_workspace(url)
    names = [f"ann{i}" for i in range(n)]
    codes = add_raters(ws, STUDY, names)
    queues = {}
    for i, name in enumerate(names):  # her own transcripts: each annotator starts at another one
        q = [e.assignment_id for e in ws.queue(viewer(ws, name, codes[name]), 1)]
        queues[name] = [q[(i + k) % len(q)] for k in range(items)]
    port = free_port()
    proc = start_app(url, port, tmp / f"app-{n}.log")
    errors: list[str] = []
    try:
        wait_healthy(port, proc, timeout=180)
        base = f"http://127.0.0.1:{port}"
        people = [BrowserAnnotator(base, i, nm, codes[nm], 1, tmp) if i < chromium else Annotator(base, i, nm, codes[nm], 1)
                  for i, nm in enumerate(names)]

        def work(a) -> None:
            try:
                if isinstance(a, BrowserAnnotator):
                    a.work(queues[a.name], keys, think)
                else:
                    _protocol_work(a, queues[a.name], keys, think)
            except BaseException as exc:  # noqa: BLE001 - counted and reported
                errors.append(f"{a.name}: {type(exc).__name__}: {str(exc)[:300]}")

        wall = run_threads(work, people)
    finally:
        stop(proc)
    ok, lost, wrong = _check(ws, people, codes)
    ws.close()
    return {"signin": [a.signin_s for a in people if a.signin_s is not None],
            "key": [x for a in people for x in a.key_s], "key_browser": [x for a in people[:chromium] for x in a.key_s],
            "wall": wall, "ok": ok, "lost": lost, "misattributed": wrong, "errors": errors,
            "given": sum(len(w) for a in people for w in a.expected.values())}


def _figure(xs: list[float]) -> str:
    return f"{pct(xs, .5):.2f} / {pct(xs, .95):.2f} s (n={len(xs)})" if xs else "– (n=0)"


def run(counts: list[int], db: str | None, keys: int, items: int, chromium: int, think: float) -> None:
    """Every N of ``counts`` on one fresh process and database; a table and the largest N served."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(f"one app process on {'PostgreSQL' if db else 'SQLite'}; {keys} keys x {items} transcript(s) each, "
              f"{chromium} in Chromium, think time {think:g} s; percentiles by rank")
        print("annotators | sign-in p50/p95 (n) | key->stored p50/p95 (n) | Chromium key->stored | "
              "stored / lost / misattributed of given | keys/s | errors")
        served = 0
        for n in counts:
            handle = None
            url = f"sqlite:///{tmp / f'ann{n}.db'}"
            if db:
                url, handle = _database(db)
            try:
                r = cell(url, n, keys, items, min(chromium, n), think, tmp)
            finally:
                if handle:
                    _drop(handle)
            k = r["key"]
            rate = len(k) / r["wall"] if r["wall"] else 0.0
            print(f"{n:>10} | {_figure(r['signin'])} | {_figure(k)} | {_figure(r['key_browser'])} | "
                  f"{r['ok']} / {r['lost']} / {r['misattributed']} of {r['given']} | {rate:.1f} | {len(r['errors'])}",
                  flush=True)
            for e in r["errors"][:3]:
                print(f"    error: {e}")
            if k and pct(k, .95) <= TARGET_P95_S and not r["errors"] and not r["lost"] and not r["misattributed"]:
                served = max(served, n)
        print(f"annotators one process serves (key->stored p95 <= {TARGET_P95_S:g} s, nothing lost): "
              f"{served or 'none of ' + ','.join(map(str, counts))}")
