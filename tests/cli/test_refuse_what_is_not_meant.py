"""Inputs that do not mean what they say are refused with one line, before any model is
called: ``--limit`` above the profile count, sampling parameters outside the providers'
ranges (every role, command line and run files), a key given twice in a run file, a missing
profiles file (reported before the store, judge or model libraries are imported); and the
re-judge safety net: ``--out`` equal to the source, a glob over a sweep, ``--dry-run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from mindeval.cli import main
from mindeval.llm.fake import CALLS
from tests.support.rundirs import file_digests

FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--turns", "2", "--quiet"]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


def test_limit_above_the_profile_count_is_refused(tmp_path, capsys):
    CALLS.clear()
    assert main(["run", *FAKE, "--profiles", "demo", "--limit", "500", "--out", str(tmp_path / "D")]) == 2
    line = _one_error_line(capsys)
    assert "--limit" in line and "500 is more than the 6 profiles" in line
    assert not CALLS and not (tmp_path / "D").exists()


@pytest.mark.parametrize("option,value", [("--clinician-temperature", "-2"), ("--patient-temperature", "2.5"),
                                          ("--judge-temperature", "nan")])
def test_sampling_options_out_of_range_are_refused(tmp_path, capsys, option, value):
    assert main(["run", *FAKE, "--limit", "1", option, value, "--out", str(tmp_path / "D")]) == 2
    line = _one_error_line(capsys)
    assert option in line and "between 0 and 2" in line
    assert not (tmp_path / "D").exists()


def test_metaeval_judge_temperature_out_of_range_is_refused(tmp_path, capsys):
    from mindeval.cli.meta import main as meta

    assert meta(["judge", "--annotations", "x.jsonl", "--judge", "fake/judge", "--temperature", "3",
                 "--out", str(tmp_path / "J")]) == 2
    assert "between 0 and 2" in _one_error_line(capsys)


@pytest.mark.parametrize("settings,field", [({"temperature": 3}, "temperature"),
                                            ({"extra": {"top_p": 1.5}}, "top_p")])
def test_sampling_in_run_files_out_of_range_is_refused(tmp_path, capsys, settings, field):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"patient": "fake/echo", "clinician": {"model": "fake/echo", **settings},
                                   "judge": "fake/judge", "limit": 1, "turns": 2, "out": str(tmp_path / "D")}))
    assert main(["run", "--config", str(cfg), "--dry-run"]) == 2
    line = _one_error_line(capsys)
    assert str(cfg) in line and field in line and ("between 0 and 2" in line or "between 0 and 1" in line)


@pytest.mark.parametrize("suffix,text,line,key", [
    (".yaml", "patient: fake/echo\nclinician: fake/echo\nlimit: 1\njudge: fake/judge\nlimit: 3\n", 5, "limit"),
    (".json", '{"patient": "fake/echo",\n "clinician": "fake/echo",\n "judge": "fake/judge",\n'
              ' "clinician": "fake/judge"}', 4, "clinician"),
    (".yaml", "clinician: {model: fake/echo, temperature: 0.1, temperature: 1}\n", 1, "temperature"),
])
def test_a_key_given_twice_in_a_run_file_is_refused(tmp_path, capsys, suffix, text, line, key):
    cfg = tmp_path / f"run{suffix}"
    cfg.write_text(text)
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "D"), "--dry-run"]) == 2
    assert _one_error_line(capsys).startswith(f"error: {cfg}:{line}:{key}: key given twice")


def test_a_missing_profiles_file_is_reported_before_heavy_imports(tmp_path):
    """The error comes before the store (SQLAlchemy), the judge or litellm is imported."""
    code = ("import sys, time; t = time.perf_counter(); from mindeval.cli import main; "
            f"rc = main(['run', '--profiles', {str(tmp_path / 'none.jsonl')!r}, '--out', {str(tmp_path / 'D')!r}]); "
            "print(rc, round(time.perf_counter() - t, 3), "
            "sorted(m for m in ('sqlalchemy', 'litellm', 'mindeval.engine') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    rc, _seconds, loaded = r.stdout.split(" ", 2)
    assert rc == "2" and "profiles file not found" in r.stderr and "none.jsonl" in r.stderr
    assert loaded.strip() == "[]", f"imported before the error: {loaded}"


def test_rejudging_into_its_own_source_is_refused(tmp_path, capsys):
    src = tmp_path / "R"
    assert main(["run", *FAKE, "--limit", "1", "--out", str(src)]) == 0
    before = file_digests(src)
    CALLS.clear()
    capsys.readouterr()
    assert main(["judge", str(src), "--judge", "fake/judge:b", "--out", str(src), "--quiet"]) == 2
    assert "is the source run directory" in _one_error_line(capsys)
    assert not CALLS and file_digests(src) == before


def test_rejudging_a_sweep_glob_skips_its_leaderboard_and_dry_run_calls_nothing(tmp_path, capsys):
    """`mindeval judge runs/sweep/* ...` as the README writes it: the sweep's leaderboard folder
    (and any other entry that is not a run directory) is skipped with a note."""
    cfg = tmp_path / "sweep.yaml"
    sweep = tmp_path / "sweep"
    cfg.write_text(yaml.safe_dump({"patient": "fake/echo", "clinicians": ["fake/echo:a", "fake/echo:b"],
                                   "judge": "fake/judge", "profiles": "demo", "limit": 2, "turns": 2,
                                   "out": str(sweep)}))
    assert main(["run", "--config", str(cfg), "--quiet"]) == 0
    assert (sweep / "_leaderboard" / "leaderboard.json").is_file()
    (sweep / "notes.txt").write_text("my notes")
    glob = sorted(str(p) for p in sweep.iterdir())
    CALLS.clear()
    capsys.readouterr()
    assert main(["judge", *glob, "--judge", "fake/judge:b", "--out", str(tmp_path / "rj"), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert not CALLS and not (tmp_path / "rj").exists()
    assert out.count("dry run: 2 profiles x 2 turns, 1 session per conversation, 1 repeat per profile "
                     "(2 conversations); re-judging the 2 stored complete ones x 1 judge samples over their "
                     "transcripts; no model was called") == 2
    assert [line.split()[:3] for line in out.splitlines() if line.startswith("judge ")] == \
        [["judge", "fake/judge:b", "2"]] * 2
    assert f"note: skipping {sweep / '_leaderboard'}: not a run directory" in err
    assert f"note: skipping {sweep / 'notes.txt'}: not a run directory" in err
    assert main(["judge", *glob, "--judge", "fake/judge:b", "--out", str(tmp_path / "rj"), "--quiet"]) == 0
    assert dict(CALLS) == {"judge:b": 4}
    assert sorted(p.name for p in (tmp_path / "rj").iterdir()) == ["fake_echo_a", "fake_echo_b"]
    assert json.loads((tmp_path / "rj" / "fake_echo_a" / "summary.json").read_text())["n_judged"] == 2


def test_the_leaderboard_of_a_sweep_glob_skips_its_leaderboard_folder(tmp_path, capsys):
    """`mindeval leaderboard runs/sweep/*` (docs/leaderboard.md) as the judge glob: the sweep's own
    `_leaderboard` folder is skipped with a note; a path that does not exist is still refused."""
    cfg = tmp_path / "sweep.yaml"
    sweep = tmp_path / "sweep"
    cfg.write_text(yaml.safe_dump({"patient": "fake/echo", "clinicians": ["fake/echo:a", "fake/echo:b"],
                                   "judge": "fake/judge", "profiles": "demo", "limit": 2, "turns": 2,
                                   "out": str(sweep)}))
    assert main(["run", "--config", str(cfg), "--quiet"]) == 0
    glob = sorted(str(p) for p in sweep.iterdir())
    assert str(sweep / "_leaderboard") in glob
    capsys.readouterr()
    assert main(["leaderboard", *glob, "--allow-incomplete", "--out", str(tmp_path / "lb")]) == 0
    out, err = capsys.readouterr()
    assert f"note: skipping {sweep / '_leaderboard'}: not a run directory" in err
    assert "fake/echo:a" in out and "fake/echo:b" in out
    assert main(["leaderboard", *glob, str(sweep / "typo"), "--no-report"]) == 2
    assert f"error: {sweep / 'typo'}: run directory not found" in capsys.readouterr().err


def test_unknown_fake_model_is_refused_before_the_run(tmp_path):
    """A misspelt scripted model is one line and exit 2, not a run directory of failed conversations."""
    out = tmp_path / "r"
    p = subprocess.run([sys.executable, "-m", "mindeval", "run", "--patient", "fake/echo", "--clinician",
                        "fake/clinician-a", "--judge", "fake/judge", "--turns", "2", "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "error: unknown fake model 'fake/clinician-a': one of fake/echo, fake/echo:NAME, fake/judge, "
        "fake/judge:NAME, fake/slow, fake/empty, fake/error, fake/script:KEY"]
    assert not out.exists()
