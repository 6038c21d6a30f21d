"""Sub-axis ratings roll up into axes (mean of rated sub-axes) and the average score."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from metaeval.rollup import RollupWarning, rollup
from mindeval.errors import MindEvalError

SUB = {"c1": "CAC", "c2": "CAC", "e1": "EPC", "e2": "EPC", "a1": "AR", "a2": "AR",
       "t1": "TRA", "t2": "TRA", "s1": "ASCQ"}


def frame(values: dict[str, float], rater: str = "P1", iid: str = "i1") -> pd.DataFrame:
    return pd.DataFrame([(iid, "prof", "sys", rater, k, v) for k, v in values.items()],
                        columns=["interaction_id", "profile_id", "system", "rater", "subaxis_id", "score"])


def scores(long: pd.DataFrame, rater: str = "P1") -> dict[str, float]:
    sel = long[long["rater"] == rater]
    return dict(zip(sel["axis"], sel["score"], strict=True))


FULL = {"c1": 2, "c2": 5, "e1": 4, "e2": 6, "a1": 3, "a2": 3, "t1": 1, "t2": 4, "s1": 2}


def test_axes_are_means_of_their_subaxes_and_average_is_mean_of_axes():
    got = scores(rollup(frame(FULL), SUB))
    assert got["CAC"] == 3.5 and got["EPC"] == 5.0 and got["AR"] == 3.0 and got["TRA"] == 2.5 and got["ASCQ"] == 2.0
    assert got["average"] == pytest.approx((3.5 + 5 + 3 + 2.5 + 2) / 5)


def test_zero_means_not_rated_by_default():
    got = scores(rollup(frame({**FULL, "e2": 0}), SUB))
    assert got["EPC"] == 4.0  # only e1 rated
    assert got["average"] == pytest.approx((3.5 + 4 + 3 + 2.5 + 2) / 5)


def test_paper_mode_averages_zero_in():
    got = scores(rollup(frame({**FULL, "e2": 0}), SUB, zeros="zero"))
    assert got["EPC"] == 2.0


def test_axis_without_rated_subaxis_makes_average_nan_with_warning():
    with pytest.warns(RollupWarning, match="1 rating"):
        got = scores(rollup(frame({**FULL, "e1": 0, "e2": 0}), SUB))
    assert math.isnan(got["EPC"]) and math.isnan(got["average"])
    assert got["CAC"] == 3.5


def test_raters_and_interactions_are_kept_apart():
    both = pd.concat([frame(FULL, "P1"), frame({k: 6 for k in FULL}, "P2")])
    long = rollup(both, SUB)
    assert scores(long, "P2")["average"] == 6.0
    assert scores(long, "P1")["CAC"] == 3.5
    assert len(long) == 2 * 6


def test_bad_inputs_are_clear_errors():
    with pytest.raises(MindEvalError, match="unknown sub-axis") as e:
        rollup(frame({"x9": 3}), SUB, source="f.jsonl")
    assert e.value.field == "subaxis_id" and e.value.path == "f.jsonl"
    with pytest.raises(MindEvalError, match="outside 1-6"):
        rollup(frame({**FULL, "c1": 7}), SUB)
    with pytest.raises(MindEvalError, match="twice"):
        rollup(pd.concat([frame(FULL), frame({"c1": 3})]), SUB)
    with pytest.raises(MindEvalError, match="lack column"):
        rollup(frame(FULL).drop(columns=["rater"]), SUB)
