"""Hosting for a team: several app processes behind a real nginx on one database.

Sign-in tickets any process redeems (hashed, one-time), the nginx site (checked by nginx itself),
migrations run once when processes start together, and on PostgreSQL: 3 processes behind nginx
with protocol annotators and one in Chromium, one process SIGKILLed mid-pass and a rolling
restart under load, with nothing lost or misattributed and everybody still signed in.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from appkit import DEMO_CODE, ROOT, make_workspace, viewer
from hostkit import (
    Annotator,
    Deployment,
    add_raters,
    click_score,
    established,
    form_saved,
    nginx_binary,
    wait_for,
)
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


def test_an_app_process_runs_no_full_garbage_collection_after_every_script_run() -> None:
    """Streamlit's post-run ``gc.collect()`` cost each key 0.2-0.3 s of the process's core."""
    from streamlit.web import cli

    from mindeval.cli.commands.app_launch import streamlit_command

    cmd = streamlit_command("127.0.0.1", 8501)
    params = cli.main_run.make_context("run", cmd[cmd.index("run") + 1:]).params  # as Streamlit reads them
    assert params["runner_postScriptGC"] is False


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


def test_a_form_action_is_applied_once_by_whichever_process_gets_it(any_db_url: str) -> None:
    """A browser re-sends its last Submit to another process after the first died: refused there
    once the first recorded it applied; taken there when the first died before that."""
    one, other = make_workspace(any_db_url), Workspace(any_db_url)  # two processes' workspaces
    v = viewer(one, "demo", DEMO_CODE)
    for seq in (1, 2):
        assert one.first_time(v, "tab-a", seq)
        one.applied(v, "tab-a", seq)
    assert not other.first_time(v, "tab-a", 2) and not other.first_time(v, "tab-a", 1)  # applied by `one`
    assert other.first_time(v, "tab-b", 1) and not other.first_time(v, "tab-b", 1)  # once in a process
    assert one.first_time(v, "tab-b", 1)  # `other` died before recording it: `one` takes it
    one.applied(v, "tab-b", 1)
    other.applied(v, "tab-b", 1)  # recorded twice: still 1
    assert not other.first_time(v, "tab-b", 1) and not one.first_time(v, "tab-b", 1)
    w = viewer(one, *_second_person(one))
    assert one.first_time(w, "tab-a", 1)  # another person's tab of the same name
    results: list[bool] = []
    racers = [threading.Thread(target=lambda: results.append(one.first_time(v, "tab-a", 3))) for _ in range(8)]
    for t in racers:
        t.start()
    for t in racers:
        t.join()
    assert sorted(results) == [False] * 7 + [True]  # 8 sessions of one process: exactly one takes it
    one.applied(v, "tab-a", 3)
    one.applied(v, "tab-a", 2)  # a late record of an earlier action lowers nothing
    assert not other.first_time(v, "tab-a", 3) and other.first_time(v, "tab-a", 4)
    one.close()
    other.close()


def _second_person(ws: Workspace) -> tuple[str, str]:
    return "other", add_raters(ws, STUDY, ["other"])["other"]


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


PROTOCOL = [f"rater{i}" for i in range(20)]  # simulated annotators (Streamlit's protocol)
WEB = ["web0", "web1"]  # annotators in Chromium
KEYS = 3  # scores per transcript


@pytest.fixture(scope="module")
def hosted(pg_server, tmp_path_factory: pytest.TempPathFactory):
    """3 app processes behind nginx on a fresh PostgreSQL database; 20 + 2 raters who each have
    every demo transcript (six: the kill test rates the first two, the restart test the next two).
    Yields the deployment, a workspace on its database and the raters' codes.
    A module fixture runs once in every xdist worker that gets one of these tests: each worker
    has its own database (a shared one dropped WITH (FORCE) cuts the other's deployment off)."""
    with pg_server.own("mindeval_hosted") as url:
        ws = make_workspace(url)
        codes = add_raters(ws, STUDY, PROTOCOL + WEB)
        dep = Deployment(url, 3, tmp_path_factory.mktemp("hosted")).start()
        try:
            yield dep, ws, codes
        finally:
            dep.stop()
            ws.close()


def _items(ws: Workspace, name: str, code: str) -> tuple[object, list[int]]:
    v = viewer(ws, name, code)
    return v, [q.assignment_id for q in ws.queue(v, 1)]


def _check_stored(ws: Workspace, annotators: list[Annotator], codes: dict[str, str], items: dict[str, list[int]]) -> None:
    """Every annotator's ``items`` hold exactly the scores she gave (none lost, none someone else's)."""
    for a in annotators:
        v = viewer(ws, a.name, codes[a.name])
        for aid in items[a.name]:
            item = ws.item(v, aid)
            want = {item.subaxes[j].id: val for j, val in a.expected.get(aid, {}).items()}
            assert dict(item.values) == want, f"{a.name}, assignment {aid}: {dict(item.values)} != {want}"


class Load:
    """``annotators`` each rating their ``items`` in a thread of their own, ``KEYS`` keys each; the
    test's thread stays free for Chromium (playwright's sync API lives in one thread)."""

    def __init__(self, annotators: list[Annotator], items: dict[str, list[int]], then=None) -> None:
        self.annotators, self.items, self.then = annotators, items, then
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._one, args=(a,), daemon=True) for a in annotators]
        self.total = sum(len(items[a.name]) * KEYS for a in annotators)

    def _one(self, a: Annotator) -> None:
        try:
            a.sign_in()
            for aid in self.items[a.name]:
                a.rate(aid, KEYS)
            if self.then:
                self.then(a)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            self.errors.append(exc)

    def start(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def keys(self) -> int:
        return sum(len(a.key_s) for a in self.annotators)

    def reached(self, share: float) -> bool:
        """``share`` of all keys stored (or everybody stopped): mid-pass."""
        return self.keys() >= share * self.total or not any(t.is_alive() for t in self.threads)

    def join(self) -> None:
        for t in self.threads:
            t.join()
        if self.errors:
            raise self.errors[0]


def _web_port(dep: Deployment, before: dict[int, int]) -> int | None:
    """The one app port that gained an open connection since ``before`` (a page's WebSocket)."""
    grown = [p for p in dep.ports if established(p) > before[p]]
    return grown[0] if len(grown) == 1 else None


@pytest.mark.postgres
@pytest.mark.xdist_group("hosted")  # one deployment (3 processes, nginx) serves both
def test_a_process_killed_mid_pass_loses_no_rating_and_signs_nobody_out(hosted, tmp_path: Path) -> None:
    """20 protocol annotators and 2 in Chromium; the process serving the first Chromium page is
    stopped, that page gets a click, and the process is SIGKILLed: the click reaches the database
    only through the form's own buffer after the page reconnected to another process (which drops
    the form's fragment runs until the form, hearing nothing back, loads the page anew)."""
    from browserkit import open_pages, sign_in

    dep, ws, codes = hosted
    annotators = [Annotator(dep.base, i, n, codes[n], 1) for i, n in enumerate(PROTOCOL)]
    items = {n: _items(ws, n, codes[n])[1][:2] for n in PROTOCOL}
    web: list[tuple[object, object, int, list[str]]] = []  # page, viewer, item, sub-axes
    ports: list[int] = []
    with open_pages(tmp_path, len(WEB)) as pages:
        for page, name in zip(pages, WEB, strict=True):
            v, aids = _items(ws, name, codes[name])
            before = {p: established(p) for p in dep.ports}  # its routing cookie keeps the page on one process
            sign_in(page, dep.base + "/", name, codes[name])
            page.goto(f"{dep.base}/rate?study=1&item={aids[0]}")
            form_saved(page, aids[0])
            ports.append(wait_for(lambda before=before: _web_port(dep, before), f"{name}'s app process", 120))
            web.append((page, v, aids[0], [x.id for x in ws.item(v, aids[0]).subaxes]))
        load = Load(annotators, items).start()
        wait_for(lambda: load.reached(0.3), "a third of the protocol annotators' keys", 600)
        page, v, aid, subs = web[0]
        os.kill(dep.pid(ports[0]), signal.SIGSTOP)  # it reads nothing more: the click stays unsent
        click_score(page, subs[0], "2")
        dep.kill(ports[0])
        keys_at_kill = load.keys()
        assert subs[0] not in ws.item(v, aid).values  # not stored when its process died
        form_saved(page, aid, subs[0], "2")  # re-sent after the reconnect (the page loaded anew), acknowledged
        assert dict(ws.item(v, aid).values) == {subs[0]: 2}
        for k, (page, v, aid, subs) in enumerate(web):  # both pages: still signed in, later clicks stored
            want = {subs[0]: 2} if k == 0 else {}
            page.get_by_text(f"Signed in as {WEB[k]}").wait_for()
            for j, val in ((1, 4), (2, 5)):
                click_score(page, subs[j], str(val))
                want[subs[j]] = val
            form_saved(page, aid, subs[2], "5")
            assert dict(ws.item(v, aid).values) == want
        load.join()
    assert 0 < keys_at_kill < load.total, "the process was not killed mid-pass"
    wait_for(lambda: dep.count(f"127.0.0.1:{ports[0]}) exited") or
             dep.count(f"on 127.0.0.1:{ports[0]} (pid"), "the supervisor noticing the kill", 120)
    _check_stored(ws, annotators, codes, items)
    assert sum(a.signed_out for a in annotators) == 0
    print(f"FIGURES hosting-kill processes=3 annotators={len(annotators)}+{len(WEB)} in Chromium keys={load.keys()}"
          f" stored_at_kill={keys_at_kill} reconnects={sum(a.reconnects for a in annotators)} lost=0"
          " misattributed=0 signed_out=0")


@pytest.mark.postgres
@pytest.mark.xdist_group("hosted")  # one deployment (3 processes, nginx) serves both
def test_a_rolling_restart_under_load_loses_nothing(hosted) -> None:
    """20 protocol annotators rate while every process is replaced one after the other; then each
    scores again on the new processes, still signed in."""
    dep, ws, codes = hosted
    annotators = [Annotator(dep.base, 100 + i, n, codes[n], 1) for i, n in enumerate(PROTOCOL)]
    items = {n: _items(ws, n, codes[n])[1][2:4] for n in PROTOCOL}  # not the kill test's transcripts
    before = dep.count("rolling restart done")

    def after_restart(a: Annotator) -> None:
        wait_for(lambda: dep.count("rolling restart done") > before, "the rolling restart", 900)
        a.rate(items[a.name][0], KEYS + 1)  # after every process was replaced: still signed in, still saving

    load = Load(annotators, items, then=after_restart).start()
    wait_for(lambda: load.reached(0.2), "a fifth of the keys", 600)
    dep.rolling_restart()
    load.join()
    assert dep.count("rolling restart done") > before
    _check_stored(ws, annotators, codes, items)
    assert sum(a.signed_out for a in annotators) == 0
    print(f"FIGURES hosting-rolling processes=3 annotators={len(annotators)} keys={load.keys()}"
          f" reconnects={sum(a.reconnects for a in annotators)} lost=0 misattributed=0 signed_out=0")


@pytest.mark.postgres
def test_hosting_benchmark_smoke(pg_url: str) -> None:
    """``bench_app.py --hosting`` with tiny N: one process, two annotators, every score stored."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_app_hosting import cell

    got = cell(pg_url, 1, 2, 2, 1)
    assert (got["lost"], got["errors"], got["stored"]) == (0, 0, 4)
    assert len(got["signin"]) == 2 and len(got["key"]) == 4


def test_annotators_benchmark_smoke(tmp_path: Path) -> None:
    """``bench_app.py --annotators`` with tiny N on SQLite: two protocol annotators on one process give
    their scores as fragment runs of the rating form; every score stored, none lost or misattributed."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_app_annotators import cell

    got = cell(f"sqlite:///{tmp_path / 'smoke.db'}", 2, 3, 1, 0, 0.0, tmp_path)
    assert got["errors"] == [] and (got["ok"], got["lost"], got["misattributed"], got["given"]) == (6, 0, 0, 6)
    assert len(got["signin"]) == 2 and len(got["key"]) == 6
