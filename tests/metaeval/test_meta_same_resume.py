"""Backstory generation, `metaeval judge` and `metaeval realism` resume and refuse alike.

Each goes through the run store's one create/resume path: the same command resumes
without a repeated call, other options are refused with a diff naming what changed,
and ``new_run`` starts afresh.
"""

from __future__ import annotations

from typing import Any

import pytest
from metaeval_builders import human_file  # noqa: I001

from metaeval.judge_runs import run_judge
from metaeval.realism import RealismOptions, generate, load_human_turns
from mindeval.errors import ConfigMismatchError
from mindeval.llm import fake
from mindeval.llm.gateway import ModelSpec
from mindeval.profiles.backstory import BackstoryOptions, generate_file
from mindeval.profiles.sampler import profiles_jsonl, sample_profiles
from mindeval.run_options import RunOptions


def backstory(tmp_path, temperature: float | None, new_run: bool) -> dict[str, Any]:
    src = tmp_path / "in.jsonl"
    if not src.exists():
        src.write_bytes(profiles_jsonl(sample_profiles(3, 9)))
    report = generate_file(src, tmp_path / "out.jsonl", ModelSpec(model="fake/echo", temperature=temperature),
                           BackstoryOptions(retries=1), new_run=new_run)
    return report.model_dump()


def judge(tmp_path, temperature: float | None, new_run: bool, tiny_authors) -> dict[str, Any]:
    params = {} if temperature is None else {"temperature": temperature}
    printed: list[str] = []
    summary = run_judge(RunOptions(annotations=str(tiny_authors), judge={"model": "fake/judge", **params},
                                   out=str(tmp_path / "jr"), judge_retries=1, limit=3, new_run=new_run),
                        echo=printed.append)
    return {**summary, "printed": printed}


def realism(tmp_path, temperature: float | None, new_run: bool) -> dict[str, Any]:
    out = tmp_path / "realism"
    out.mkdir(exist_ok=True)
    params = {} if temperature is None else {"temperature": temperature}
    opts = RealismOptions(human_turns=str(human_file(tmp_path, n=3)), patient="fake/echo", variants=["default"],
                          out=str(out), params=params, new_run=new_run)
    printed: list[str] = []
    return {**generate(opts, load_human_turns(opts.human_turns), printed.append)[1], "printed": printed}


@pytest.mark.parametrize("tool", [backstory, judge, realism])
def test_same_options_resume_other_options_are_refused(tool, tmp_path, tiny_authors):
    def invoke(temperature: float | None = None, new_run: bool = False) -> dict[str, Any]:
        extra = (tiny_authors,) if tool is judge else ()
        return tool(tmp_path, temperature, new_run, *extra)

    model = "judge" if tool is judge else "echo"  # judge replies must parse, or a re-run retries them
    before = fake.CALLS[model]
    first = invoke()
    made = fake.CALLS[model] - before
    assert not first["resumed"] and first["calls_made"] == made == 3

    again = invoke()
    assert again["resumed"] and again["run_id"] == first["run_id"]
    # stored replies are reused (the judge does not even ask again for a stored judgment)
    assert again["calls_made"] == 0 and again["calls_reused"] == (0 if tool is judge else made)
    assert fake.CALLS[model] - before == made  # nothing was asked twice
    if tool is not backstory:  # (its command line prints the same: tests/profiles)
        assert any(line.startswith("resuming run ") for line in again["printed"])
        assert any(f"calls made: 0   reused from store: {again['calls_reused']}" in line for line in again["printed"])

    with pytest.raises(ConfigMismatchError, match=r"temperature: None -> 0\.5") as refused:
        invoke(temperature=0.5)
    assert "--new-run" in str(refused.value)
    assert fake.CALLS[model] - before == made  # refused before any call

    fresh = invoke(temperature=0.5, new_run=True)
    assert not fresh["resumed"] and fresh["run_id"] != first["run_id"] and fresh["calls_made"] == made
