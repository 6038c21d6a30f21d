"""`mindeval profiles stats`: observed shares beside the paper's stated prevalences."""

from __future__ import annotations

import json

from mindeval.cli import main
from mindeval.profiles.pool import load_pool
from mindeval.profiles.sampler import profiles_jsonl, sample_profiles
from mindeval.profiles.stats import compute_stats, render_stats, single_with_spouse
from mindeval.records import load_profiles


def _row(st, label_start):
    return next(r for r in st.rows if r.label.strip().startswith(label_start))


def test_shares_match_a_direct_count():
    profiles = sample_profiles(300, 4)
    st = compute_stats(profiles, "x.jsonl", pool=load_pool())
    severe = sum(p.severe for p in profiles)
    row = _row(st, "severe depressive and/or anxious")
    assert row.share == severe / 300 and row.reference == "~50%" and row.source == "paper Table 1"
    non_het = sum(p.member_attributes.sexual_orientation != "Heterosexual" for p in profiles)
    assert _row(st, "sexual orientation not heterosexual").share == non_het / 300
    assert _row(st, "no partner but lives with a spouse").share == 0
    assert _row(st, "financial tier 1-2").share is not None
    levels = [_row(st, f"depressive: {lv}").share for lv in ("minimal", "mild", "moderate", "severe")]
    assert abs(sum(levels) - 1) < 1e-9


def test_official_set_matches_its_known_mix(shared_data):
    profiles = load_profiles(shared_data / "profiles.jsonl")
    st = compute_stats(profiles, shared_data / "profiles.jsonl", pool=load_pool())
    assert _row(st, "severe depressive and/or anxious").observed == "48.0% (24)"
    assert _row(st, "sexual orientation not heterosexual").observed == "32.0% (16)"
    assert _row(st, "gender identity differs from sex").observed == "6.0% (3)"
    assert _row(st, "financial tier 1-2").share is None  # the authors' wording is not in our pool
    text = render_stats(st)
    assert "n/a (values not from the pool)" in text and "n/a (backstory only)" in text


def test_single_with_spouse_is_detected():
    assert single_with_spouse({"relationship_status": "single", "living_situation": "with spouse and children"})
    assert single_with_spouse({"relationship_status": "widowed", "living_situation": "with spouse"})
    assert not single_with_spouse({"relationship_status": "married", "living_situation": "with spouse"})
    assert not single_with_spouse({"relationship_status": "in a long-term relationship, not married",
                                   "living_situation": "with partner"})


def test_cli_table_json_and_against(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    path.write_bytes(profiles_jsonl(sample_profiles(200, 1)))
    assert main(["profiles", "stats", str(path)]) == 0
    out = capsys.readouterr().out
    for needle in ("[Severity mix]", "~50%", "paper Table 1", "design target", "paper fn. 3", "[Distributions]"):
        assert needle in out
    assert main(["profiles", "stats", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == 200 and data["distinct"]["sex"] == 2
    assert main(["profiles", "stats", str(path), "--against", "demo"]) == 0
    out = capsys.readouterr().out
    assert "against" in out and "Against:  6" in out
