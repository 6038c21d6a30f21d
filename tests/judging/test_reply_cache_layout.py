"""Reply-level judging's prompt layout, as the local server in its Anthropic billing mode records it
(issue 26 item 8): consecutive reply requests of a conversation share, block for block, their start
up to the previous reply; the block ending there is marked by both (the earlier call writes it, the
later one reads it, and the server bills it as read); a reply's request holds no later turn; and
what is sent uncached each call is the end line, the marker and the answer-code line alone (the
answer rules come with the reply shape, in the part every reply of the run shares)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from mindeval.cli import main
from mindeval.engine.prepare import prepare
from mindeval.judging.answer import reply_answer_rules
from mindeval.judging.render import build_judge_messages
from mindeval.judging.replies import reply_fields
from mindeval.run_options import RunOptions
from tests.support.fault_server import MAX_BREAKPOINTS, FaultServer, count_tokens
from tests.support.rundirs import one_session_reply_safety

MARKER = re.compile(r"REPLY UNDER JUDGMENT: turn (\d+)")
TOKEN = re.compile(r"^\[TRANSCRIPT (T[0-9A-F]{12}) BEGIN", re.MULTILINE)
INTAKE = re.compile(r"The member's intake: (\w+),")


class Recording(FaultServer):
    """Keeps every reply-level judge request's blocks with what the server billed for it."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.judged: list[tuple[list[tuple[str, str, bool]], dict]] = []

    def lookup(self, blocks, api, model=""):
        bill = super().lookup(blocks, api, model)
        if any("REPLY UNDER JUDGMENT" in t for _, t, _ in blocks):
            with self._lock:
                self.judged.append((blocks, bill))
        return bill


def _cuts(blocks: list[tuple[str, str, bool]]) -> dict[str, int]:
    """For each marked block: the request text up to its end -> the blocks up to it (count)."""
    out, acc = {}, ""
    for i, (_, text, marked) in enumerate(blocks):
        acc += text
        if marked:
            out[acc] = i + 1
    return out


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-local")
    out = tmp_path / "run"
    with Recording(cache=True, cache_min_tokens=1024, reply_words=40) as srv:
        args = ["run", "--quiet", "--target", str(one_session_reply_safety(tmp_path)), "--limit", "2", "--turns", "8", "--out", str(out),
                "--concurrency", "2"]
        for role in ("patient", "clinician"):
            args += [f"--{role}", f"openai/{role}-model", f"--{role}-api-base", srv.url]
        args += ["--judge", "anthropic/claude-sonnet-4-5", "--judge-api-base", srv.base]
        assert main(args) == 0
        judged = list(srv.judged)
        outcomes = dict(srv.outcomes)
    return out, judged, outcomes


def test_consecutive_reply_requests_share_their_start_up_to_the_previous_reply_and_read_it(run_dir):
    out, judged, outcomes = run_dir
    assert set(outcomes) == {"ok"}  # every judge request answered validly: no retry
    convs = {json.loads(x)["profile_id"]: json.loads(x)["messages"]
             for x in (out / "interactions.jsonl").read_text().splitlines()}
    by_name: dict[str, list[tuple[int, list, dict]]] = {}
    for blocks, bill in judged:
        text = "".join(t for _, t, _ in blocks)
        by_name.setdefault(INTAKE.search(text)[1], []).append((int(MARKER.search(text)[1]), blocks, bill))
    assert len(by_name) == 2 and all(len(calls) == 4 for calls in by_name.values())  # 4 replies in 8 turns
    for name, calls in by_name.items():
        calls.sort(key=lambda c: c[0])
        assert [turn for turn, _, _ in calls] == [2, 4, 6, 8]
        [messages] = [m for pid, m in convs.items() if pid.startswith(name.lower())]
        for turn, blocks, bill in calls:
            text = "".join(t for _, t, _ in blocks)
            assert sum(m for _, _, m in blocks) <= MAX_BREAKPOINTS
            assert all(m["content"] in text for m in messages[:turn])
            assert not any(m["content"] in text for m in messages[turn:])  # never a later turn
            assert f" TURN {turn + 1}:" not in text
            # the answer rules are in the run-wide first block; only the code line ends the request
            assert reply_answer_rules() in blocks[0][1] and text.rstrip().splitlines()[-2].startswith("Answer code: ")
            assert bill["uncached"] < 80, bill  # end line + marker + code line (was ~186 tokens)
        for (_, prev, _), (_, blocks, bill) in zip(calls, calls[1:]):
            prev_text = "".join(t for _, t, _ in prev)
            tok = TOKEN.search(prev_text)[1]
            upto = prev_text[: prev_text.index(f"\n[TRANSCRIPT {tok} END]\n") + 1]  # through reply k
            assert "".join(t for _, t, _ in blocks).startswith(upto)
            assert upto in _cuts(prev) and upto in _cuts(blocks)  # marked by both: written, then read
            n = _cuts(blocks)[upto]
            assert [b[:2] for b in blocks[:n]] == [b[:2] for b in prev[:n]]  # the same blocks, byte for byte
            assert bill["read"] == sum(count_tokens(t) + 4 for _, t, _ in blocks[:n])  # billed as a cache read
            assert bill["write"] == bill["total"] - bill["read"] - bill["uncached"] > 0  # the two new turns


def test_a_template_without_the_reply_shape_still_gets_the_whole_answer_instruction(tmp_path):
    """A reply-level template that does not show ``${output_format}`` (it writes its own reply shape)
    never gets the bare code line: the whole answer-code paragraph follows the conversation."""
    prep = prepare(RunOptions(target="reply_safety", out=tmp_path / "x", judge="fake/judge"))
    prompt = prep.judge_prompt()
    tpl = prompt.template
    own = tpl.model_copy(update={"body": tpl.body.replace("${output_format}", "Reply in JSON."),
                                 "fields": tpl.fields - {"output_format"}})
    msgs = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello, how are you?"}]
    fields = reply_fields(prep.guidelines)
    code = "0123456789abcdef"
    short = build_judge_messages(prompt, prep.profiles[0], msgs, nonce=code, fields=fields, reply_turn=1)[0]["content"]
    assert short.rstrip().splitlines()[-2] == f"Answer code: {code}"
    assert short.index(reply_answer_rules()) < short.index("[TRANSCRIPT")
    full = build_judge_messages(replace(prompt, template=own), prep.profiles[0], msgs, nonce=code, fields=fields,
                                reply_turn=1)[0]["content"]
    assert reply_answer_rules() not in full
    assert "Only a JSON object that carries this exact code" in full.split("REPLY UNDER JUDGMENT")[1]
