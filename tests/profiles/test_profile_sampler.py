"""The sampler is deterministic: same seed → the same bytes, in this process and in others."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from mindeval.cli import main
from mindeval.errors import MindEvalError
from mindeval.profiles.pool import load_pool
from mindeval.profiles.sampler import profiles_jsonl, sample_profiles
from mindeval.records import load_profiles

# sha256 of `mindeval profiles sample --n 20 --seed 42` with the bundled pool below. If you change
# the pool or the rules on purpose, bump SAMPLER_VERSION in sampler.py and update both values.
GOLDEN_POOL_SHA256 = "3c145be2aa070ff5011fb878dc6818a6784a399cc147e19cb3d97a57919a21fd"
GOLDEN_SAMPLE = "77d64cbb5d38031392d1cabac94b9e2112d435435da9643c0e1da4e84317ae47"


def test_same_seed_gives_identical_bytes_and_other_seeds_differ():
    a = profiles_jsonl(sample_profiles(100, 7))
    b = profiles_jsonl(sample_profiles(100, 7))
    c = profiles_jsonl(sample_profiles(100, 8))
    assert a == b
    assert a != c


def test_profile_i_depends_only_on_seed_and_index():
    big = sample_profiles(60, 3)
    assert sample_profiles(10, 3) == big[:10]
    assert sample_profiles(5, 3, start=40) == big[40:45]


def test_global_random_state_is_neither_used_nor_consumed():
    random.seed(1)
    np.random.seed(1)
    first = profiles_jsonl(sample_profiles(20, 11))
    expected_py, expected_np = random.random(), np.random.random()
    random.seed(1)
    np.random.seed(1)
    random.random()  # disturb the global generators: the sample must not change
    np.random.random()
    assert profiles_jsonl(sample_profiles(20, 11)) == first
    random.seed(1)
    np.random.seed(1)
    sample_profiles(20, 11)
    assert (random.random(), np.random.random()) == (expected_py, expected_np)


def test_byte_identical_jsonl_across_two_processes(tmp_path):
    outs = []
    for i, hashseed in enumerate(("0", "12345")):
        out = tmp_path / f"p{i}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        subprocess.run([sys.executable, "-m", "mindeval", "profiles", "sample", "--n", "200", "--seed", "42",
                        "-o", str(out)], check=True, env=env, capture_output=True)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert outs[0] == profiles_jsonl(sample_profiles(200, 42))


def test_golden_sample():
    """Pins the exact bytes of seed 42 so a numpy, platform or pool change cannot drift silently."""
    pool = load_pool()
    if pool.sha256 != GOLDEN_POOL_SHA256:
        pytest.fail(f"the bundled pool changed (sha256 {pool.sha256}); bump SAMPLER_VERSION and update "
                    "GOLDEN_POOL_SHA256 and GOLDEN_SAMPLE in this test")
    digest = hashlib.sha256(profiles_jsonl(sample_profiles(20, 42, pool=pool))).hexdigest()
    assert digest == GOLDEN_SAMPLE


def test_cli_sample_writes_profiles_and_provenance(tmp_path):
    out = tmp_path / "set.jsonl"
    assert main(["profiles", "sample", "--n", "50", "--seed", "42", "-o", str(out)]) == 0
    profiles = load_profiles(out)
    assert len(profiles) == 50 and all(p.member_narrative == "" for p in profiles)
    meta = json.loads((tmp_path / "set.meta.json").read_text())
    assert meta["seed"] == 42 and meta["n"] == 50 and meta["pool_sha256"] == load_pool().sha256
    assert meta["profiles_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("n, seed", [(0, 1), (-3, 1), (5, -1)])
def test_bad_n_or_seed_is_a_clear_error(n, seed):
    with pytest.raises(MindEvalError):
        sample_profiles(n, seed)


def test_cli_bad_input_exits_2_without_traceback(tmp_path, capsys):
    assert main(["profiles", "sample", "--n", "0", "-o", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: n:") and "Traceback" not in err
    assert main(["profiles", "sample", "--n", "3", "--pool", str(tmp_path / "nope"), "-o",
                 str(tmp_path / "x.jsonl")]) == 2
    assert "attribute pool directory not found" in capsys.readouterr().err
