"""Hosting figures (``bench_app.py --hosting``): 1, 2 and 4 app processes behind nginx on PostgreSQL
with 10, 20 and 40 simulated annotators speaking Streamlit's protocol (tests/annotation_app/stclient.py).

Each annotator signs in through the page (form, hand-off, cookie) and gives ``--keys`` scores,
one key each on the rating form component (its whole state sent as a fragment run, as the browser
sends it), on transcripts of her own; reported per cell: sign-in and key → stored (the form's
answer acknowledges the state and shows the score stored) p50/p95 with n, and every score
checked in the database afterwards. Needs ``$MINDEVAL_TEST_PG_URL`` (scripts/services.sh) and nginx.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "annotation_app"))
sys.path.insert(0, str(ROOT))  # tests.support (the kits import it) and this checkout's packages

from appkit import make_workspace, viewer  # noqa: E402
from hostkit import Annotator, Deployment, add_raters, run_threads  # noqa: E402

STUDY = "Demo: rate transcripts"


def pct(xs: list[float], q: float) -> float:
    """The ``q`` quantile by rank (nearest), not interpolated."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def _database(pg: str) -> tuple[str, object]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"mindeval_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(pg, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    return make_url(pg).set(database=name).render_as_string(hide_password=False), (admin, name)


def _drop(handle) -> None:
    from sqlalchemy import text

    admin, name = handle
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def cell(pg: str, processes: int, annotators: int, keys: int, items: int) -> dict[str, object]:
    """One deployment of ``processes`` with ``annotators`` rating at once; their figures."""
    url, handle = _database(pg)
    ws = make_workspace(url)
    names = [f"bench{i}" for i in range(annotators)]
    codes = add_raters(ws, STUDY, names)
    with tempfile.TemporaryDirectory() as d:
        dep = Deployment(url, processes, Path(d)).start()
        people = [Annotator(dep.base, i, n, codes[n], 1) for i, n in enumerate(names)]
        queues = {n: [q.assignment_id for q in ws.queue(viewer(ws, n, codes[n]), 1)][:items] for n in names}
        errors: list[BaseException] = []

        def work(a: Annotator) -> None:
            try:
                a.sign_in()
                for aid in queues[a.name]:
                    a.rate(aid, keys)
            except BaseException as exc:  # noqa: BLE001 - counted and reported
                errors.append(exc)

        wall = run_threads(work, people)
        dep.stop()
    lost = wrong = 0
    for a in people:
        v = viewer(ws, a.name, codes[a.name])
        for aid in queues[a.name]:
            item = ws.item(v, aid)
            want = {item.subaxes[j].id: val for j, val in a.expected.get(aid, {}).items()}
            lost += sum(k not in item.values for k in want)
            wrong += sum(want.get(k) != val for k, val in item.values.items())  # not hers, or not what she gave
    ws.close()
    _drop(handle)
    signin = [a.signin_s for a in people if a.signin_s is not None]
    key = [x for a in people for x in a.key_s]
    return {"signin": signin, "key": key, "wall": wall, "lost": lost, "misattributed": wrong, "errors": len(errors),
            "stored": sum(len(w) for a in people for w in a.expected.values())}


def run(processes: list[int], annotators: list[int], keys: int, items: int) -> None:
    pg = os.environ.get("MINDEVAL_TEST_PG_URL")
    if not pg:
        print("hosting: set MINDEVAL_TEST_PG_URL (source scripts/services.sh)")
        return
    print(f"processes annotators | sign-in p50/p95 (n) | key->stored p50/p95 (n) | keys/s | lost | misattributed | errors  "
          f"({keys} keys x {items} transcripts each)")
    for n in annotators:
        for p in processes:
            r = cell(pg, p, n, keys, items)
            s, k = r["signin"], r["key"]
            rate = len(k) / r["wall"] if r["wall"] else 0.0
            print(f"{p:>9} {n:>10} | {pct(s, .5):.2f}/{pct(s, .95):.2f} s ({len(s)}) | "
                  f"{pct(k, .5):.2f}/{pct(k, .95):.2f} s ({len(k)}) | {rate:.1f} | {r['lost']} of {r['stored']} | "
                  f"{r['misattributed']} | {r['errors']}", flush=True)
