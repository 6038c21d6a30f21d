"""`metaeval judge` on the sessions of a multi-session run: each session is judged with the notes its
clinician started it with (the judge template's ${memory}), as `mindeval run` judges it."""

from __future__ import annotations

import json

from metaeval_builders import FIELDS, attributes, authors_row

from metaeval.sources import load_authors_annotations, load_study
from mindeval.cli.meta import main as metaeval_main
from mindeval.study_data import StudyRatings, SubmittedRating
from tests.support.fault_server import FaultServer, request_text

SESSIONS = {  # interaction id -> (member name, what the clinician says, the notes it started with)
    "run-x-000-ana": ("Ana", "Welcome, Ana. Where shall we start?", "first session: nothing noted yet"),
    "run-x-000-ana-s2": ("Ana", "Good to see you again, Ana.", "NOTES-ANA: sleeps badly, fears exams"),
    "run-x-001-bo": ("Bo", "Welcome, Bo. What brings you here?", "first session: nothing noted yet"),
    "run-x-001-bo-s2": ("Bo", "Hello again, Bo.", "NOTES-BO: lost job, drinks more"),
}


def _annotations(tmp_path):
    rows = []
    for iid, (name, says, notes) in SESSIONS.items():
        row = authors_row(iid, name, "vendor/clinician", {f: [3, 4] for f in FIELDS}, ["u1", "u2"])
        row["messages"] = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": says},
                           {"role": "user", "content": "Okay."}]
        k = 2 if iid.endswith("-s2") else 1
        row["session"] = {"member": iid.removesuffix("-s2"), "session": k, "sessions": 2, "memory": notes}
        row["profile_id"] = name.lower()  # a run's row names its profile (the id ends with it)
        rows.append(row)
    path = tmp_path / "rated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_each_session_is_judged_with_its_notes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-sessions")
    path = _annotations(tmp_path)
    assert {i: it.memory for i, it in load_authors_annotations(path).interactions.items()} == {
        i: notes for i, (_, _, notes) in SESSIONS.items()}
    with FaultServer() as srv:
        code = metaeval_main(["judge", "--annotations", str(path), "--target", "reply_safety",
                              "--judge", "openai/judge-model", "--judge-api-base", srv.url,
                              "--concurrency", "1", "--out", str(tmp_path / "jr")])
        reqs = list(srv.requests)
    assert code == 0
    for iid, (_, says, notes) in SESSIONS.items():
        mine = [r for r in reqs if says in request_text(r)]
        assert mine, f"no judge request for {iid}"
        others = {n for i, (_, _, n) in SESSIONS.items() if n != notes}
        assert all(notes in request_text(r) and not any(o in request_text(r) for o in others) for r in mine), iid


def test_a_studys_sessions_keep_their_notes():
    ratings = [SubmittedRating(interaction_id=iid, profile_id=name.lower(), member_attributes=attributes(name),
                               messages=[{"role": "user", "content": "Hello."}], clinician_model="vendor/c",
                               annotator="ann", values={"reply_severity": 1}, justification="", safety_note=None,
                               revision=1, submitted_at=None, memory=notes)
               for iid, (name, _, notes) in SESSIONS.items()]
    src = load_study(StudyRatings(study="s", source="sqlite:///x.db", target="reply_safety", na_value=-1,
                                  ratings=ratings))
    assert {i: it.memory for i, it in src.interactions.items()} == {i: n for i, (_, _, n) in SESSIONS.items()}


def test_a_judge_template_naming_the_clinician_prompt_is_refused_over_rated_transcripts(tmp_path, monkeypatch,
                                                                                        capsys):
    """Rated transcripts keep no clinician system prompt: a judge template naming ${clinician_system} is
    refused in one line naming its file, line and field (the dry run too), and no judge call is made,
    rather than the judge being shown an empty prompt."""
    import shutil
    from pathlib import Path

    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-sessions")
    path = _annotations(tmp_path)
    target = Path(shutil.copytree(Path(__file__).resolve().parents[2] / "targets" / "reply_safety", tmp_path / "rs"))
    judge = target / "prompts" / "judge.txt"
    judge.write_text(judge.read_text() + "\nThe companion was told:\n${clinician_system}\n")
    line = judge.read_text().splitlines().index("${clinician_system}") + 1
    with FaultServer() as srv:
        for extra in ([], ["--dry-run"]):
            capsys.readouterr()
            code = metaeval_main(["judge", "--annotations", str(path), "--target", str(target),
                                  "--judge", "openai/judge-model", "--judge-api-base", srv.url,
                                  "--out", str(tmp_path / "jr"), *extra])
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and len(err) == 1, err
            assert f"{judge}:{line}:clinician_system: " in err[0] and "keeps no clinician system prompt" in err[0]
        assert srv.count() == 0
    assert not (tmp_path / "jr" / "judgments.jsonl").exists()
