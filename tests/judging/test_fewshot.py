"""Few-shot judge examples from the authors' annotated file (seeded choice)."""

import json

from mindeval.cli import main
from mindeval.judging.fewshot import load_fewshot
from mindeval.judging.render import JudgePrompt, build_judge_messages
from mindeval.prompts import load_template
from mindeval.records import load_profiles
from mindeval.targets.guidelines import load_guidelines


def test_seeded_choice_and_means(shared_data):
    f = shared_data / "human_annotations.jsonl"
    a = load_fewshot(f, 5, seed=1)
    b = load_fewshot(f, 5, seed=1)
    c = load_fewshot(f, 5, seed=2)
    assert [x.messages for x in a] == [x.messages for x in b]
    assert [x.messages for x in a] != [x.messages for x in c]
    for ex in a:
        assert set(ex.scores) == {"CAC", "EPC", "AR", "TRA", "ASCQ"}
        assert all(1 <= v <= 6 for v in ex.scores.values())
        assert "member_narrative" not in ex.intake


def test_first_row_means_by_hand(shared_data, tmp_path):
    row = json.loads((shared_data / "human_annotations.jsonl").read_text().splitlines()[0])
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(row) + "\n")
    ex = load_fewshot(one, 1, seed=0)[0]
    # CAC = mean over annotators of mean(criterion_1, criterion_2) (0 = not rated, skipped)
    c1, c2 = row["criterion_1.responses"], row["criterion_2.responses"]
    expected = sum((a + b) / 2 for a, b in zip(c1, c2)) / len(c1)
    assert abs(ex.scores["CAC"] - expected) < 1e-9
    c10 = row["criterion_10.responses"]
    assert abs(ex.scores["ASCQ"] - sum(c10) / len(c10)) < 1e-9


def test_fewshot_rendered_into_judge_prompt(shared_data, demo_profiles_path):
    ex = load_fewshot(shared_data / "human_annotations.jsonl", 2, seed=0)
    text = build_judge_messages(JudgePrompt(load_template("judge/default"), load_guidelines(), fewshot=ex),
                                load_profiles(demo_profiles_path)[0], [{"role": "user", "content": "Hello."}])[0]["content"]
    assert "<example_1>" in text and "<example_2>" in text and ex[0].messages[1]["content"][:40] in text


def test_run_with_fewshot_records_it(shared_data, tmp_path):
    out = tmp_path / "D"
    rc = main(["run", "--quiet", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge",
               "--limit", "1", "--turns", "2", "--judge-fewshot", str(shared_data / "human_annotations.jsonl"),
               "--fewshot-k", "3", "--out", str(out)])
    assert rc == 0
    cfg = json.loads((out / "config.json").read_text())["config"]
    assert cfg["fewshot_k"] == 3 and len(cfg["fewshot_sha256"]) == 64
