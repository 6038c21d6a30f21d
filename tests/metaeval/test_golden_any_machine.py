"""The agreement and leaderboard goldens hold whatever BLAS kernels and thread counts compute
them (issue 24 item 3): each golden test runs again in a fresh interpreter with OpenBLAS told
to use another CPU's kernels (``OPENBLAS_CORETYPE``) and other thread counts.

Before the outputs had a stated precision, ``Prescott`` (SSE3 kernels) changed the last bit of
interval ends (``0.5833333333333333`` vs ``…334``) and both goldens failed; ``Haswell`` (AVX2)
failed the agreement golden. The core types chosen run on any x86-64 CPU with AVX2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_TESTS = [
    "tests/metaeval/test_meta_compare_golden.py::test_mindeval_compare_outputs_are_byte_identical",
    "tests/leaderboard/test_leaderboard_golden.py::test_mindeval_leaderboard_outputs_are_byte_identical",
]


@pytest.mark.parametrize("coretype, threads", [("Prescott", "1"), ("Haswell", "4"), ("", "3")])
def test_goldens_hold_under_other_blas_kernels_and_thread_counts(coretype, threads, tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k != "MINDEVAL_UPDATE_GOLDEN" and not k.startswith(("PYTEST_", "OPENBLAS_", "OMP_"))}
    env.update(OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads,
               MINDEVAL_CACHE_DIR=str(tmp_path / "cache"))
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--basetemp", str(tmp_path / "t"), *GOLDEN_TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{len(GOLDEN_TESTS)} passed" in done.stdout


def test_the_loose_comparison_allows_only_a_last_digit_unit():
    from tests.support.golden import differences

    assert differences("a 0.583333 b -1.5", "a 0.583334 b -1.5", loose_last_digit=True) == []
    assert differences("0.5833", "0.5834", loose_last_digit=True) == []
    assert differences("0.583333", "0.583335", loose_last_digit=True)  # two units
    assert differences("0.5833", "0.58330", loose_last_digit=True) == []  # same value, another width
    assert differences("a 0.5 b", "a 0.5 c", loose_last_digit=True)  # text differs
    assert differences("1 0.5", "2 0.5", loose_last_digit=True)  # whole numbers are exact
    assert differences("0.583333", "0.583334")  # strict by default
