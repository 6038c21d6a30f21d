"""Backstory validation, retry with feedback, failure records and resume without repeated calls."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from mindeval.cli import main
from mindeval.llm import fake
from mindeval.llm.gateway import ModelSpec
from mindeval.profiles.backstory import (
    BackstoryOptions,
    check_backstory,
    generate_file,
    split_paragraphs,
)
from mindeval.profiles.sampler import profiles_jsonl, sample_profiles
from mindeval.profiles.validate import validate_file
from mindeval.records import load_profiles
from mindeval.store import Database, sqlite_url
from mindeval.store.tables import CallRow, RunRow

GOOD = """You grew up in a small town where your father ran a hardware store and your mother kept the \
accounts at the kitchen table late into the evening. Money was discussed in lowered voices, and you \
learned early that asking for things could make the evening tense. At school you were quiet but \
dependable, the kind of student teachers trusted with keys and errands.

In your twenties you moved to the city for work and found friends through a running club, though you \
rarely let them see when things were hard. A breakup at twenty-eight left you sleeping badly for months, \
and you started to notice a low mood that lingered on Sunday evenings. You coped by taking on extra \
shifts, which kept you busy but left little room for rest.

Over the last few years the worry has spread from money to almost everything, from emails at work to \
whether you locked the door. You check your bank balance several times a day and avoid opening letters \
that look official. Friends describe you as steady, yet you often cancel plans at the last minute \
because you feel too drained to go.

Now the low mood and the constant checking take up most of your energy, and your work has started to \
slip. You are tired of feeling on edge and want to find a calmer routine that does not depend on staying \
busy. That is what has brought you to look for support with your anxiety at this point."""

THREE_PARAS = "\n\n".join(GOOD.split("\n\n")[:3])
WITH_HEADING = "# Patient profile\n\n" + GOOD
FIRST_PERSON = GOOD.replace("You grew up", "I grew up").replace("your father", "my father")
AS_LIST = "\n".join(f"- {p}" for p in GOOD.split("\n\n"))
THIRD_PERSON = GOOD.replace("You ", "She ").replace(" you ", " she ").replace("your ", "her ").replace("Your ", "Her ")
CUT_OFF = GOOD[:-40]
PREAMBLE = "Here is the profile you asked for, written as requested below today.\n\n" + GOOD


def test_good_backstory_passes_and_normalises_paragraphs():
    paragraphs, problems = check_backstory(GOOD, "Sam")
    assert problems == [] and len(paragraphs) == 4
    single_newlines = GOOD.replace("\n\n", "\n")
    assert split_paragraphs(single_newlines) == paragraphs


@pytest.mark.parametrize("text, expected", [
    (THREE_PARAS, "3 paragraph(s)"),
    (WITH_HEADING, "heading"),
    (FIRST_PERSON, "first person"),
    (AS_LIST, "list"),
    (THIRD_PERSON, "second person"),
    (CUT_OFF, "cut off"),
    (PREAMBLE, "comment about the task"),
])
def test_rule_violations_are_named(text, expected):
    _, problems = check_backstory(text, "Sam")
    assert any(expected in p for p in problems), problems


def test_quoted_first_person_is_allowed():
    text = GOOD.replace("your work has started to slip.", 'your manager said "I need you focused" last week.')
    assert check_backstory(text)[1] == []


def _count(model: str) -> int:
    """Calls the fake provider received for ``fake/NAME`` (it counts them under NAME)."""
    return fake.CALLS[model.split("/", 1)[1]]


@pytest.fixture
def two_profiles(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(profiles_jsonl(sample_profiles(2, 9)))
    return path


def _calls(db_path):
    db = Database(sqlite_url(db_path))
    with db.read() as s:
        rows = s.scalars(select(CallRow).order_by(CallRow.id)).all()
        runs = s.scalars(select(RunRow)).all()
    db.close()
    return rows, runs


def test_retry_with_feedback_then_failure_after_k_attempts(tmp_path, two_profiles):
    # profile 1: invalid then valid; profile 2: three invalid replies → failed after K=3
    model = fake.script("bs-retry", [THREE_PARAS, GOOD, WITH_HEADING, FIRST_PERSON, AS_LIST])
    out = tmp_path / "out.jsonl"
    before = _count(model)
    # one scripted reply sequence across two profiles: one profile at a time keeps its order
    assert main(["profiles", "generate", str(two_profiles), "--model", model, "-o", str(out), "--retries", "3",
                 "--concurrency", "1"]) == 1
    assert _count(model) - before == 5
    written = load_profiles(out)
    assert len(written) == 1 and written[0].member_narrative == "\n\n".join(split_paragraphs(GOOD))
    assert validate_file(out, backstory=True)[1] == []
    failures = [json.loads(x) for x in (tmp_path / "out.failures.jsonl").read_text().splitlines()]
    assert len(failures) == 1 and failures[0]["attempts"] == 3 and failures[0]["status"] == "failed"
    assert any("list" in p for p in failures[0]["problems"]) and failures[0]["last_reply"] == AS_LIST
    assert failures[0]["member_attributes"]["name"] == load_profiles(two_profiles)[1].name
    rows, runs = _calls(tmp_path / "out.backstory.db")
    assert [r.status for r in rows] == ["ok"] * 5 and runs[0].kind == "backstory"
    retry_messages = rows[1].request_json["messages"]
    assert [m["role"] for m in retry_messages] == ["user", "assistant", "user"]
    assert retry_messages[1]["content"] == THREE_PARAS
    assert "3 paragraph(s)" in retry_messages[2]["content"]
    meta = json.loads((tmp_path / "out.meta.json").read_text())
    assert meta["n_ok"] == 1 and meta["n_failed"] == 1 and meta["retries"] == 3 and meta["seed"] == 0


def test_rerun_reuses_every_stored_call(tmp_path, two_profiles, capsys):
    model = fake.script("bs-resume", [GOOD, GOOD])
    out = tmp_path / "out.jsonl"
    assert main(["profiles", "generate", str(two_profiles), "--model", model, "-o", str(out)]) == 0
    first = out.read_bytes()
    before = _count(model)
    assert main(["profiles", "generate", str(two_profiles), "--model", model, "-o", str(out)]) == 0
    assert _count(model) == before  # the script is empty: any new call would fail
    assert out.read_bytes() == first
    assert "calls made: 0   reused from store: 2" in capsys.readouterr().err
    rows, _ = _calls(tmp_path / "out.backstory.db")
    assert len(rows) == 2


def test_interrupted_run_resumes_where_it_stopped(tmp_path, two_profiles):
    model = fake.script("bs-crash", [GOOD])  # the second profile's call fails: script exhausted
    out = tmp_path / "out.jsonl"
    assert main(["profiles", "generate", str(two_profiles), "--model", model, "-o", str(out)]) == 1
    failures = (tmp_path / "out.failures.jsonl").read_text()
    assert "script exhausted" in failures
    fake.script("bs-crash", [GOOD])
    before = _count(model)
    assert main(["profiles", "generate", str(two_profiles), "--model", model, "-o", str(out)]) == 0
    assert _count(model) - before == 1
    assert len(load_profiles(out)) == 2
    assert not (tmp_path / "out.failures.jsonl").exists()
    rows, _ = _calls(tmp_path / "out.backstory.db")
    assert [r.status for r in rows] == ["ok", "error", "ok"]


def test_raising_retries_continues_from_the_stored_attempts(tmp_path, two_profiles):
    model = fake.script("bs-more", [GOOD, AS_LIST, AS_LIST])
    out = tmp_path / "out.jsonl"
    assert main(["profiles", "generate", str(two_profiles), "--model", model, "-o", str(out),
                 "--retries", "2"]) == 1
    fake.script("bs-more", [GOOD])
    before = _count(model)
    assert main(["profiles", "generate", str(two_profiles), "--model", model, "-o", str(out),
                 "--retries", "3"]) == 0
    assert _count(model) - before == 1


def test_existing_backstories_are_kept_without_calls(tmp_path, demo_profiles_path):
    model = fake.script("bs-keep", [])
    out = tmp_path / "out.jsonl"
    report = generate_file(demo_profiles_path, out, ModelSpec(model=model))
    assert report.n_kept == 6 and report.calls_made == 0
    assert [p.member_narrative for p in load_profiles(out)] == [
        p.member_narrative for p in load_profiles(demo_profiles_path)]


def test_bad_inputs_are_clear_errors(tmp_path, two_profiles, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["profiles", "generate", str(two_profiles), "--model", "nomodel", "-o", str(out)]) == 2
    assert "no provider prefix" in capsys.readouterr().err
    assert main(["profiles", "generate", str(two_profiles), "-o", str(two_profiles)]) == 2
    assert "different file" in capsys.readouterr().err
    assert main(["profiles", "generate", str(tmp_path / "none.jsonl"), "-o", str(out)]) == 2
    assert "profiles file not found" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_embedded_model_records_a_valid_backstory_or_a_failure(tmp_path):
    """SmolLM2-135M: the pipeline must end in a validated backstory or a recorded failure.

    Observed: the 135M model does not follow this prompt (it writes repetitive third-person
    text and runs into the token limit), so in practice this ends in a recorded failure; the
    test accepts either outcome and checks that it is recorded honestly and resumable.
    max_tokens is lowered to keep the test to a few minutes on 2 CPU cores.
    """
    src = tmp_path / "one.jsonl"
    src.write_bytes(profiles_jsonl(sample_profiles(1, 42)))
    out = tmp_path / "out.jsonl"
    spec = ModelSpec(model="local/smollm2", max_tokens=160)
    report = generate_file(src, out, spec, BackstoryOptions(retries=2))
    (o,) = report.outcomes
    assert report.calls_made + report.calls_reused == o.attempts
    if o.status == "ok":
        assert check_backstory(load_profiles(out)[0].member_narrative)[1] == []
    else:
        assert o.status == "failed" and o.attempts == 2 and (o.problems or o.error)
        assert json.loads((tmp_path / "out.failures.jsonl").read_text())["attempts"] == 2
    rows, _ = _calls(tmp_path / "out.backstory.db")
    assert len(rows) == o.attempts
    again = generate_file(src, out, spec, BackstoryOptions(retries=2))
    assert again.calls_made == 0 and again.outcomes[0].status == o.status


def test_outputs_without_their_store_are_refused_and_one_process_writes_them(tmp_path, two_profiles, capsys):
    """Deleting <stem>.backstory.db used to make the same command buy every backstory again and
    replace the file without a word; a second writer of the same -o is told which process holds it."""
    from mindeval.rundir_guard import run_dir_lock

    out = tmp_path / "out.jsonl"
    args = ["profiles", "generate", str(two_profiles), "--model", "fake/echo:bs-store", "-o", str(out), "--quiet",
            "--retries", "1"]
    assert main(args) in (0, 1)  # echo replies are no valid backstory: recorded failed, not filled in
    made = fake.CALLS["echo:bs-store"]
    assert made == 2
    (tmp_path / "out.backstory.db").unlink()
    before = (out.read_bytes(), (tmp_path / "out.meta.json").read_bytes())
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not its store out.backstory.db" in err[0] and "--overwrite" in err[0], err
    assert fake.CALLS["echo:bs-store"] == made
    assert (out.read_bytes(), (tmp_path / "out.meta.json").read_bytes()) == before
    with run_dir_lock(tmp_path, ".out.jsonl.lock"):  # another process writing the same -o
        assert main([*args, "--overwrite"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "in use by another run" in err[0] and "pid" in err[0], err
    assert fake.CALLS["echo:bs-store"] == made
    assert main([*args, "--overwrite"]) in (0, 1)  # said explicitly: bought again
    assert fake.CALLS["echo:bs-store"] == 2 * made
    assert not (tmp_path / ".out.jsonl.lock").exists()
