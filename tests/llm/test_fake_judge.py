"""``fake/judge`` answers any reply shape, however many keys it has."""

from __future__ import annotations

import json

import pytest

from mindeval.llm.fake import complete


@pytest.mark.parametrize("n", [5, 32, 33, 40, 200])
def test_fake_judge_fills_a_reply_shape_of_any_size(n):
    slots = ", ".join(f'"D{i:03d}": <1-6>' for i in range(n))
    prompt = f"Use this shape:\n{{{slots}, \"rationale\": \"<optional, brief>\"}}\n\nAnswer code: 0123456789abcdef\n"
    reply = json.loads(complete("fake/judge", [{"role": "user", "content": prompt}], {}).text)
    assert reply.pop("answer_code") == "0123456789abcdef"
    assert list(reply) == [f"D{i:03d}" for i in range(n)]
    assert all(v in range(1, 7) for v in reply.values())
    if n >= 40:  # the keys past the digest's 32 bytes are not a constant
        assert len(set(list(reply.values())[32:])) > 1


def test_fake_judge_keeps_its_replies_for_small_shapes():
    """The first 32 keys come from the request digest exactly as before (runs made with it stay stable)."""
    slots = ", ".join(f'"D{i:02d}": <0-255>' for i in range(32))
    prompt = f"Use this shape:\n{{{slots}}}"
    messages = [{"role": "user", "content": prompt}]
    from mindeval.llm.fake import _digest

    h = _digest(messages)
    reply = json.loads(complete("fake/judge", messages, {}).text)
    assert list(reply.values()) == [int(h[i * 2:i * 2 + 2], 16) for i in range(32)]
