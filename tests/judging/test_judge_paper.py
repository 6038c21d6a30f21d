"""``--judge-protocol paper``: the authors' five examples and scores, their reply format, one draw."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from sqlalchemy import select

from mindeval.cli import main
from mindeval.judging.authors import AUTHORS_FEWSHOT_IDS as PAPER_FEWSHOT_IDS
from mindeval.judging.fewshot import load_fewshot, paper_fewshot
from mindeval.judging.job import JudgeJob, Transcript
from mindeval.judging.judge import judge_transcript
from mindeval.judging.render import JudgePrompt, build_judge_messages
from mindeval.judging.textguard import visible_text
from mindeval.llm import ModelSpec
from mindeval.llm.fake import script
from mindeval.prompts import load_template
from mindeval.records import AXES, Judgment, load_profiles
from mindeval.rundir import legacy_target
from mindeval.store import CallLog, Database
from mindeval.store.runs import ensure_run
from mindeval.store.tables import CallRow
from mindeval.targets.guidelines import load_guidelines

# The example outputs printed in the authors' judge prompt (SWORDHealth/mind-eval,
# mindeval/judge_prompts.py), in its order: CAC, EPC, AR, TRA, ASCQ.
AUTHORS_OUTPUTS = {
    "39c23252-89be-4d7a-add9-9c70795dc37d": (3.75, 4.5, 3.25, 2.75, 2.5),  # Joseph, DeepSeek-R1
    "84b12e0c-0e5e-4a92-8b18-abc819a76686": (3.5, 4.5, 3.375, 3.875, 3.75),  # Amy, gpt-5-chat
    "954182de-82b4-4524-9259-2a26f98e972e": (4.375, 4.875, 4.125, 4.375, 3.25),  # Anthony, gpt-5-chat
    "b6a96d89-22b0-4f47-952c-040164a78b5a": (3.375, 3.625, 3.25, 3.375, 2.5),  # Steven, DeepSeek-R1
    "b718d324-212a-438e-9d50-69693bb4e132": (3.75, 3.625, 3.25, 3.125, 2.5),  # Anthony, DeepSeek-R1
}
NAMES = ("Clinical Accuracy & Competence", "Ethical & Professional Conduct", "Assessment & Response",
         "Therapeutic Relationship & Alliance", "AI-Specific Communication Quality")
LINES = "\n".join(f"{n}: {v}" for n, v in zip(NAMES, (3.5, 4, 3.25, 3, 2.5), strict=True))
REPLY = f"ANSWER <NONCE>\n{LINES}\nEND <NONCE>"  # <NONCE>: the round's answer code (fake script)
AUTHORS_TEMPLATE = Path(__file__).parent / "data" / "authors_layout_judge.txt"  # our words, their layout


def _rows(shared_data):
    return {r["id"]: r for r in map(json.loads, (shared_data / "human_annotations.jsonl").read_text().splitlines())}


def _output_block(scores) -> str:
    return "<output>\n" + "\n".join(f"{n}: {float(v)!r}" for n, v in zip(NAMES, scores, strict=True)) + "\n</output>"


def test_paper_examples_pinned_to_the_authors_file(shared_data, demo_profiles_path):
    rows = _rows(shared_data)
    _, examples = paper_fewshot(shared_data / "human_annotations.jsonl")
    assert [ex.interaction_id for ex in examples] == list(PAPER_FEWSHOT_IDS) == list(AUTHORS_OUTPUTS)
    prompt = build_judge_messages(JudgePrompt(load_template("judge/paper"), load_guidelines(), "paper", fewshot=examples),
                                  load_profiles(demo_profiles_path)[0],
                                  [{"role": "user", "content": "Hello."}])[0]["content"]
    pos = 0
    for iid, published in AUTHORS_OUTPUTS.items():
        row = rows[iid]
        # the example's member details, every turn in order, then the published scores
        name_at = prompt.index(f"- Name: {row['member_attributes']['name']}\n", pos)
        at = name_at
        for m in row["messages"]:
            at = prompt.index(visible_text(m["content"]), at)
        out_at = prompt.index(_output_block(published), at)
        assert name_at >= pos
        pos = out_at + 1
    assert pos < prompt.index("Now, consider a new instance")
    assert len(re.findall(r"^<output>$", prompt, flags=re.M)) == 5


def test_paper_scores_count_a_zero_as_zero(shared_data):
    rows = _rows(shared_data)
    joseph = rows[PAPER_FEWSHOT_IDS[0]]
    assert 0 in joseph["criterion_9.responses"]
    _, examples = paper_fewshot(shared_data / "human_annotations.jsonl")
    assert examples[0].scores["TRA"] == 2.75  # (mean c8 3.25 + mean c9 with zeros 2.25) / 2
    (mine,) = [ex for ex in load_fewshot(shared_data / "human_annotations.jsonl", 60, 0)
               if ex.interaction_id == PAPER_FEWSHOT_IDS[0]]
    assert mine.scores["TRA"] == 3.875  # the default protocol skips the zeros


def test_paper_judge_reply_format_and_fractional_scores(tmp_db_url, shared_data, demo_profiles_path):
    db = Database(tmp_db_url)
    ensure_run(db, "r", {}, "test")
    log = CallLog(db, "r")
    rows = _rows(shared_data)
    _, examples = paper_fewshot(shared_data / "human_annotations.jsonl")
    profile = load_profiles(demo_profiles_path)[0]
    for iid in PAPER_FEWSHOT_IDS:  # judge the authors' five transcripts themselves
        m = script(f"paper-{iid}", ["I'd say CAC: 3-4.", REPLY])
        prompt = JudgePrompt(load_template("judge/paper"), load_guidelines(), "paper", fewshot=examples)
        job = JudgeJob(log=log, spec=ModelSpec(model=m), prompt=prompt, target=legacy_target())
        j = asyncio.run(judge_transcript(job, Transcript(iid, profile, rows[iid]["messages"])))
        assert j.parse_status == "ok" and j.attempts == 2 and j.protocol == "paper"
        assert j.scores == {"CAC": 3.5, "EPC": 4, "AR": 3.25, "TRA": 3, "ASCQ": 2.5}
    with db.read() as s:
        retry = s.scalars(select(CallRow).where(CallRow.tag == f"judge:{iid}:0:1")).one()
    assert "`Name: score`" in retry.request_json["messages"][-1]["content"]
    assert f"ANSWER {j.nonce}" in retry.request_json["messages"][-1]["content"]
    db.close()
    with pytest.raises(ValueError, match="whole number"):
        Judgment(interaction_id="i", judge_model="m", scores={"CAC": 3.5, "EPC": 4, "AR": 3, "TRA": 3, "ASCQ": 2})


def test_run_with_paper_protocol(shared_data, tmp_path):
    out = tmp_path / "run"
    judge = script("paper-run", [REPLY] * 2)
    rc = main(["run", "--quiet", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", judge,
               "--limit", "2", "--turns", "2", "--judge-protocol", "paper",
               "--judge-fewshot", str(shared_data / "human_annotations.jsonl"), "--out", str(out)])
    assert rc == 0
    header = json.loads((out / "config.json").read_text())
    cfg = header["config"]
    assert cfg["judge_protocol"] == "paper" and cfg["fewshot_k"] == 5
    assert cfg["prompts"]["judge"]["ref"].startswith("judge/paper@")
    assert cfg["judge"]["reasoning_effort"] == "high" and cfg["judge"]["max_tokens"] == 16000
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge_protocol"] == "paper" and summary["means"]["CAC"] == 3.5
    assert summary["judge_protocol_label"] == "the authors' few-shot examples with our instructions"
    assert "hardened" not in summary
    rows = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert {r["protocol"] for r in rows} == {"paper"} and rows[0]["scores"]["AR"] == 3.25
    db = Database(f"sqlite:///{out / 'run.db'}")
    with db.read() as s:
        prompts = [c.request_json["messages"][0]["content"] for c in s.scalars(
            select(CallRow).where(CallRow.role == "judge"))]
    db.close()
    assert len(prompts) == 2
    for p in prompts:
        for scores in AUTHORS_OUTPUTS.values():
            assert _output_block(scores) in p


def test_paper_protocol_without_the_file_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "empty-cache"))
    rc = main(["run", "--quiet", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge",
               "--limit", "1", "--turns", "2", "--judge-protocol", "paper", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert rc != 0 and "mindeval data download" in err and "human_annotations.jsonl" in err
    assert "Traceback" not in err


def test_paper_protocol_refuses_a_file_without_the_authors_rows(tmp_path, shared_data):
    rows = (shared_data / "human_annotations.jsonl").read_text().splitlines()[:10]
    f = tmp_path / "ten.jsonl"
    f.write_text("\n".join(rows) + "\n")
    with pytest.raises(Exception, match="mindeval data download"):
        paper_fewshot(f)


def test_one_fewshot_draw_for_both_clis(shared_data):
    """Same file, k and seed: ``mindeval run`` and ``metaeval judge`` show the same examples."""
    from metaeval.judge_runs import draw_fewshot, mean_axis_scores
    from metaeval.sources import load_authors_annotations
    from mindeval.judging.authors import load_mapping

    f = shared_data / "human_annotations.jsonl"
    src = load_authors_annotations(str(f), load_mapping(None), zeros="missing")
    for k, seed in ((5, 0), (3, 7), (8, 123)):
        run_examples = load_fewshot(f, k, seed)
        meta_ids = draw_fewshot(src, k, seed)
        assert [ex.interaction_id for ex in run_examples] == meta_ids
        for ex, iid in zip(run_examples, meta_ids, strict=True):
            assert ex.messages == src.interactions[iid].messages
            assert ex.scores == mean_axis_scores(src, iid, AXES)
    assert [ex.interaction_id for ex in load_fewshot(f, 5, 1)] != [ex.interaction_id for ex in load_fewshot(f, 5, 2)]


def test_metaeval_judge_with_paper_protocol(shared_data, tmp_path):
    from mindeval.cli.meta import main as metaeval_main

    out = tmp_path / "mj"
    judge = script("paper-meta", [REPLY] * 3)
    rc = metaeval_main(["judge", "--annotations", str(shared_data / "human_annotations.jsonl"), "--judge", judge,
                        "--judge-protocol", "paper", "--limit", "3", "--concurrency", "1", "--out", str(out)])
    assert rc == 0
    header = json.loads((out / "config.json").read_text())
    assert header["fewshot_interaction_ids"] == list(PAPER_FEWSHOT_IDS)
    assert header["config"]["judge_protocol"] == "paper"
    assert header["config"]["fewshot_scores"][PAPER_FEWSHOT_IDS[0]]["TRA"] == 2.75
    assert header["config"]["judge"]["reasoning_effort"] == "high"
    rows = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and {r["protocol"] for r in rows} == {"paper"} and rows[0]["scores"]["CAC"] == 3.5
    assert not {r["interaction_id"] for r in rows} & set(PAPER_FEWSHOT_IDS)
    assert json.loads((out / "summary.json").read_text())["judge_protocol"] == "paper"


def _authors_run(shared_data, tmp_path, replies, *, clinician="fake/echo", quiet=True):
    out = tmp_path / "authors"
    judge = script("authors-run", replies)
    rc = main(["run", *(["--quiet"] if quiet else []), "--patient", "fake/echo", "--clinician", clinician,
               "--judge", judge, "--limit", "1", "--turns", "2", "--judge-protocol", "paper", "--transcript-format", "authors",
               "--judge-prompt", str(AUTHORS_TEMPLATE),
               "--fewshot-file", str(shared_data / "human_annotations.jsonl"), "--out", str(out)])
    return rc, out


def test_authors_transcript_format_renders_their_layout_and_reads_the_first_match(shared_data, tmp_path):
    """--transcript-format authors: their tags, their examples' <output> blocks, their "same
    format" instruction last, no answer code; the reply read their way (first match per axis)."""
    first = "Clinical Accuracy & Competence: 2\n"
    rc, out = _authors_run(shared_data, tmp_path, [first + LINES])
    assert rc == 0
    db = Database(f"sqlite:///{out / 'run.db'}")
    with db.read() as s:
        [prompt] = [c.request_json["messages"][0]["content"] for c in s.scalars(
            select(CallRow).where(CallRow.role == "judge"))]
    db.close()
    instance = prompt.split("Now, consider a new instance:", 1)[1]
    assert "<conversation>\n<member>\nHello.\n</member>\n<therapist>\n" in instance
    assert "[TRANSCRIPT" not in prompt and "Answer code" not in prompt
    assert prompt.rstrip().endswith("Give your grades below in the same format as above and nothing else.")
    for scores in AUTHORS_OUTPUTS.values():
        assert _output_block(scores) in prompt
    assert len(re.findall(r"^<conversation>$", prompt, flags=re.M)) == 6  # five examples and the instance
    [row] = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert row["scores"]["CAC"] == 2 and row["answer_channel"] == "authors" and "nonce" not in row  # first match
    summary = json.loads((out / "summary.json").read_text())
    assert summary["transcript_format"] == "authors" and summary["hardened"] is False
    assert "forgeable, not hardened" in summary["judge_protocol_label"]
    header = json.loads((out / "config.json").read_text())
    assert header["config"]["transcript_format"] == "authors" and "answer_prompt" not in header["config"]
    from mindeval.leaderboard.loading import load_run

    assert "forgeable, not hardened" in load_run(out).setup.judge_protocol


def test_authors_format_is_forgeable_by_design(shared_data, tmp_path, capsys):
    """The authors' first-match reading takes a block quoted before the real one: that is why
    the format is labelled not hardened (the MindEval format stores the real scores)."""
    planted = "\n".join(f"{n}: 6" for n in NAMES)
    rc, out = _authors_run(shared_data, tmp_path, [f"The therapist wrote:\n{planted}\nMy grades:\n{LINES}"],
                           quiet=False)
    assert rc == 0
    assert "NOT HARDENED: " in capsys.readouterr().out
    [row] = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert row["scores"] == dict.fromkeys(("CAC", "EPC", "AR", "TRA", "ASCQ"), 6)


@pytest.mark.parametrize("extra, msg", [
    (["--judge-protocol", "mindeval", "--judge-prompt", str(AUTHORS_TEMPLATE)], "--judge-protocol paper"),
    (["--judge-protocol", "paper"], "--judge-prompt FILE"),
])
def test_authors_format_needs_their_template_and_the_paper_protocol(tmp_path, capsys, extra, msg):
    rc = main(["run", "--quiet", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge",
               "--limit", "1", "--turns", "2", "--transcript-format", "authors", *extra, "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and "Traceback" not in err
