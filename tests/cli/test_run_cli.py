"""`mindeval run` end to end with fake models: outputs, resume, refusal, bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mindeval.cli import main

FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--quiet"]


def run(args, capsys=None):
    rc = main(["run", *args])
    return rc


def test_run_outputs_and_second_run_reuses_everything(tmp_path, capsys):
    out = tmp_path / "D"
    assert run([*FAKE, "--profiles", "demo", "--limit", "2", "--turns", "4", "--out", str(out)]) == 0
    s1 = json.loads((out / "summary.json").read_text())
    assert s1["n_interactions"] == 2 and s1["n_judged"] == 2 and s1["n_failed_judgments"] == 0
    assert s1["calls_made"] == 2 * 4 + 2 and s1["calls_reused"] == 0
    for key in ("CAC", "EPC", "AR", "TRA", "ASCQ", "average"):
        assert 1 <= s1[key] <= 6
    assert set(s1["tokens"]) == {"patient", "clinician", "judge"}
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    assert rows[0]["messages"][0] == {"role": "user", "content": "Hello."}
    assert len(rows[0]["messages"]) == 5 and rows[0]["model"] == "fake/echo"
    assert [m["role"] for m in rows[0]["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    judg = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert all(j["parse_status"] == "ok" and set(j["scores"]) == {"CAC", "EPC", "AR", "TRA", "ASCQ"} for j in judg)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["config"]["prompts"]["clinician"]["ref"].startswith("clinician/default@v")
    assert cfg["config"]["guidelines_version"] and cfg["config"]["package_version"]
    assert run([*FAKE, "--profiles", "demo", "--limit", "2", "--turns", "4", "--out", str(out)]) == 0
    s2 = json.loads((out / "summary.json").read_text())
    assert s2["calls_made"] == 0 and s2["resumed"] is True
    assert s2["means"] == s1["means"]
    printed = capsys.readouterr().out
    assert "CAC" in printed and "calls made: 0" in printed


def test_different_config_is_refused_with_diff(tmp_path, capsys):
    out = tmp_path / "D"
    base = [*FAKE, "--profiles", "demo", "--limit", "1", "--turns", "2", "--out", str(out)]
    assert run(base) == 0
    assert run([*base[:-2], "--turns", "4", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "different configuration" in err and "turns: 2 -> 4" in err
    diff = [ln for ln in err.splitlines() if " -> " in ln]
    assert diff == ["  turns: 2 -> 4"]  # call settings (timeouts, limits) are not part of the config
    assert run([*base[:-2], "--turns", "4", "--out", str(out), "--new-run"]) == 0


def test_failed_judgments_are_counted_and_excluded(tmp_path):
    out = tmp_path / "D"
    args = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/echo", "--quiet",
            "--limit", "2", "--turns", "2", "--judge-retries", "2", "--out", str(out)]
    assert run(args) == 1
    s = json.loads((out / "summary.json").read_text())
    assert s["n_failed_judgments"] == 2 and s["n_judged"] == 0 and s["average"] is None
    judg = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert all(j["scores"] is None and j["attempts"] == 2 for j in judg)


def test_judge_samples_are_stored_and_averaged(tmp_path):
    out = tmp_path / "D"
    assert run([*FAKE, "--limit", "1", "--turns", "2", "--judge-samples", "3", "--out", str(out)]) == 0
    judg = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert [j["sample"] for j in judg] == [0, 1, 2]


def test_malformed_jsonl_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "p.jsonl"
    good = (Path(__file__).parents[2] / "data" / "demo_profiles.jsonl").read_text().splitlines()[0]
    bad.write_text(good + "\n{not json\n")
    assert run([*FAKE, "--profiles", str(bad), "--out", str(tmp_path / "D")]) == 2
    assert f"{bad}:2" in capsys.readouterr().err


def test_missing_attribute_names_field(tmp_path, capsys):
    obj = json.loads((Path(__file__).parents[2] / "data" / "demo_profiles.jsonl").read_text().splitlines()[0])
    del obj["member_attributes"]["sleep_quality"]
    bad = tmp_path / "p.jsonl"
    bad.write_text(json.dumps(obj) + "\n")
    assert run([*FAKE, "--profiles", str(bad), "--out", str(tmp_path / "D")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1:member_attributes.sleep_quality" in err and "missing" in err


def test_unknown_provider_is_clear(tmp_path, capsys):
    assert run(["--clinician", "madeup/model", "--out", str(tmp_path / "D")]) == 2
    err = capsys.readouterr().err
    assert "unknown provider 'madeup'" in err and "Traceback" not in err
    assert not (tmp_path / "D" / "run.db").exists()


def test_leaky_clinician_template_rejected(tmp_path, capsys):
    t = tmp_path / "leaky.txt"
    t.write_text("---\nkind: clinician\nname: leaky\nversion: 1\n---\nBackstory: ${member_narrative}\n")
    assert run([*FAKE, "--clinician-prompt", str(t), "--out", str(tmp_path / "D")]) == 2
    assert "backstory" in capsys.readouterr().err


def test_console_script_exit_code(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mindeval", "run", "--profiles", str(tmp_path / "nope.jsonl"),
                        "--out", str(tmp_path / "D")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "file not found" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_run_on_any_sqlalchemy_url(tmp_path, db, request):
    url = f"sqlite:///{tmp_path/'x.db'}" if db == "sqlite" else request.getfixturevalue("pg_url")
    out = tmp_path / "D"
    args = [*FAKE, "--limit", "1", "--turns", "2", "--out", str(out), "--db", url]
    if db == "postgres":
        args.append("--new-run")  # the shared test database may hold earlier runs
    assert run(args) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["n_judged"] == 1
    assert "password" not in (out / "config.json").read_text().lower() or "***" in (out / "config.json").read_text()


def test_changing_only_the_judge_reuses_every_conversation(tmp_path, capsys):
    from mindeval.llm.fake import CALLS

    out = tmp_path / "D"
    base = ["--patient", "fake/echo", "--clinician", "fake/echo:a", "--quiet", "--profiles", "demo",
            "--limit", "2", "--turns", "4", "--out", str(out)]
    assert run([*base, "--judge", "fake/judge"]) == 0
    first = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    CALLS.clear()
    assert run([*base, "--judge", "fake/judge:b", "--judge-samples", "2"]) == 0
    assert dict(CALLS) == {"judge:b": 4}  # no patient or clinician call
    s = json.loads((out / "summary.json").read_text())
    assert s["judge"] == "fake/judge:b" and s["calls_made"] == 4 and s["n_judged"] == 4
    assert [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()] == first
    judg = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert {j["judge_model"] for j in judg} == {"fake/judge:b"}
    # Back to the first judge: that run resumes, nothing is called.
    CALLS.clear()
    assert run([*base, "--judge", "fake/judge"]) == 0
    assert not CALLS and json.loads((out / "summary.json").read_text())["judge"] == "fake/judge"
    # Anything else that changes the conversations is still refused.
    capsys.readouterr()
    assert run([*base[:-2], "--turns", "2", "--out", str(out), "--judge", "fake/judge"]) == 2
    assert "turns: 4 -> 2" in capsys.readouterr().err


def test_config_file_errors_name_file_and_field(tmp_path, capsys):
    bad = tmp_path / "run.yaml"
    bad.write_text("clinician: fake/echo\nturnz: 4\nout: D\n")
    assert main(["run", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}" in err and "turnz" in err and "unknown option" in err and "Traceback" not in err
    bad.write_text("clinician: fake/echo\nturns: many\nout: D\n")
    assert main(["run", "--config", str(bad)]) == 2
    assert "turns" in capsys.readouterr().err


def test_replayed_config_json_is_refused_when_a_named_file_changed(tmp_path, capsys):
    profiles = tmp_path / "p.jsonl"
    profiles.write_text((Path(__file__).parents[2] / "data" / "demo_profiles.jsonl").read_text())
    out = tmp_path / "D"
    assert run([*FAKE, "--profiles", str(profiles), "--limit", "1", "--turns", "2", "--out", str(out)]) == 0
    assert main(["run", "--config", str(out / "config.json"), "--quiet"]) == 0  # the same run: resumed
    assert json.loads((out / "summary.json").read_text())["calls_made"] == 0
    lines = profiles.read_text().splitlines()
    profiles.write_text("\n".join([lines[0].replace("Marisol", "Marisela"), *lines[1:]]) + "\n")
    capsys.readouterr()
    assert main(["run", "--config", str(out / "config.json"), "--quiet"]) == 2
    assert "config.json" in capsys.readouterr().err
