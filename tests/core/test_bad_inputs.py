"""The bad-input catalogue: every field of :class:`~mindeval.run_options.RunOptions` (the options of
`mindeval run`, `mindeval judge` and `metaeval judge`, and the keys of a run file) with at least one
bad value, each refused with one line and exit 2, without a traceback, before any byte is written and
before any request reaches a (loopback) model server.

A new option must extend :data:`CATALOGUE`: ``test_every_run_option_has_a_bad_input_case`` fails
until it does. A case is given on the command line (``run``: after a valid ``mindeval run``;
``metaeval``: after a valid ``metaeval judge --dry-run``) or as a run-file key (``file``: a valid
run file with the key replaced). A known gap is a case marked ``gap``: it is expected to fail
(strict), so fixing it shows here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from mindeval.cli import main
from mindeval.cli.meta import main as metaeval_main
from mindeval.run_options import RunOptions


class Case(NamedTuple):
    how: str  # "run" (command-line arguments), "file" (run-file keys), "metaeval" (metaeval judge arguments)
    value: Any  # a list of arguments, or a mapping of run-file keys
    gap: str = ""  # a known gap: the case is expected to fail until it is fixed


CATALOGUE: dict[str, list[Case]] = {
    "patient": [Case("run", ["--patient", "fake/nope"]), Case("file", {"patient": {"model": 5, "nope": 1}})],
    "clinician": [Case("run", ["--clinician", "nosuchprovider"]), Case("file", {"clinician": [1]})],
    "judge": [Case("run", ["--judge", "fake/nope"]), Case("file", {"judge": {"temperature": "hot"}})],
    "api_base": [Case("file", {"api_base": 5}),
                 Case("run", ["--api-base", "not a url"]), Case("run", ["--judge-api-base", "ftp://x"])],
    "target": [Case("run", ["--target", "nosuch"]), Case("file", {"target": ["mindeval"]})],
    "patient_prompt": [Case("run", ["--patient-prompt", "nosuch/p@v9"])],
    "clinician_prompt": [Case("run", ["--clinician-prompt", "{tmp}/missing.txt"])],
    "judge_prompt": [Case("run", ["--judge-prompt", "{tmp}/binary.txt"])],
    "profiles": [Case("run", ["--profiles", "nosuch.jsonl"]), Case("file", {"profiles": 3})],
    "limit": [Case("run", ["--limit", "0"]), Case("run", ["--limit", "many"])],
    "turns": [Case("run", ["--turns", "0"]), Case("run", ["--turns", "abc"]), Case("file", {"turns": "six"})],
    "seed": [Case("run", ["--seed", "x"]), Case("file", {"seed": "x"})],
    "seed_scheme": [Case("file", {"seed_scheme": 99})],
    "repeats": [Case("run", ["--repeats", "0"])],
    "judge_retries": [Case("run", ["--judge-retries", "-1"])],
    "judge_samples": [Case("run", ["--judge-samples", "0"])],
    "retry_refused": [Case("file", {"retry_refused": "maybe"}), Case("run", ["--retry-refused=yes"])],
    "fewshot_file": [Case("run", ["--fewshot-file", "nosuch.jsonl"])],
    "fewshot_k": [Case("run", ["--fewshot-k", "-1"])],
    "judge_protocol": [Case("run", ["--judge-protocol", "bogus"])],
    "transcript_format": [Case("run", ["--transcript-format", "bogus"])],
    "annotations": [Case("metaeval", ["--annotations", "nosuch.jsonl"]), Case("file", {"annotations": 5}),
                    Case("file", {"annotations": "ratings.jsonl"})],
    "study": [Case("file", {"study": ["x"]}),
              Case("metaeval", ["--study", "x"])],
    "mapping": [Case("metaeval", ["--mapping", "nosuch.yaml"])],
    "zeros": [Case("metaeval", ["--zeros", "bogus"]), Case("file", {"zeros": 0})],
    "label": [Case("file", {"label": [1, 2]}), Case("metaeval", ["--label", ""]), Case("file", {"label": "  "})],
    "out": [Case("run", ["--out", "{tmp}/a_file"]), Case("file", {"out": ["x"]})],
    "db": [Case("run", ["--db", "nosuch://x"])],
    "concurrency": [Case("run", ["--concurrency", "0"])],
    "max_retries": [Case("run", ["--max-retries", "-1"])],
    "retry_budget_s": [Case("run", ["--retry-budget-s", "nan"]), Case("run", ["--retry-budget-s", "0"])],
    "new_run": [Case("file", {"new_run": "maybe"})],
    "overwrite": [Case("file", {"overwrite": "maybe"})],
    "max_cost": [Case("run", ["--max-cost", "nan"]), Case("run", ["--max-cost", "inf"]),
                 Case("run", ["--max-cost", "-1"]), Case("file", {"max_cost": "lots"})],
    "dry_run": [Case("file", {"dry_run": "maybe"})],
    "assume_reply_tokens": [Case("run", ["--assume-reply-tokens", "judge=abc"]),
                            Case("run", ["--assume-reply-tokens", "nobody=5"])],
    "yes": [Case("file", {"yes": "maybe"}), Case("run", ["--yes=please"])],
    "quiet": [Case("file", {"quiet": "maybe"}), Case("run", ["--quiet=yes"])],
    "judge_only": [Case("file", {"judge_only": "maybe"})],
}

RUN_KEYS = {"patient": "openai/patient-model", "clinician": "openai/clinician-model", "judge": "openai/judge-model",
            "limit": 1, "turns": 2, "quiet": True}


def test_every_run_option_has_a_bad_input_case():
    """A new RunOptions field without a bad value in the catalogue fails here: add one."""
    missing = sorted(set(RunOptions.model_fields) - set(CATALOGUE))
    assert not missing, f"add a bad-input case to tests/core/test_bad_inputs.py CATALOGUE for {missing}"
    assert not set(CATALOGUE) - set(RunOptions.model_fields), "a catalogue entry names no RunOptions field"


CASES = [pytest.param(field, case, id=f"{field}-{k}",
                      marks=[pytest.mark.xfail(strict=True, reason=case.gap)] if case.gap else [])
         for field, cases in CATALOGUE.items() for k, case in enumerate(cases)]


def _argv(case: Case, tmp: Path, url: str, shared: Path) -> tuple[Any, list[str]]:
    out = tmp / "out"
    if case.how == "run":
        extra = [a.format(tmp=tmp) for a in case.value]
        base = ["run", *(x for k, v in RUN_KEYS.items() if k != "quiet" for x in (f"--{k}", str(v))),
                "--api-base", url, "--quiet", "--out", str(out)]
        return main, base + extra
    if case.how == "file":
        run_file = tmp / "run.yaml"
        run_file.write_text(yaml.safe_dump({**RUN_KEYS, "api_base": url, "out": str(out), **case.value}))
        return main, ["run", "--config", str(run_file)]
    base = ["judge", "--dry-run", "--annotations", str(shared / "human_annotations.jsonl"), "--judge",
            "openai/judge-model", "--api-base", url, "--out", str(out)]
    return metaeval_main, base + case.value


@pytest.mark.parametrize(("field", "case"), CASES)
def test_a_bad_value_is_one_line_exit_2_and_nothing_is_called_or_written(field, case, server, tmp_path, capsys,
                                                                         monkeypatch, request):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("in the way")
    (tmp_path / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    shared = request.getfixturevalue("shared_data") if case.how == "metaeval" else tmp_path
    before = len(server.requests)
    command, argv = _argv(case, tmp_path, server.url, shared)
    code = command(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("warning:")]
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert len(server.requests) == before  # no request reached the model server
    assert not (tmp_path / "out" / "run.db").exists()  # nothing written
    assert (tmp_path / "a_file").read_text() == "in the way"
