"""Safety net II, money and bounds: a re-judge's dry run reads the stored transcripts; sessions,
repeats and planned calls have documented ceilings; a formula's undefined value says why."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mindeval.cli import main
from tests.support.errors import one_line_error
from tests.support.fault_server import FaultServer

JUDGE = "openai/judge-b"


def _judge_row(printed: str) -> list[str]:
    return next(ln.split() for ln in printed.splitlines() if ln.startswith("judge "))


def test_rejudge_dry_run_reads_the_stored_transcripts(tmp_path, capsys):
    """Three runs of one configuration whose replies differ in length: three estimates, each within
    3 % of the judge input the server counted when the runs were re-judged for real."""
    estimates, real = [], []
    with FaultServer() as srv:
        for words in (5, 40, 150):
            srv.configure(reply_words=words)
            src = tmp_path / f"src{words}"
            sim = ["--patient", "openai/sim", "--clinician", "openai/sim", "--judge", "fake/judge",
                   "--api-base", srv.url, "--limit", "2", "--turns", "4", "--quiet"]
            assert main(["run", *sim, "--out", str(src)]) == 0
            rejudge = ["judge", str(src), "--judge", JUDGE, "--api-base", srv.url, "--quiet"]
            capsys.readouterr()
            assert main([*rejudge, "--dry-run", "--out", str(tmp_path / f"dry{words}")]) == 0
            row = _judge_row(capsys.readouterr().out)
            assert not (tmp_path / f"dry{words}").exists()  # a dry run writes nothing
            estimates.append(int(row[3]))
            assert main([*rejudge, "--out", str(tmp_path / f"re{words}")]) == 0
            s = json.loads((tmp_path / f"re{words}" / "summary.json").read_text())
            assert int(row[2]) == s["tokens"]["judge"]["calls"] == 2
            real.append(s["tokens"]["judge"]["prompt_tokens"])
    assert len(set(estimates)) == 3 and estimates == sorted(estimates)
    for est, measured in zip(estimates, real, strict=True):
        assert est == pytest.approx(measured, rel=0.03), (estimates, real)


TOY = Path(__file__).resolve().parents[1] / "fixtures" / "targets" / "toy"
ODD = "100 * pct_best_practice / (pct_potential_harm - pct_potential_harm)"


def test_a_formula_dividing_by_zero_shows_n_a_with_its_reason(tmp_path, capsys):
    """The run's console, summary.json and the leaderboard's row each say n/a and why, on one line."""
    target = Path(shutil.copytree(TOY, tmp_path / "toy"))
    manifest = target / "target.yaml"
    manifest.write_text(manifest.read_text() + f'score:\n  label: Odd score\n  formula: "{ODD}"\n')
    assert main(["targets", "validate", str(target)]) == 0  # valid: the division is by a figure, zero only later
    out = tmp_path / "r"
    assert main(["run", "--target", str(target), "--patient", "fake/echo", "--clinician", "fake/echo",
                 "--judge", "fake/judge", "--limit", "2", "--turns", "2", "--out", str(out), "--quiet"]) == 0
    why = "division by zero in '100 * pct_best_practice / (pct_potential_harm - pct_potential_harm)'"
    assert f"Odd score: n/a ({why}" in capsys.readouterr().out
    score = json.loads((out / "summary.json").read_text())["score"]
    assert score["value"] is None and score["why"].startswith(why)
    assert main(["leaderboard", str(out), "--out", str(tmp_path / "lb")]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| 1 |"))
    assert f"n/a ({why}" in row


FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge"]


def test_a_dry_run_header_states_sessions_and_repeats(tmp_path, capsys):
    args = ["run", "--target", "reply_safety", *FAKE, "--limit", "2", "--dry-run", "--out", str(tmp_path / "d")]
    assert main([*args, "--repeats", "3"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith("dry run: 2 profiles x 10 turns, 2 sessions per conversation, 3 repeats per profile "
                           "(6 conversations, 12 sessions)"), head


def _total_calls(printed: str) -> int:
    return int(next(ln for ln in printed.splitlines() if ln.startswith("total: ")).split()[1])


def test_repeats_have_a_ceiling_and_are_counted_arithmetically(tmp_path, capsys, monkeypatch):
    """--repeats 1000000 is one line before anything is priced; the largest allowed --repeats is
    priced with the same work as one repeat (each profile's conversation built once, nothing
    enumerated), its calls exactly 1,000 times those of one repeat. (A wall-clock bound here failed
    beside two CPU hogs: 2.5 s for a 1 s limit.)"""
    from mindeval.engine import estimate

    built: list[int] = []
    priced = estimate._conversation
    monkeypatch.setattr(estimate, "_conversation", lambda *a, **k: built.append(1) or priced(*a, **k))
    base = ["run", *FAKE, "--limit", "2", "--turns", "4", "--dry-run", "--out", str(tmp_path / "d")]
    assert main([*base, "--repeats", "1000000"]) == 2
    assert "--repeats: must be at most 1,000, got 1,000,000" in one_line_error(capsys)
    assert built == []
    assert main([*base, "--repeats", "1"]) == 0
    one, per_repeat = _total_calls(capsys.readouterr().out), len(built)
    assert per_repeat == 2  # one conversation built per profile
    assert main([*base, "--repeats", "1000"]) == 0
    assert len(built) - per_repeat == per_repeat
    assert _total_calls(capsys.readouterr().out) == 1000 * one == 1000 * 2 * (4 + 1)
    rf = tmp_path / "run.yaml"  # a run file's repeats: the same bound
    rf.write_text("repeats: 5000\n")
    assert main(["run", "--config", str(rf), *FAKE, "--out", str(tmp_path / "f"), "--dry-run"]) == 2
    assert "repeats" in one_line_error(capsys)


@pytest.mark.parametrize("command", [["targets", "validate", "{t}"], ["run", "--target", "{t}", *FAKE, "--out",
                                                                        "{tmp}/r"]])
def test_sessions_in_a_target_have_a_documented_bound(tmp_path, capsys, command):
    target = Path(shutil.copytree(TOY, tmp_path / "toy"))
    manifest = target / "target.yaml"
    manifest.write_text(manifest.read_text().replace("turns: 2\n", "turns: 2\nsessions: 1000\n"))
    before = manifest.read_bytes()
    assert main([a.format(t=target, tmp=tmp_path) for a in command]) == 2
    err = one_line_error(capsys)
    assert f"{manifest}:9:sessions:" in err and "50" in err
    assert manifest.read_bytes() == before and not (tmp_path / "r").exists()


def test_beyond_the_ceiling_of_planned_calls_run_and_judge_refuse_unless_yes(tmp_path, capsys, monkeypatch):
    from mindeval.cli import confirm

    big = ["run", *FAKE, "--repeats", "1000", "--out", str(tmp_path / "big")]  # 6 x 1000 x 21 = 126,000 calls
    assert main(big) == 2
    assert "this plans 126,000 model calls, more than the ceiling of 100,000" in one_line_error(capsys)
    assert not (tmp_path / "big").exists()
    monkeypatch.setattr(confirm, "MAX_PLANNED_CALLS", 10)  # a small ceiling: a real run can pass it
    small = ["run", *FAKE, "--limit", "2", "--turns", "2", "--quiet", "--out", str(tmp_path / "s")]  # 6 calls
    assert main(small) == 0
    rejudge = ["judge", str(tmp_path / "s"), "--judge", "fake/judge:b", "--quiet"]
    monkeypatch.setattr(confirm, "MAX_PLANNED_CALLS", 1)
    monkeypatch.setattr(confirm, "CONFIRM_CALLS", 1)
    assert main([*rejudge, "--out", str(tmp_path / "j")]) == 2  # 2 judge calls
    assert "this plans 2 model calls" in one_line_error(capsys) and not (tmp_path / "j").exists()
    assert main([*rejudge, "--out", str(tmp_path / "j"), "--yes"]) == 0
    assert json.loads((tmp_path / "j" / "summary.json").read_text())["n_judged"] == 2


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_an_interactive_run_asks_before_spending_past_the_threshold(tmp_path, capsys, monkeypatch):
    from mindeval.cli import confirm

    monkeypatch.setattr(confirm, "CONFIRM_CALLS", 5)
    args = ["run", *FAKE, "--limit", "2", "--turns", "2", "--quiet", "--out", str(tmp_path / "s")]  # 6 calls
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    assert main(args) == 0
    assert "this plans 6 model calls (more than 5" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", _Terminal(""))  # no answer (end of input): not confirmed
    assert main([*args[:-1], str(tmp_path / "t")]) == 2
    assert "not confirmed: no model was called" in capsys.readouterr().err and not (tmp_path / "t").exists()


def test_a_terminal_is_asked_for_real_and_no_is_nothing_spent(tmp_path):
    """Over a pseudo-terminal, the real threshold: 6 profiles x 240 repeats x 21 calls; 'n' refuses."""
    out = tmp_path / "big"
    main_fd, term = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "mindeval", "run", *FAKE, "--repeats", "240", "--out", str(out)],
                            stdin=term, stdout=term, stderr=term, env=env, close_fds=True)
    os.close(term)
    seen = b""
    try:
        while b"[y/N]" not in seen:
            ready, _, _ = select.select([main_fd], [], [], 60)
            assert ready, seen
            seen += os.read(main_fd, 4096)
        assert b"this plans 30,240 model calls" in seen
        os.write(main_fd, b"n\n")
        assert proc.wait(timeout=60) == 2
        while True:
            try:
                chunk = os.read(main_fd, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
    finally:
        proc.kill()
        os.close(main_fd)
    assert b"not confirmed" in seen and b"Traceback" not in seen and not out.exists()
