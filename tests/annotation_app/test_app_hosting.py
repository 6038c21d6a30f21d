"""Hosting for a team: several app processes behind a real nginx on one database.

Sign-in tickets any process redeems (hashed, one-time), the nginx site (checked by nginx itself),
migrations run once when processes start together, and on PostgreSQL: 3 processes behind nginx
with protocol annotators and one in Chromium, one process SIGKILLed mid-pass and a rolling
restart under load, with nothing lost or misattributed and everybody still signed in.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from appkit import DEMO_CODE, ROOT, make_workspace, viewer
from hostkit import Annotator, Deployment, add_raters, nginx_binary, wait_for
from sqlalchemy import select, text

from annotation_app.hosting import ProxySite, site_config, standalone_config
from annotation_app.services import Workspace
from annotation_app.store.migrations import head_revision
from annotation_app.store.tables import MigrationLogRow, SignInTicketRow, utcnow

STUDY = "Demo: rate transcripts"


def test_site_is_valid_nginx_with_upgrades_affinity_and_passive_checks(tmp_path: Path) -> None:
    site = site_config(ProxySite(ports=[8501, 8502, 8503], listen="127.0.0.1:8080"))
    for want in ("server 127.0.0.1:8503 max_fails=1 fail_timeout=10s;", "hash $mindeval_route consistent;",
                 "proxy_set_header Upgrade $http_upgrade;", "X-Forwarded-For $proxy_add_x_forwarded_for",
                 "proxy_next_upstream error timeout", "#    ssl_certificate "):
        assert want in site
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "nginx.conf").write_text(standalone_config(str(tmp_path / "site.conf"), str(tmp_path)))
    done = subprocess.run([nginx_binary(), "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "#    listen 443 ssl" in site  # TLS: the operator's certificate, a commented server block


def test_a_ticket_is_redeemed_once_by_any_process_and_never_stored_in_clear(any_db_url: str) -> None:
    one, other = make_workspace(any_db_url), Workspace(any_db_url)  # two processes' workspaces
    signed = one.sign_in("demo", DEMO_CODE)
    ticket = one.issue_ticket(signed.token)
    with one.db.read() as s:
        rows = [(r.ticket_hash, r.sealed) for r in s.scalars(select(SignInTicketRow))]
        sessions = s.execute(text("SELECT token_hash FROM ann_auth_sessions")).scalars().all()
    stored = repr(rows) + repr(sessions)
    assert ticket not in stored and signed.token not in stored and signed.token.encode().hex() not in stored
    assert other.redeem_ticket(ticket) == signed.token
    assert one.redeem_ticket(ticket) is None and other.redeem_ticket(ticket) is None  # used up
    assert other.viewer(signed.token).name == "demo"  # the session itself lives in the database
    late = one.issue_ticket(signed.token)
    with one.db.write() as s:
        s.execute(SignInTicketRow.__table__.update().values(expires_at=utcnow() - timedelta(seconds=1)))
    assert other.redeem_ticket(late) is None
    one.sign_out(signed.token)
    assert other.viewer(signed.token) is None  # revoked for every process
    one.close()
    other.close()


@pytest.mark.postgres
def test_processes_started_together_on_a_fresh_database_migrate_it_once(pg_server, tmp_path: Path) -> None:
    with pg_server.own("mindeval_migrate_once") as url:
        _migrated_once_by_three(url)


def _migrated_once_by_three(url: str) -> None:
    cmd = [sys.executable, "-m", "mindeval", "app", "admin", "--db", url, "list", "annotators"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    ws = Workspace(url)
    with ws.db.read() as s:
        log = [(r.from_revision, r.to_revision) for r in s.scalars(select(MigrationLogRow))]
    ws.close()
    assert log == [(None, head_revision())]


@pytest.fixture(scope="module")
def hosted(pg_server, tmp_path_factory: pytest.TempPathFactory):
    """3 app processes behind nginx on a fresh PostgreSQL database; 6 raters who each have every
    demo transcript. Yields the deployment, a workspace on its database and the raters' codes.
    A module fixture runs once in every xdist worker that gets one of these tests: each worker
    has its own database (a shared one dropped WITH (FORCE) cuts the other's deployment off)."""
    with pg_server.own("mindeval_hosted") as url:
        ws = make_workspace(url)
        codes = add_raters(ws, STUDY, [f"rater{i}" for i in range(6)])
        dep = Deployment(url, 3, tmp_path_factory.mktemp("hosted")).start()
        try:
            yield dep, ws, codes
        finally:
            dep.stop()
            ws.close()


def _items(ws: Workspace, name: str, code: str) -> tuple[object, list[int]]:
    v = viewer(ws, name, code)
    return v, [q.assignment_id for q in ws.queue(v, 1)]


def _check_stored(ws: Workspace, annotators: list[Annotator], codes: dict[str, str]) -> None:
    """Every annotator's items hold exactly the scores she gave (none lost, none someone else's)."""
    for a in annotators:
        v, items = _items(ws, a.name, codes[a.name])
        for aid in items:
            item = ws.item(v, aid)
            want = {item.subaxes[j].id: val for j, val in a.expected.get(aid, {}).items()}
            assert dict(item.values) == want, f"{a.name}, assignment {aid}: {dict(item.values)} != {want}"


def _run_all(annotators: list[Annotator], work) -> None:
    errors: list[BaseException] = []

    def one(a: Annotator) -> None:
        try:
            work(a)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(a,)) for a in annotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.postgres
@pytest.mark.xdist_group("hosted")  # one deployment (3 processes, nginx) serves both
def test_a_process_killed_mid_pass_loses_no_rating_and_signs_nobody_out(hosted, tmp_path: Path) -> None:
    from browserkit import open_browser, rate_form_on, settle, sign_in

    dep, ws, codes = hosted
    names = ["rater0", "rater1", "rater2"]
    annotators = [Annotator(dep.base, i, n, codes[n], 1) for i, n in enumerate(names)]
    items = {n: _items(ws, n, codes[n])[1][:3] for n in names}
    killed: dict[str, int] = {}
    gate = threading.Event()

    def kill_once() -> None:
        if not gate.is_set():
            gate.set()
            killed["port"], killed["connections"] = dep.kill_busiest()

    def work(a: Annotator) -> None:
        a.sign_in()
        for k, aid in enumerate(items[a.name]):
            a.rate(aid, 3, between=kill_once if (a.who == 0 and k == 1) else None)

    pages = open_browser(tmp_path)
    page = next(pages)
    person, pcode = "rater5", codes["rater5"]
    pv, paids = _items(ws, person, pcode)
    sign_in(page, dep.base + "/", person, pcode)
    page.goto(f"{dep.base}/rate?study=1&item={paids[0]}")
    rate_form_on(page, item=paids[0])
    subs = [x.id for x in ws.item(pv, paids[0]).subaxes]
    clicked = _click(page, 0, 2, subs)
    _run_all(annotators, work)
    assert killed, "no process was killed"
    clicked.update(_click(page, 1, 4, subs))  # after the kill: the page reconnected (maybe to another process)
    wait_for(lambda: dict(ws.item(pv, paids[0]).values) == clicked, "the Chromium rater's scores stored", 180)
    settle(page)
    page.get_by_text(f"Signed in as {person}").wait_for()
    wait_for(lambda: dep.count(f"127.0.0.1:{killed['port']}) exited") or
             dep.count(f"on 127.0.0.1:{killed['port']} (pid"), "the supervisor noticing the kill", 120)
    _check_stored(ws, annotators, codes)
    assert killed["connections"] >= 1 and sum(a.signed_out for a in annotators) == 0
    for _ in pages:
        pass


def _click(page, group: int, value: int, subs: list[str]) -> dict[str, int]:
    """Click score ``value`` of sub-axis ``group`` on the rating form; {sub-axis id: value} it stands for."""
    from browserkit import rate_pick

    rate_pick(page, subs[group], str(value))
    return {subs[group]: value}


@pytest.mark.postgres
@pytest.mark.xdist_group("hosted")  # one deployment (3 processes, nginx) serves both
def test_a_rolling_restart_under_load_loses_nothing(hosted) -> None:
    dep, ws, codes = hosted
    names = ["rater3", "rater4"]
    annotators = [Annotator(dep.base, 10 + i, n, codes[n], 1) for i, n in enumerate(names)]
    items = {n: _items(ws, n, codes[n])[1] for n in names}
    before = dep.count("rolling restart done")
    started = threading.Event()

    def work(a: Annotator) -> None:
        a.sign_in()
        for k, aid in enumerate(items[a.name]):
            if k == 1 and a.who == 10 and not started.is_set():
                started.set()
                dep.rolling_restart()
            a.rate(aid, 3)
        wait_for(lambda: dep.count("rolling restart done") > before, "the rolling restart", 900)
        a.rate(items[a.name][0], 4)  # after every process was replaced: still signed in, still saving

    _run_all(annotators, work)
    _check_stored(ws, annotators, codes)
    assert sum(a.signed_out for a in annotators) == 0


@pytest.mark.postgres
def test_hosting_benchmark_smoke(pg_url: str) -> None:
    """``bench_app.py --hosting`` with tiny N: one process, two annotators, every score stored."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_app_hosting import cell

    got = cell(pg_url, 1, 2, 2, 1)
    assert (got["lost"], got["errors"], got["stored"]) == (0, 0, 4)
    assert len(got["signin"]) == 2 and len(got["key"]) == 4
