"""Money is never spent twice without a word, counted at the fault server.

- A run directory whose outputs exist but whose store (``run.db``) is gone, or belongs to
  another run, is refused (before: a replay of its ``config.json`` bought every call again
  and replaced the transcripts); ``--overwrite`` is the explicit way to buy them again.
- ``mindeval judge --max-cost`` stops before the spend could exceed the cap; ``--dry-run``
  calls nothing.
- A second process on the same ``--out`` is told which process holds it; once that process
  is gone its lock is taken over.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from provkit import SECRET

from mindeval.cli import main
from tests.support.rundirs import file_digests

ROLES = ("patient", "clinician", "judge")


def _models(srv, judge: str = "openai/judge-model") -> list[str]:
    args = []
    for r in ROLES:
        args += [f"--{r}", judge if r == "judge" else f"openai/{r}-model", f"--{r}-api-base", srv.url]
    return args


def _run(srv, out, *extra: str) -> int:
    return main(["run", "--quiet", "--limit", "2", "--turns", "2", "--out", str(out), *_models(srv), *extra])


def test_a_run_without_its_store_is_refused_not_bought_again(server, tmp_path, capsys):
    out = tmp_path / "R"
    assert _run(server, out) == 0
    paid = len(server.requests)
    assert paid == 2 * 2 + 2
    (out / "run.db").unlink()
    before = file_digests(out)
    capsys.readouterr()
    for argv in (["run", "--config", str(out / "config.json"), "--quiet"], ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "not its store run.db" in err[0] and "--overwrite" in err[0], err
    assert _run(server, out) == 2  # the same command line as the first time
    assert len(server.requests) == paid and file_digests(out) == before  # nothing bought, nothing replaced
    assert _run(server, out, "--overwrite") == 0  # said explicitly: bought again
    assert len(server.requests) == 2 * paid


def test_a_store_of_another_run_is_refused(server, tmp_path, capsys):
    a, b = tmp_path / "A", tmp_path / "B"
    assert _run(server, a) == 0
    assert main(["run", "--quiet", "--limit", "1", "--turns", "2", "--out", str(b), *_models(server)]) == 0
    paid = len(server.requests)
    shutil.copyfile(b / "run.db", a / "run.db")
    capsys.readouterr()
    assert main(["run", "--config", str(a / "config.json"), "--quiet"]) == 2
    assert "does not hold" in capsys.readouterr().err
    assert len(server.requests) == paid


def test_judge_dry_run_and_max_cost_spend_nothing_past_the_cap(server, tmp_path, capsys):
    src = tmp_path / "R"
    assert _run(server, src) == 0
    paid = len(server.requests)
    priced = ["--judge", "openai/gpt-4.1", "--judge-api-base", server.url]
    capsys.readouterr()
    assert main(["judge", str(src), *priced, "--out", str(tmp_path / "J"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("judge "))
    assert row[1:3] == ["openai/gpt-4.1", "2"] and float(row[-1]) > 0
    assert len(server.requests) == paid and not (tmp_path / "J").exists()
    # One judge call costs more than the cap: none is made; the run stops, resumable.
    assert main(["judge", str(src), *priced, "--out", str(tmp_path / "J"), "--max-cost", "0.000001",
                 "--quiet"]) == 1
    assert len(server.requests) == paid
    assert main(["judge", str(src), *priced, "--out", str(tmp_path / "J"), "--max-cost", "5", "--quiet"]) == 0
    assert len(server.requests) == paid + 2


def test_a_second_process_on_the_same_out_is_told_which_one_runs(server, tmp_path):
    out = tmp_path / "R"
    server.script(["hang"], model="clinician-model")  # the first process waits in its first call
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    cmd = [sys.executable, "-m", "mindeval", "run", "--quiet", "--limit", "1", "--turns", "2", "--out", str(out),
           "--max-retries", "0", *_models(server)]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not server.requests and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        assert server.requests, "the first process never reached the server"
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2
        err = second.stderr.strip().splitlines()
        assert len(err) == 1 and f"pid {first.pid}" in err[0] and "in use by another run" in err[0], err
        assert "already exists" not in second.stderr
        assert first.poll() is None  # still running: it was refused while the other held the directory
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # The holder is gone: its lock is taken over and the run resumes.
    third = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert f"taking over the lock of pid {first.pid}" in third.stderr
    assert not (out / ".mindeval.lock").exists()


def test_metaeval_judge_dry_run_and_max_cost(server, tmp_path, capsys, shared_data):
    from mindeval.cli.meta import main as meta

    base = ["judge", "--annotations", str(shared_data / "human_annotations.jsonl"), "--judge", "openai/gpt-4.1",
            "--judge-api-base", server.url, "--limit", "2", "--fewshot-k", "0", "--out", str(tmp_path / "J")]
    assert meta([*base, "--dry-run", "--judge-samples", "3"]) == 0
    out = capsys.readouterr().out
    assert "dry run: 2 rated interactions x 3 judge samples; no model was called" in out
    assert next(line.split() for line in out.splitlines() if line.startswith("judge "))[1:3] == ["openai/gpt-4.1", "6"]
    assert not server.requests and not (tmp_path / "J").exists()
    assert meta([*base, "--max-cost", "0.000001"]) == 2
    assert "stopped before exceeding --max-cost" in capsys.readouterr().err and not server.requests
    assert meta([*base, "--max-cost", "5"]) == 0
    assert len(server.requests) == 2


def _advisory_locks(url: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as c:
            return c.execute(text("select count(*) from pg_locks where locktype = 'advisory'")).scalar()
    finally:
        engine.dispose()


def test_a_second_process_on_the_same_run_of_a_shared_store_is_told_which_one_runs(server, tmp_path, any_db_url):
    """Two run directories, one store (a SQLite file or PostgreSQL): the second process would resume the
    same run and buy its calls again beside the first (before: a UniqueViolation traceback on PostgreSQL)."""
    server.script(["hang"], model="clinician-model")
    env = {**os.environ, "OPENAI_API_KEY": SECRET}

    def cmd(out: str) -> list[str]:
        return [sys.executable, "-m", "mindeval", "run", "--quiet", "--limit", "1", "--turns", "2", "--db", any_db_url,
                "--out", str(tmp_path / out), "--max-retries", "0", *_models(server)]

    first = subprocess.Popen(cmd("A"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not server.requests and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        assert server.requests, "the first process never reached the server"
        second = subprocess.run(cmd("B"), env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        err = second.stderr.strip().splitlines()
        assert len(err) == 1 and f"pid {first.pid}" in err[0] and "is in use by another process" in err[0], err
        assert "Traceback" not in second.stderr and len(server.requests) == 1  # the second bought nothing
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    if any_db_url.startswith("postgresql"):  # the server frees the claim when the holder's connection closes
        deadline = time.monotonic() + 60
        while _advisory_locks(any_db_url) and time.monotonic() < deadline:
            time.sleep(0.05)
    third = subprocess.run(cmd("B"), env=env, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert not list(tmp_path.glob(".store.db.*.lock"))


def _empty_store(url: str) -> None:
    """The store loses every run: its SQLite file is deleted, its PostgreSQL schema emptied."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    if url.startswith("sqlite"):
        for path in Path(make_url(url).database).parent.glob("store.db*"):
            path.unlink()
        return
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.execute(text("DROP SCHEMA public CASCADE"))
        c.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def test_a_run_whose_shared_store_lost_it_is_refused(server, tmp_path, any_db_url, capsys):
    """``--db`` on a database server is checked as run.db is: outputs whose run the store does not
    hold are not bought again silently (before: every call was bought again on PostgreSQL)."""
    out = tmp_path / "R"
    assert _run(server, out, "--db", any_db_url) == 0
    paid = len(server.requests)
    _empty_store(any_db_url)
    before = file_digests(out)
    capsys.readouterr()
    assert _run(server, out, "--db", any_db_url) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--overwrite" in err[0] and ("does not hold" in err[0] or "not its store" in err[0]), err
    assert "password" not in err[0] and len(server.requests) == paid and file_digests(out) == before
    assert _run(server, out, "--db", any_db_url, "--overwrite") == 0
    assert len(server.requests) == 2 * paid
