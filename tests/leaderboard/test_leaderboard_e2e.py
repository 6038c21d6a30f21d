"""End to end: `mindeval run` with fake models, then `mindeval leaderboard` over the run directories."""

from __future__ import annotations

import json

import pytest

from mindeval.cli import main

RUN = ["run", "--patient", "fake/echo", "--judge", "fake/judge", "--turns", "2", "--limit", "3",
       "--profiles", "demo", "--quiet"]


def test_run_twice_then_leaderboard(tmp_path, capsys):
    one, two, brief = tmp_path / "one", tmp_path / "two", tmp_path / "brief"
    assert main([*RUN, "--clinician", "fake/echo", "--out", str(one)]) == 0
    assert main([*RUN, "--clinician", "fake/echo", "--out", str(two)]) == 0
    assert main([*RUN, "--clinician", "fake/echo", "--clinician-prompt", "clinician/four_sentences",
                 "--out", str(brief)]) == 0
    capsys.readouterr()

    out = tmp_path / "board"
    rc = main(["leaderboard", str(one), str(two), str(brief), "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    assert rc == 0, stderr
    assert "## Scores and significance clusters" in stdout and "### 95% confidence intervals" in stdout

    data = json.loads((out / "leaderboard.json").read_text())
    systems = {s["label"]: s for s in data["table"]["systems"]}
    assert len(systems) == 3 and all(s["n"] == 3 for s in systems.values())
    # The two default runs are the same system with deterministic fake models: listed by run id,
    # identical scores, p = 1 and the same cluster on every criterion.
    twins = sorted(label for label in systems if label.startswith("fake/echo [clinician/default@v1] #run-"))
    assert len(twins) == 2
    for crit in ("CAC", "EPC", "AR", "TRA", "ASCQ", "average"):
        a, b = (systems[t]["results"][crit] for t in twins)
        assert a["mean"] == b["mean"] and a["cluster"] == b["cluster"]
        (pair,) = [p for p in data["table"]["pairs"] if p["criterion"] == crit and {p["a"], p["b"]} == set(twins)]
        assert pair["p_value"] == 1.0 and pair["n_shared"] == 3
    assert "fake/echo [clinician/four_sentences@v1]" in systems
    assert any("same clinician system" in w for w in data["warnings"])
    # The means agree with what `mindeval run` wrote in its own summary.
    summary = json.loads((one / "summary.json").read_text())
    assert abs(systems[twins[0]]["results"]["average"]["mean"] - summary["means"]["average"]) < 1e-3
    verb = {v["system"]: v for v in data["verbosity"]}
    assert all(v["turns"] == 3 and v["sentences_per_turn"] > 0 for v in verb.values())
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.tex", "pairwise.csv", "breakdowns.csv"):
        assert (out / name).stat().st_size > 0


@pytest.mark.slow
def test_embedded_clinician_prompt_ablation_end_to_end(tmp_path, capsys):
    """The 4-sentence clinician prompt ablation with the real embedded model, then the breakdowns."""
    base = ["run", "--clinician", "local/smollm2", "--patient", "fake/echo", "--judge", "fake/judge",
            "--turns", "2", "--limit", "2", "--profiles", "demo", "--quiet"]
    default, brief = tmp_path / "default", tmp_path / "brief"
    assert main([*base, "--out", str(default)]) == 0
    assert main([*base, "--clinician-prompt", "clinician/four_sentences", "--out", str(brief)]) == 0
    capsys.readouterr()
    out = tmp_path / "board"
    assert main(["leaderboard", str(default), str(brief), "--out", str(out), "--no-report"]) == 0
    data = json.loads((out / "leaderboard.json").read_text())
    labels = {s["label"] for s in data["table"]["systems"]}
    assert labels == {"local/smollm2 [clinician/default@v1]", "local/smollm2 [clinician/four_sentences@v1]"}
    prompts = {c["condition"] for c in data["breakdowns"] if c["breakdown"] == "clinician prompt"}
    assert prompts == {"clinician/default@v1", "clinician/four_sentences@v1"}
    for v in data["verbosity"]:
        assert v["turns"] == 2 and v["words_per_turn"] > 0 and 0 <= v["share_long_turns"] <= 1
