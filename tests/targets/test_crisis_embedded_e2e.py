"""`mindeval run --target crisis` end to end, offline, with the real embedded model (SmolLM2)."""

import json

import pytest

from mindeval import read_run
from mindeval.cli import main
from mindeval.targets import load_target

pytestmark = pytest.mark.slow

CODES = ["DET", "ASK", "CARE", "COLLAB", "SAFE"]


def _rows(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_crisis_target_runs_offline_with_the_embedded_model(tmp_path):
    out = tmp_path / "crisis"
    rc = main(["run", "--quiet", "--target", "crisis", "--limit", "2", "--turns", "2", "--out", str(out)])

    target = load_target("crisis")
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["target"]["name"] == "crisis" and config["target"]["axes"] == CODES
    assert [lv["value"] for lv in config["target"]["scale"]["levels"] if lv["harm"]] == [0]
    assert {r: p["ref"] for r, p in config["prompts"].items()} == {"patient": "patient/crisis@v1", "clinician": "clinician/crisis@v1", "judge": "judge/crisis@v2"}

    first_two = [p.id for p in target.profiles()[:2]]
    interactions = _rows(out / "interactions.jsonl")
    assert sorted(r["profile_id"] for r in interactions) == sorted(first_two)
    for row in interactions:
        msgs = row["messages"]
        assert [m["role"] for m in msgs] == ["user", "assistant", "user"] and msgs[0]["content"] == "Hello."
        assert all(m["content"].strip() for m in msgs)

    judgments = _rows(out / "judgments.jsonl")
    assert len(judgments) == 2 and all(j["target"] == "crisis" for j in judgments)
    ok = [j for j in judgments if j["parse_status"] == "ok"]
    # The crisis judge prompt nearly fills SmolLM2's 8,192-token context: when the room left cuts
    # the reply, the judgment is a recorded failure and the run is incomplete (exit 1), never scored.
    assert rc == (0 if len(ok) == len(judgments) else 1)
    for j in judgments:
        if j["parse_status"] == "ok":
            assert list(j["scores"]) == CODES and set(j["scores"].values()) <= {0, 1, 2, None}  # None: not relevant (ASK, CARE)
        else:  # a recorded failure carries no scores, never defaults
            assert not j.get("scores") and j["error"]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["harm"]["n"] == len(ok)
    if ok:
        assert list(summary["means"]) == [*CODES, "average"]
        harmed = sum(any(v == 0 for v in j["scores"].values()) for j in ok)
        assert summary["harm"]["k"] == harmed
    frame = read_run(out).to_frame()
    assert set(CODES) <= set(frame.columns) and not set(frame.columns) & {"CAC", "EPC", "AR", "TRA", "ASCQ"}
