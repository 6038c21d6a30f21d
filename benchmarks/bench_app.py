"""Annotation app speed: cold start (process start → /_stcore/health ok) and time to save a rating.

Usage: .venv/bin/python benchmarks/bench_app.py [--starts 3] [--ratings 30] [--db URL] [--passes 20]
       [--target crisis]
Saving is measured at the service layer (one autosaved choice, the justification,
a submit) on SQLite by default or on ``--db``, end to end through Streamlit's AppTest
(one click on a score → script re-run → value committed), and in headless Chromium:
rating one transcript with the keyboard (clicks, keys, seconds), rapid clicking
(9 scores 60-100 ms apart per pass, then the scores shown compared with the database)
and the time from a click until the page confirms the score is stored. ``--target NAME|PATH``
instead rates one transcript of a study of that target (e.g. the categorical crisis form) with the keyboard.
``--annotators [1,10,20]`` (without ``--hosting``) puts N simulated annotators on ONE app process (SQLite,
or ``--db``), each signing in and giving ``--keys`` scores one key at a time on the rating form; key → stored
and sign-in p50/p95 with n per N, every score checked in the database, and the largest N whose key → stored
p95 ≤ 1 s (``benchmarks/bench_app_annotators.py``; ``--chromium K``: K of them in headless Chromium,
``--think S``: mean seconds between an annotator's keys, default 0 = all pressing at once).
``--hosting`` runs 1, 2 and 4 processes behind nginx on PostgreSQL with 10, 20 and 40 simulated annotators
(``benchmarks/bench_app_hosting.py``; ``--processes``/``--annotators`` choose others).
``--robustness`` gives the rating page's figures of issue 17 in Chromium at 1280×720: sub-axes
and Submit visible without scrolling, one transcript rated by mouse only (clicks, keys, seconds),
scores lost over reloads ~100 ms after 9 fast clicks, and two tabs editing the same item.
``--latency N`` gives only the time from a digit key until the page shows the score stored (N keys).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "annotation_app"))
sys.path.insert(0, str(ROOT))  # tests.support (the kits import it) and this checkout's packages
sys.path.insert(0, str(ROOT / "benchmarks"))

from appkit import (  # noqa: E402
    DEMO_CODE,
    add_target_study,
    form_fields,
    free_port,
    make_workspace,
    start_app,
    stop,
    viewer,
    wait_healthy,
)
from browserkit import CHROMIUM, chromium_context, sign_in  # noqa: E402

from annotation_app.services import DB_ENV, SYSTEM  # noqa: E402


def cold_starts(n: int, tmp: Path) -> list[float]:
    url = f"sqlite:///{tmp / 'cold.db'}"
    make_workspace(url).close()
    out = []
    for i in range(n):
        port = free_port()
        started = time.perf_counter()
        proc = start_app(url, port, tmp / f"cold{i}.log")
        try:
            wait_healthy(port, proc)
            out.append(time.perf_counter() - started)
        finally:
            stop(proc)
    return out


def first_page(tmp: Path) -> tuple[float, float] | None:
    """In headless Chromium: process start → sign-in form usable, and click on Sign in →
    home page shown after the session-cookie hand-off (None if no browser)."""
    if not Path(CHROMIUM).is_file():
        return None
    from playwright.sync_api import sync_playwright

    from annotation_app.handoff import SESSION_ROUTE

    url = f"sqlite:///{tmp / 'page.db'}"
    make_workspace(url).close()
    with sync_playwright() as p:
        ctx = chromium_context(p, tempfile.mkdtemp(dir=tmp))
        page = ctx.new_page()
        port = free_port()
        started = time.perf_counter()
        proc = start_app(url, port, tmp / "page.log")
        try:
            wait_healthy(port, proc)
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_label("Access code").wait_for(timeout=60_000)
            usable = time.perf_counter() - started
            page.get_by_label("Your name").fill("demo")
            page.get_by_label("Access code").fill(DEMO_CODE)
            clicked = time.perf_counter()
            with page.expect_response(lambda r: SESSION_ROUTE in r.url, timeout=60_000):
                page.get_by_role("button", name="Sign in").click()
            page.wait_for_load_state()
            page.get_by_text("Hello, demo").wait_for(timeout=60_000)
            return usable, time.perf_counter() - clicked
        finally:
            stop(proc)
            ctx.close()


def service_saves(url: str, n: int) -> dict[str, list[float]]:
    ws = make_workspace(url)
    for k in range(n):
        ws.add_annotator(SYSTEM, f"bench{k}", code=f"BENCH-CODE-{k:04d}")
    ws.assign(SYSTEM, 1, k=1 + n)
    times: dict[str, list[float]] = {"save one score": [], "save justification": [], "submit": [], "whole rating": []}
    for k in range(n):
        v = ws.sign_in(f"bench{k}", f"BENCH-CODE-{k:04d}").viewer
        aid = ws.queue(v, 1)[0].assignment_id
        t_all = time.perf_counter()
        for sub in ws.subaxes():
            t = time.perf_counter()
            ws.save_value(v, aid, sub.id, 4)
            times["save one score"].append(time.perf_counter() - t)
        t = time.perf_counter()
        ws.save_text(v, aid, justification="benchmark")
        times["save justification"].append(time.perf_counter() - t)
        t = time.perf_counter()
        ws.submit(v, aid)
        times["submit"].append(time.perf_counter() - t)
        times["whole rating"].append(time.perf_counter() - t_all)
    ws.close()
    return times


def apptest_click(tmp: Path, n: int) -> list[float]:
    from streamlit.testing.v1 import AppTest

    url = f"sqlite:///{tmp / 'apptest.db'}"
    os.environ[DB_ENV] = url
    make_workspace(url).close()
    at = AppTest.from_file(str(ROOT / "annotation_app" / "app.py"), default_timeout=60).run()
    at.text_input(key="signin_name").input("demo")
    at.text_input(key="signin_code").input(DEMO_CODE)
    at.button[0].click().run()
    at.button(key="open_1").click().run()
    out = []
    for i in range(n):
        field = form_fields(at)["coherence_style"]
        t = time.perf_counter()
        field.set_value(1 + i % 6).run()
        out.append(time.perf_counter() - t)
    return out


TEXT = "Warm, but moved to advice too fast (turn 6)."


def keyboard_rating(page, keys: list[str], text: str) -> float:
    """Seconds to rate the transcript on screen by keys alone: a key per sub-axis, the
    justification typed where the cursor lands, Ctrl+Enter, until the page says submitted."""
    started = time.perf_counter()
    for k in keys:
        page.keyboard.press(k)
    page.wait_for_function("() => document.activeElement?.getAttribute('aria-label') === 'Justification'")
    page.keyboard.type(text)
    page.keyboard.press("Control+Enter")
    page.get_by_text("Rating submitted").wait_for()
    return time.perf_counter() - started


def target_rating(tmp: Path, target: str) -> dict[str, object] | None:
    """One transcript of a ``target`` study rated with the keyboard in Chromium at 1280×720:
    keys 1..n pick the levels, N = N/A where allowed; every value checked in the database."""
    if not Path(CHROMIUM).is_file():
        return None

    from annotation_app.services import Workspace

    url = f"sqlite:///{tmp / 'target.db'}"
    ws = Workspace(url)
    ws.add_annotator(SYSTEM, "demo", code=DEMO_CODE)
    study = add_target_study(ws, target)
    g = ws.guidelines(study)
    subs = g.human_subaxes
    keys = ["n" if s.allow_na and n % 2 else str(1 + n % len(g.levels)) for n, s in enumerate(subs)]
    out: dict[str, object] = {"sub-axes": len(subs), "keys": len(keys) + len(TEXT) + 1}
    try:
        with rating_page(url, tmp, "target", len(subs)) as page:
            out["seconds"] = keyboard_rating(page, keys, TEXT)
        v = viewer(ws, "demo", DEMO_CODE)
        item = ws.item(v, ws.queue(v, study)[0].assignment_id)
        na = item.scale.na_value
        out["stored"] = item.state == "submitted" and [item.values.get(s.id) for s in subs] == [
            na if k == "n" else g.levels[int(k) - 1].value for k in keys]
    finally:
        ws.close()
    return out


# The rating form component with nothing left to save, and its sub-axes (assets/forms/rate.js).
FORM_READY = '.mindeval-rate[data-state="saved"] fieldset.rate-axis'
FIELDS = ".mindeval-rate fieldset.rate-axis"
# The labels the form shows as chosen, in order ("" = none).
FORM_SHOWN_JS = "() => JSON.parse(document.querySelector('.mindeval-rate')?.dataset.shown || '[]')"
FORM_ALL_SAVED_JS = "() => document.querySelector('.mindeval-rate')?.dataset.state === 'saved'"


def _form_saved(page) -> None:
    page.wait_for_function(FORM_ALL_SAVED_JS)


def _stored(page, want: list[str], timeout: int = 180_000) -> None:
    """Wait until the form shows ``want`` (labels, "" = none) as chosen and stored, nothing left to save."""
    page.wait_for_function("""want => { const f = document.querySelector('.mindeval-rate');
      return !!f && f.dataset.state === 'saved' && f.dataset.stored === JSON.stringify(want)
        && f.dataset.shown === JSON.stringify(want); }""", arg=want, timeout=timeout)


def _form_item(page) -> int:
    return int(page.get_attribute(".mindeval-rate", "data-item"))


@contextmanager
def rating_page(url: str, tmp: Path, name: str, n_subs: int) -> Iterator[Any]:
    """The app on ``url`` in headless Chromium at 1280×720, signed in, on the first item's rating pane."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc = start_app(url, port, tmp / f"{name}.log")
    try:
        wait_healthy(port, proc)
        with sync_playwright() as p:
            ctx = chromium_context(p, tempfile.mkdtemp(dir=tmp), 1280, 720)
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            sign_in(page, f"http://127.0.0.1:{port}/")
            page.get_by_role("button", name="Continue rating").click()
            page.locator(FORM_READY).nth(n_subs - 1).wait_for()
            yield page
            ctx.close()
    finally:
        stop(proc)


def browser_rating(tmp: Path, passes: int) -> dict[str, object] | None:
    """Keyboard rating, rapid-click lost saves and click → confirmed save, in headless Chromium at 1280×720."""
    if not Path(CHROMIUM).is_file():
        return None
    import random
    import re

    from annotation_app.services import Workspace

    url = f"sqlite:///{tmp / 'browser.db'}"
    make_workspace(url).close()
    ws = Workspace(url)
    v = viewer(ws, "demo", DEMO_CODE)
    subs = ws.subaxes()
    out: dict[str, object] = {}
    try:
        with rating_page(url, tmp, "browser", len(subs)) as page:
            # 1. one transcript with the keyboard: 9 digits, no click, type, Ctrl+Enter
            keys = [str(1 + n % 6) for n in range(len(subs))]
            out["keyboard seconds"] = keyboard_rating(page, keys, TEXT)
            out["keyboard clicks"] = 0
            out["keyboard keys"] = len(subs) + len(TEXT) + 1
            first = ws.queue(v, 1)[0].assignment_id
            out["keyboard stored"] = ws.item(v, first).values == {s.id: 1 + n % 6 for n, s in enumerate(subs)}
            _form_saved(page)
            # 2. rapid passes: every score shown must be the one stored
            rng = random.Random(7)
            lost = 0
            for _ in range(passes):
                groups = page.locator(FIELDS)
                for i in range(len(subs)):
                    groups.nth(i).locator("label").filter(has_text=re.compile(rf"^{rng.randint(1, 6)}$")).click()
                    page.wait_for_timeout(rng.randint(60, 100))
                _form_saved(page)
                pos = int(re.search(r"Transcript (\d+) of", page.inner_text("body")).group(1))
                stored = ws.item(v, ws.queue(v, 1)[pos - 1].assignment_id).values
                shown = page.evaluate(FORM_SHOWN_JS)
                lost += shown != [str(stored[s.id]) if s.id in stored else "" for s in subs]
            out["rapid passes"] = passes
            out["lost-save passes"] = lost
            # 3. one click → the page confirms the value is stored
            waits = []
            group = page.locator(FIELDS).first
            for n in range(20):
                value = str(1 + (n % 2))
                t = time.perf_counter()
                group.locator("label").filter(has_text=re.compile(rf"^{value}$")).click()
                page.wait_for_function(FIRST_STORED_JS, arg=value)
                waits.append(time.perf_counter() - t)
            out["click to confirmed save"] = waits
    finally:
        ws.close()
    return out


VISIBLE_JS = """() => {
  const pane = document.querySelector('.mindeval-rate').getBoundingClientRect();
  const subs = [...document.querySelectorAll('.mindeval-rate fieldset.rate-axis')]
    .map(g => g.getBoundingClientRect())
    .filter(r => r.top >= Math.max(0, pane.top) && r.bottom <= Math.min(window.innerHeight, pane.bottom)).length;
  const b = document.querySelector('.mindeval-rate button.rate-submit').getBoundingClientRect();
  return [subs, b.top >= 0 && b.bottom <= window.innerHeight, document.scrollingElement.scrollTop];
}"""


# The first sub-axis's stored label equals v and nothing is left to save (the rating form component).
FIRST_STORED_JS = """v => { const f = document.querySelector('.mindeval-rate');
  return !!f && f.dataset.state === 'saved' && JSON.parse(f.dataset.stored || '[]')[0] === v; }"""


def key_latency(tmp: Path, n: int) -> list[float] | None:
    """Seconds from a digit key on the highlighted first sub-axis until the page shows it stored
    (then K moves the highlight back), ``n`` times, in Chromium at 1280×720."""
    if not Path(CHROMIUM).is_file():
        return None
    url = f"sqlite:///{tmp / 'latency.db'}"
    make_workspace(url).close()
    waits = []
    with rating_page(url, tmp, "latency", 9) as page:
        page.evaluate("() => document.activeElement?.blur()")  # keys rate only outside a text box
        for i in range(n):
            value = str(1 + (i % 2))
            t = time.perf_counter()
            page.keyboard.press(value)
            page.wait_for_function(FIRST_STORED_JS, arg=value)
            waits.append(time.perf_counter() - t)
            page.keyboard.press("k")
    return waits


def _click(page, group: int, label: str) -> None:
    import re

    page.locator(FIELDS).nth(group).locator("label").filter(
        has_text=re.compile(rf"^{re.escape(label)}$")).click()


def robustness(tmp: Path, passes: int, shots: Path | None) -> dict[str, object] | None:
    """Issue 17's figures of the rating page in Chromium at 1280×720 (see the module docstring)."""
    if not Path(CHROMIUM).is_file():
        return None
    import random

    from annotation_app.services import Workspace

    url = f"sqlite:///{tmp / 'robust.db'}"
    make_workspace(url).close()
    ws = Workspace(url)
    v = viewer(ws, "demo", DEMO_CODE)
    subs = ws.subaxes()
    out: dict[str, object] = {}
    try:
        with rating_page(url, tmp, "robust", len(subs)) as page:
            out["visible"] = page.evaluate(VISIBLE_JS)
            if shots:
                shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shots / "rate-1280x720.png"))
            # 1. one transcript by mouse: a click per score, a click into the box, typing, a click on Submit
            want = [str(1 + n % 6) for n in range(len(subs))]
            started = time.perf_counter()
            for i, score in enumerate(want):
                _click(page, i, score)
            page.get_by_label("Justification").click()
            page.keyboard.type(TEXT)
            page.get_by_role("button", name="Submit rating").click()
            page.get_by_text("Rating submitted").wait_for()
            out["mouse seconds"] = time.perf_counter() - started
            out["mouse clicks"], out["mouse keys"] = len(subs) + 2, len(TEXT)
            item = ws.item(v, ws.queue(v, 1)[0].assignment_id)
            out["mouse stored"] = (item.state == "submitted" and item.justification == TEXT
                                   and [str(item.values[s.id]) for s in subs] == want)
            # 2. keyboard on the next transcript: a key per score, typing, Ctrl+Enter
            page.reload()  # the next transcript, without the first one's "Rating submitted" message
            page.locator(FORM_READY).nth(len(subs) - 1).wait_for()
            _form_saved(page)
            aid = _form_item(page)
            out["keyboard seconds"] = keyboard_rating(page, [str(1 + n % 6) for n in range(len(subs))], TEXT)
            out["keyboard keys"] = len(subs) + len(TEXT) + 1
            item = ws.item(v, aid)
            out["keyboard stored"] = (item.state == "submitted" and item.justification == TEXT
                                      and item.values == {s.id: 1 + n % 6 for n, s in enumerate(subs)})
            # 3. reloads ~100 ms after 9 fast clicks
            asked: list[str] = []
            page.on("dialog", lambda d: (asked.append(d.type), d.accept()))
            rng = random.Random(3)
            lost = []
            for _ in range(passes):
                page.locator(FORM_READY).nth(len(subs) - 1).wait_for()
                aid = _form_item(page)
                shown = page.evaluate(FORM_SHOWN_JS)
                want = [rng.choice([x for x in "123456" if x != shown[i]]) for i in range(len(subs))]
                for i, score in enumerate(want):
                    _click(page, i, score)
                page.wait_for_timeout(100)  # the scenario, not a wait for the app
                page.reload()
                page.locator(FORM_READY).nth(len(subs) - 1).wait_for()
                try:
                    _stored(page, want, timeout=30_000)
                except Exception:  # counted below from the database
                    pass
                db = ws.item(v, aid).values
                lost.append(sum(str(db.get(s.id)) != w for s, w in zip(subs, want)))
            out["reload lost"], out["reload passes"], out["reload asked"] = lost, passes, asked.count("beforeunload")
            # 4. two tabs of the same annotator on the same item
            coh, other = [s.id for s in subs].index("coherence_style"), 0
            tab2 = page.context.new_page()
            base = [None] * len(subs)
            _click(page, coh, "3")
            base = page.evaluate(FORM_SHOWN_JS)
            _stored(page, base)
            tab2.goto(page.url)
            tab2.locator(FORM_READY).nth(len(subs) - 1).wait_for()
            _stored(tab2, base)
            _click(page, coh, "5" if base[coh] != "5" else "6")
            newer = page.evaluate(FORM_SHOWN_JS)
            _stored(page, newer)
            _click(tab2, other, "1" if base[other] != "1" else "2")
            tab2.get_by_text("changed in another tab or device").wait_for()
            _stored(tab2, newer)
            db = ws.item(v, aid).values
            out["two tabs"] = {"stale write refused": str(db.get(subs[other].id)) == newer[other],
                               "newer value kept": str(db.get("coherence_style")) == newer[coh],
                               "stale tab shows newer value": tab2.evaluate(FORM_SHOWN_JS) == newer,
                               "message shown": True}
    finally:
        ws.close()
    return out


def fmt(xs: list[float]) -> str:
    ms = sorted(x * 1000 for x in xs)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"median {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms   (n={len(ms)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--ratings", type=int, default=30)
    ap.add_argument("--db", default=None, help="database for the service-layer figures (default: SQLite)")
    ap.add_argument("--passes", type=int, default=20, help="rapid-click passes in the browser")
    ap.add_argument("--browser-only", action="store_true", help="only the Chromium rating figures")
    ap.add_argument("--robustness", action="store_true", help="only the rating page's figures of issue 17")
    ap.add_argument("--shots", type=Path, default=None, help="with --robustness: save a 1280×720 screenshot here")
    ap.add_argument("--latency", type=int, default=0, metavar="N",
                    help="only the digit key → stored latency in Chromium, N keys")
    ap.add_argument("--target", default=None, metavar="NAME|PATH",
                    help="only rate one transcript on this target's form with the keyboard (e.g. crisis)")
    ap.add_argument("--hosting", action="store_true", help="only the figures of several processes behind nginx")
    ap.add_argument("--processes", default="1,2,4", help="with --hosting: app process counts")
    ap.add_argument("--annotators", nargs="?", const="1,10,20", default=None, metavar="N,N",
                    help="simulated annotators on one process (default 1,10,20); with --hosting: "
                         "annotator counts (default 10,20,40)")
    ap.add_argument("--chromium", type=int, default=0, metavar="K", help="with --annotators: K of them in Chromium")
    ap.add_argument("--think", type=float, default=0.0, metavar="S",
                    help="with --annotators: mean seconds between an annotator's keys (default 0)")
    ap.add_argument("--keys", type=int, default=None, help="scores per transcript (--hosting 5, --annotators 9)")
    ap.add_argument("--items", type=int, default=None, help="transcripts per annotator (--hosting 2, --annotators 1)")
    args = ap.parse_args()
    if args.hosting:
        from bench_app_hosting import run

        run([int(x) for x in args.processes.split(",")], [int(x) for x in (args.annotators or "10,20,40").split(",")],
            args.keys or 5, args.items or 2)
        return
    if args.annotators:
        from bench_app_annotators import run as run_annotators

        run_annotators([int(x) for x in args.annotators.split(",")], args.db, args.keys or 9, args.items or 1,
                       args.chromium, args.think)
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.latency:
            waits = key_latency(tmp, args.latency)
            if waits is not None:
                print(f"digit key → page shows the score stored: {fmt(waits)}")
            return
        if args.target:
            got = target_rating(tmp, args.target)
            if got is not None:
                print(f"rating one transcript on the {args.target} form with the keyboard in Chromium (1280×720): "
                      f"{got['seconds']:.1f} s, 0 clicks, {got['keys']} keys for {got['sub-axes']} sub-axes; "
                      f"every value stored: {got['stored']}")
            return
        if args.robustness:
            got = robustness(tmp, args.passes, args.shots)
            if got is not None:
                subs, submit, scrolled = got["visible"]
                print(f"at 1280×720: {subs} of 9 sub-axes and the Submit button "
                      f"{'visible' if submit else 'NOT visible'} without scrolling (page scrolled {scrolled} px)")
                print(f"one transcript by mouse (1280×720): {got['mouse seconds']:.1f} s, {got['mouse clicks']} clicks, "
                      f"{got['mouse keys']} keys (the justification); stored: {got['mouse stored']}")
                print(f"one transcript by keyboard (1280×720): {got['keyboard seconds']:.1f} s, 0 clicks, "
                      f"{got['keyboard keys']} keys; stored: {got['keyboard stored']}")
                print(f"reload ~100 ms after 9 fast clicks: {sum(got['reload lost'])} of "
                      f"{9 * got['reload passes']} scores lost over {got['reload passes']} passes "
                      f"(per pass {got['reload lost']}); leaving asked for confirmation {got['reload asked']} times")
                print(f"two tabs on one item: {got['two tabs']}")
            return
        rating = browser_rating(tmp, args.passes)
        if rating is not None:
            print(f"rating one transcript with the keyboard in Chromium (1280×720): "
                  f"{rating['keyboard seconds']:.1f} s, {rating['keyboard clicks']} clicks, "
                  f"{rating['keyboard keys']} keys; all 9 scores stored: {rating['keyboard stored']}")
            print(f"rapid clicking (9 scores 60-100 ms apart): {rating['lost-save passes']} of "
                  f"{rating['rapid passes']} passes with a score shown but not stored")
            print(f"click → page confirms the score is stored: {fmt(rating['click to confirmed save'])}")
        if args.browser_only:
            return
        starts = cold_starts(args.starts, tmp)
        print(f"cold start (process → /_stcore/health ok): {fmt(starts)}")
        page = first_page(tmp)
        if page is not None:
            print(f"cold start to a usable sign-in page in Chromium: {page[0] * 1000:.0f} ms")
            print(f"sign in → home page with the session cookie set (Chromium): {page[1] * 1000:.0f} ms")
        url = args.db or f"sqlite:///{tmp / 'saves.db'}"
        from mindeval.store import redact_url

        print(f"saving a rating, service layer on {redact_url(url).split(':')[0]}:")
        for name, xs in service_saves(url, args.ratings).items():
            print(f"  {name:<20} {fmt(xs)}")
        print(f"one score click through Streamlit (AppTest re-run incl. save): {fmt(apptest_click(tmp, 20))}")


if __name__ == "__main__":
    main()
