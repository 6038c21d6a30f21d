"""The embedded model's reply depends on the request only, not on what the process ran before,
so a fresh run and a resumed one write the same transcript (real SmolLM2; slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

SCRIPT = r"""
import json, sys
from mindeval.llm.gateway import ModelSpec, complete
spec = ModelSpec(model="local/smollm2", temperature=0.7, max_tokens=24)
SYSTEM = " ".join(f"Rule {i}: listen first, reflect feelings, ask one open question." for i in range(45))
def ask(history, seed):
    msgs = [{"role": "system", "content": SYSTEM}]
    msgs += [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(history)]
    return complete(spec, msgs, seed=seed, role="clinician").text
print(json.dumps([ask(history, seed) for history, seed in json.loads(sys.argv[1])]))
"""
# A later turn of a conversation whose earlier turns the process has just generated (the prompt
# of each earlier call is a prefix of the last one's), as in a run; and the same call alone.
TURNS = ["Hello.", "Hi, I am glad you came. What brings you here today?",
         "I have not slept well for weeks and I feel on edge at work.", "That sounds exhausting.",
         "Yes. My sister says I should talk to someone about my mood."]
TARGET = [TURNS, 11]
UNSEEDED = [TURNS[:3], None]  # no seed: still the same draw (llama.cpp would derive it from the last call's)
OTHERS = [[TURNS[:1], 3], [TURNS[:3], 4]]


def _replies(calls, env=None):
    r = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(calls)], capture_output=True, text=True,
                       timeout=600, env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_same_call_same_text_in_a_fresh_process_and_after_other_calls():
    fresh = _replies([TARGET, UNSEEDED])
    after = _replies([*OTHERS, TARGET, *OTHERS, UNSEEDED])
    assert all(fresh) and [after[2], after[-1]] == fresh
