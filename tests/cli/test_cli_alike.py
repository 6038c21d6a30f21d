"""`mindeval` and `metaeval` read alike: defaults in --help, shared option names, one-line errors."""

from __future__ import annotations

import json

import pytest

from mindeval.cli import build_parser as mindeval_parser
from mindeval.cli import main as mindeval_main
from mindeval.cli.meta import build_parser as metaeval_parser
from mindeval.cli.meta import main as metaeval_main

SHARED = ("--judge-retries", "--judge-samples", "--fewshot-file", "--fewshot-k", "--judge-prompt",
          "--judge-temperature", "--judge-max-tokens", "--concurrency", "--seed", "--out")


def _sub(parser, *names):
    for name in names:
        parser = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[name]
    return parser


def _options(parser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def test_run_and_judge_share_the_judge_option_names():
    run, judge = _sub(mindeval_parser(), "run"), _sub(metaeval_parser(), "judge")
    for opt in SHARED:
        assert opt in _options(run) and opt in _options(judge), opt


@pytest.mark.parametrize(("prog", "cmd"), [("mindeval", "run"), ("mindeval", "leaderboard"), ("metaeval", "judge"),
                                           ("metaeval", "compare"), ("metaeval", "realism")])
def test_help_shows_every_default(prog, cmd):
    parser = _sub(mindeval_parser() if prog == "mindeval" else metaeval_parser(), cmd)
    text = parser.format_help()
    for action in parser._actions:
        d = action.default
        if not action.option_strings or d is None or d is False or d == [] or "==SUPPRESS==" in (action.help, d):
            continue
        if isinstance(d, (int, float, str)) and not isinstance(d, bool):
            flat = " ".join(text.split())
            shown = {str(d)} | ({str(int(d))} if isinstance(d, float) and d.is_integer() else set())
            assert any(f"default: {v}" in flat or f"(default {v}" in flat for v in shown), (cmd, action.option_strings)


def test_old_metaeval_judge_names_still_work():
    from mindeval.cli.options import options_of

    args = metaeval_parser().parse_args(["judge", "--annotations", "a.jsonl", "--judge", "fake/judge", "--out", "o",
                                         "--repetitions", "3", "--retries", "2", "--fewshot", "4",
                                         "--fewshot-from", "f.jsonl", "--temperature", "0.5"])
    o = options_of(args)
    assert (o.judge_samples, o.judge_retries, o.fewshot_k, o.fewshot_file) == (3, 2, 4, "f.jsonl")
    assert o.judge.temperature == 0.5
    new = options_of(metaeval_parser().parse_args(["judge", "--annotations", "a.jsonl", "--judge", "fake/judge",
                                                   "--out", "o"]))
    assert (new.judge_samples, new.judge_retries, new.fewshot_k, new.fewshot_file) == (1, 3, 5, None)


@pytest.mark.parametrize(
    "argv",
    [
        ["mindeval", "run", "--out", "{dir}", "--concurrency", "0"],
        ["mindeval", "run", "--out", "{file}"],
        ["mindeval", "leaderboard", "{dir}", "--out", "{file}"],
        ["metaeval", "judge", "--annotations", "x", "--judge", "fake/judge", "--out", "{file}"],
        ["metaeval", "judge", "--annotations", "x", "--judge", "fake/judge", "--out", "{dir}", "--concurrency", "0"],
        ["metaeval", "compare", "--judges", "{dir}", "--out", "{file}"],
        ["metaeval", "realism", "--human-turns", "x", "--out", "{dir}", "--concurrency", "-1"],
    ],
)
def test_bad_concurrency_and_out_are_one_line_errors(tmp_path, capsys, argv):
    afile = tmp_path / "a-file.txt"
    afile.write_text("x")
    argv = [a.format(dir=tmp_path / "d", file=afile) for a in argv]
    main = mindeval_main if argv[0] == "mindeval" else metaeval_main
    assert main(argv[1:]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: --")
    assert "must be at least 1" in err or "is a file; give a directory" in err
    assert afile.read_text() == "x"


def test_compare_writes_nothing_unless_asked(tmp_path, monkeypatch, capsys):
    run = tmp_path / "judge"
    run.mkdir()
    rows = [{"interaction_id": f"i{n}", "profile_id": f"p{n // 2}", "model": f"s{n % 2}", "judge_model": j,
             "scores": {ax: 1 + (n * len(j) + k) % 6 for k, ax in enumerate(("CAC", "EPC", "AR", "TRA", "ASCQ"))}}
            for n in range(8) for j in ("j", "jj")]
    (run / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert metaeval_main(["compare", "--judges", str(run), "--no-plots"]) == 0
    assert "nothing written" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_metaeval_model_options_reach_the_model_spec(monkeypatch, tmp_path):
    import metaeval.judge_runs as jr
    import metaeval.realism as re_

    seen = {}
    monkeypatch.setattr(jr, "run_judge", lambda opts, echo, **_: seen.setdefault("judge", opts) and {"n_failed_judgments": 0})
    monkeypatch.setattr(re_, "run_realism", lambda opts, echo, **_: seen.setdefault("realism", opts))
    assert metaeval_main(["judge", "--annotations", "a.jsonl", "--judge", "fake/judge", "--out", str(tmp_path / "j"),
                          "--judge-timeout", "7", "--judge-rpm", "30", "--temperature", "0.2"]) == 0
    assert metaeval_main(["realism", "--human-turns", "h.jsonl", "--out", str(tmp_path / "r"),
                          "--patient-max-tokens", "50", "--patient-tpm", "900"]) == 0
    from mindeval.llm.gateway import ModelSpec

    judge = seen["judge"].judge
    patient = ModelSpec(model=seen["realism"].patient, **seen["realism"].params)
    assert (judge.timeout_s, judge.rpm, judge.temperature) == (7, 30, 0.2)
    assert (patient.max_tokens, patient.tpm) == (50, 900)
