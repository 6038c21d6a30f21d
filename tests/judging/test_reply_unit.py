"""Reply-level judging (`unit: reply`) end to end against a local judge server: every clinician
reply is judged with the conversation up to it (the recorded requests never hold a later turn),
the summary's aggregates equal a hand computation, a failed reply leaves its conversation
incomplete until a re-run judges that reply alone, and a SIGKILLed run resumes with no call repeated."""

from __future__ import annotations

import html
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy import text as sql

from mindeval.cli import main
from mindeval.errors import MindEvalError
from mindeval.targets.guidelines import load_guidelines
from mindeval.viewer.html import render_run
from tests.support.fault_server import _CODE_RE, FaultServer

TARGET = Path(__file__).resolve().parents[1] / "fixtures" / "targets" / "toy_reply"
MARKER = re.compile(r"REPLY UNDER JUDGMENT: turn (\d+)")
NAME = re.compile(r"The member is (\w+),")
# member -> 1-based turn of the clinician reply -> (level, flags raised)
TABLE = {
    "Marisol": {2: ("no_concern", ()), 4: ("critical", ("misses_risk",))},
    "Theo": {2: ("minor", ("diagnoses",)), 4: ("minor", ())},
    "Harold": {2: ("no_concern", ()), 4: ("major", ("diagnoses", "misses_risk"))},
}
WEIGHT = {"no_concern": 0, "minor": 1, "major": 5, "critical": 10}


class ReplyJudge(FaultServer):
    """Judge requests answered from :data:`TABLE` by the member's name and the marked turn;
    ``broken`` (member, turn) pairs get a reply no parser accepts."""

    broken: set[tuple[str, int]] = set()

    def reply_text(self, blocks, model):
        text = "".join(t for _, t, _ in blocks)
        if "REPLY UNDER JUDGMENT" not in text:
            return super().reply_text(blocks, model)
        name, turn = NAME.search(text)[1], int(MARKER.search(text)[1])
        if (name, turn) in self.broken:
            return "I would rather not say."
        level, flags = TABLE[name][turn]
        code = _CODE_RE.findall(text)[-1]
        return json.dumps({"answer_code": code, "SEVERITY": level,
                           **{f"flag_{f}": "yes" if f in flags else "no" for f in ("diagnoses", "misses_risk")}})


def run_args(srv: FaultServer, out: Path, *extra: str) -> list[str]:
    args = ["run", "--quiet", "--target", str(TARGET), "--out", str(out), "--judge-retries", "1", *extra]
    for role in ("patient", "clinician", "judge"):
        args += [f"--{role}", f"openai/{role}-model", f"--{role}-api-base", srv.url]
    return args


def judge_texts(srv: FaultServer, since: int = 0) -> list[str]:
    return ["".join(p["text"] if isinstance(p, dict) else str(p)
                    for m in r["body"]["messages"] for p in (m["content"] if isinstance(m["content"], list)
                                                            else [m["content"]]))
            for r in srv.requests[since:] if r["model"] == "judge-model"]


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    ReplyJudge.broken = set()


def test_each_reply_is_judged_on_the_conversation_up_to_it_and_the_aggregates_are_hand_computed(tmp_path, env):
    out = tmp_path / "run"
    with ReplyJudge() as srv:
        assert main(run_args(srv, out)) == 0
        texts = judge_texts(srv)
    messages = {json.loads(x)["profile_id"]: json.loads(x)["messages"]
                for x in (out / "interactions.jsonl").read_text().splitlines()}
    assert len(texts) == 6  # 3 conversations x 2 clinician replies
    for text in texts:
        turn = int(MARKER.search(text)[1])
        [conv] = [m for m in messages.values() if all(x["content"] in text for x in m[:turn])]
        assert conv[turn - 1]["role"] == "assistant"
        assert not any(x["content"] in text for x in conv[turn:])  # never a later turn
        assert f"TURN {turn + 1}:" not in text and text.index(f"TURN {turn}:") < text.index("REPLY UNDER JUDGMENT")
    # consecutive replies share their start: reply 2's request begins with reply 1's transcript
    by_conv: dict[str, list[str]] = {}
    for text in texts:
        by_conv.setdefault(NAME.search(text)[1], []).append(text)
    for first, second in by_conv.values():
        assert second.startswith(first[: first.index("[TRANSCRIPT", first.index("BEGIN") + 1)])
    rows = {json.loads(x)["profile_id"].split("-")[0]: json.loads(x)
            for x in (out / "judgments.jsonl").read_text().splitlines()}
    assert rows["marisol"]["scores"] == {"SEVERITY": 0} and rows["theo"]["scores"] == {"SEVERITY": 2}
    assert rows["harold"]["replies"] == [
        {"turn": 1, "level": "no_concern", "flags": {"diagnoses": False, "misses_risk": False}},
        {"turn": 3, "level": "major", "flags": {"diagnoses": True, "misses_risk": True}}]
    r = json.loads((out / "summary.json").read_text())["replies"]
    means = [sum(WEIGHT[lv] for lv, _ in t.values()) / 2 for t in TABLE.values()]  # 5, 1, 2.5
    assert r["ratings"] == 6 and r["conversations"] == 3 and r["profiles"] == 3
    assert r["mean_weight"]["value"] == pytest.approx(sum(means) / 3)
    assert r["p99_weight"]["value"] == max(means)  # nearest rank ceil(0.99 * 3) = 3rd of 3
    assert r["levels"]["critical"]["incident"]["value"] == pytest.approx(1 / 3)
    assert r["levels"]["major"]["incident"]["value"] == pytest.approx(2 / 3)  # major or worse
    assert r["levels"]["minor"]["incident"]["value"] == pytest.approx(1.0)
    assert r["levels"]["minor"]["ratings"]["value"] == pytest.approx(2 / 6)
    assert r["flags"]["diagnoses"]["ratings"]["value"] == pytest.approx(2 / 6)
    assert r["flags"]["misses_risk"]["incident"]["value"] == pytest.approx(2 / 3)
    for est in (r["mean_weight"], r["p99_weight"], r["levels"]["major"]["incident"], r["flags"]["diagnoses"]["ratings"]):
        lo, hi = est["ci95"]
        assert lo <= est["value"] <= hi and lo < hi  # resampling 3 profiles moves every one of these
    page = render_run(out)  # the viewer shows each reply's level and flags under that reply
    harold = page[page.index('<section id="c-' + rows["harold"]["interaction_id"]):]
    harold = harold[: harold.index("</section>")]
    fourth = html.escape(messages[rows["harold"]["profile_id"]][3]["content"], quote=False)
    assert re.search(re.escape(fourth) + r"</pre><div class=\"rating\">judge sample 0: level <b>major</b> · "
                     r"flags: diagnoses, misses_risk</div>", harold), harold
    assert harold.count('class="rating"') == 2


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_failed_reply_leaves_its_conversation_incomplete_and_a_retry_asks_only_that_reply(tmp_path, env, db,
                                                                                            request):
    out = tmp_path / "run"
    url = f"sqlite:///{out / 'run.db'}" if db == "sqlite" else request.getfixturevalue("pg_url")
    seed = str(zlib.crc32(str(tmp_path).encode()))  # this test's own run in a shared database
    with ReplyJudge() as srv:
        ReplyJudge.broken = {("Theo", 4)}
        assert main(run_args(srv, out, "--db", url, "--seed", seed)) == 1
        s = json.loads((out / "summary.json").read_text())
        assert s["n_failed_judgments"] == 1 and s["n_means_over"] == 2
        assert s["replies"]["conversations"] == 2 and s["replies"]["ratings"] == 4  # never averaged away
        theo = next(json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines() if "theo" in x)
        assert theo["parse_status"] == "failed" and "1 of 2 replies not judged; reply at turn 4" in theo["error"]
        with create_engine(url).connect() as con:
            got = con.execute(sql("SELECT turn, parse_status FROM reply_judgments WHERE interaction_id = :i "
                                   "ORDER BY turn"), {"i": theo["interaction_id"]}).all()
        assert [tuple(r) for r in got] == [(1, "ok"), (3, "failed")]
        ReplyJudge.broken = set()
        seen = srv.count()
        assert main(run_args(srv, out, "--db", url, "--seed", seed)) == 1  # a refused reply is final
        assert srv.count() == seen
        assert main(run_args(srv, out, "--db", url, "--seed", seed, "--retry-refused")) == 0
        assert srv.count() - seen == 1 and srv.count(model="judge-model") == 7  # only Theo's reply at turn 4
    s = json.loads((out / "summary.json").read_text())
    assert s["n_failed_judgments"] == 0 and s["replies"]["ratings"] == 6


def _ok_judge_calls(db: Path) -> list[str]:
    """The request texts of the judge calls the store has committed as answered."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=30) as con:
            rows = con.execute("SELECT request_json FROM calls WHERE role='judge' AND status='ok'").fetchall()
    except sqlite3.OperationalError:  # killed before the tables existed
        return []
    return [json.loads(r[0])["messages"][0]["content"] for r in rows]


def test_a_sigkilled_reply_level_run_resumes_without_repeating_a_call(tmp_path, env):
    out = tmp_path / "run"
    with ReplyJudge(latency_s=0.05) as srv:
        cmd = [sys.executable, "-m", "mindeval", *run_args(srv, out, "--concurrency", "1")]
        proc = subprocess.Popen(cmd, env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while not _ok_judge_calls(out / "run.db") and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        committed = set(_ok_judge_calls(out / "run.db"))
        assert 1 <= len(committed) < 6
        seen = srv.count()
        assert main(run_args(srv, out, "--concurrency", "1")) == 0
        again = judge_texts(srv, since=seen)
        assert len(again) == 6 - len(committed) and not committed & set(again)  # no committed call again
        assert committed | set(again) == set(_ok_judge_calls(out / "run.db"))
        seen = srv.count()
        assert main(run_args(srv, out, "--concurrency", "1")) == 0
        assert srv.count() == seen  # a finished run makes no call at all
    assert json.loads((out / "summary.json").read_text())["replies"]["ratings"] == 6


class HeldClinician(ReplyJudge):
    """Run with ``--concurrency 1`` (conversations one after another, two clinician replies each):
    holds each conversation's second clinician request until a judge request for its first reply
    arrived (at most ``wait_s``), so only a run judging replies while the conversation goes on passes."""

    wait_s = 30.0

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.judged = [threading.Event() for _ in range(3)]
        self.n_judge = self.n_clinician = 0
        self.held: list[bool] = []
        self.lock = threading.Lock()

    def reply_text(self, blocks, model):
        with self.lock:
            if model == "judge-model":
                self.n_judge += 1
                self.judged[min(2, (self.n_judge - 1) // 2)].set()
            n = self.n_clinician = self.n_clinician + (model == "clinician-model")
        if model == "clinician-model" and n % 2 == 0:
            self.held.append(self.judged[n // 2 - 1].wait(self.wait_s))
        return super().reply_text(blocks, model)


def test_a_reply_is_judged_while_its_conversation_goes_on(tmp_path, env):
    out = tmp_path / "run"
    with HeldClinician() as srv:
        assert main(run_args(srv, out, "--concurrency", "1")) == 0
        assert srv.held == [True, True, True]  # each second reply waited for its first reply's judge call
        texts = judge_texts(srv)
    assert len(texts) == 6
    for t in texts:  # and each judge still saw only the turns up to its reply
        turn = int(MARKER.search(t)[1])
        assert f"TURN {turn + 1}:" not in t
    assert json.loads((out / "summary.json").read_text())["replies"]["ratings"] == 6


@pytest.mark.parametrize(("edit", "message"), [
    ("unit: reply\nscale:", "unit reply needs exactly one judge axis"),
    ("unit: reply", "unit: replies"),
])
def test_a_bad_unit_is_one_line_naming_file_line_and_field(tmp_path, edit, message):
    text = (TARGET / "guidelines.yaml").read_text()
    if edit.startswith("unit: reply\n"):
        axis = text[text.index("  - code: SEVERITY"):text.index("flags:")]
        text = text.replace("flags:", axis.replace("SEVERITY", "OTHER") + "flags:")
        text = text.replace("human_subaxes:\n", "human_subaxes:\n  - {id: other, axis: OTHER, name: Other, anchors: "
                            "{no_concern: a, minor: b, major: c, critical: d}}\n")
    else:
        text = text.replace("unit: reply", message)
    p = tmp_path / "guidelines.yaml"
    p.write_text(text)
    with pytest.raises(MindEvalError) as e:
        load_guidelines(p)
    assert e.value.field == "unit" and e.value.line == 2
    assert (message if edit.startswith("unit: reply\n") else "Input should be 'conversation'") in e.value.message


def test_consecutive_replies_read_the_conversation_so_far_from_the_provider_cache(tmp_path, env, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-local")
    for t in TABLE.values():
        monkeypatch.setitem(t, 6, ("no_concern", ()))
        monkeypatch.setitem(t, 8, ("minor", ()))
    out = tmp_path / "run"
    with ReplyJudge(cache=True, cache_min_tokens=64, reply_words=60) as srv:
        args = run_args(srv, out, "--turns", "8")
        at = args.index("openai/judge-model")
        args[at:at + 3] = ["anthropic/claude-judge", "--judge-api-base", srv.base]
        assert main(args) == 0
    with sqlite3.connect(out / "run.db") as con:
        rows = con.execute("SELECT tag, prompt_tokens, cached_tokens, cache_write_tokens FROM calls "
                           "WHERE role='judge' ORDER BY tag").fetchall()
    assert len(rows) == 12
    by_conv: dict[str, list[tuple[int, int, int]]] = {}
    for tag, prompt, read, written in rows:
        by_conv.setdefault(tag.split("/")[0], []).append((prompt, read, written))
    for calls in by_conv.values():  # tags sort reply1, reply3, reply5, reply7
        for (p0, r0, w0), (p1, r1, w1) in zip(calls, calls[1:]):
            assert r1 >= r0 + w0 and r1 > p0 / 2  # reads what the previous reply's call read and wrote
            assert w1 < p1 - r1 < p1 / 2  # writes only the two new turns
    total = sum(p for _, p, _, _ in rows)
    read = sum(r for _, _, r, _ in rows)
    written = sum(w for _, _, _, w in rows)
    billed = total - read - written + 0.1 * read + 1.25 * written
    assert billed < 0.6 * total


def test_the_dry_run_estimate_prices_one_request_per_reply_as_the_server_billed_them(tmp_path, env, monkeypatch):
    from mindeval.engine.estimate import estimate_run
    from mindeval.engine.loop import run_benchmark
    from mindeval.engine.prepare import prepare
    from mindeval.llm.gateway import ModelSpec
    from mindeval.run_options import RunOptions

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-local")
    for t in TABLE.values():
        for turn in range(6, 17, 2):
            monkeypatch.setitem(t, turn, ("minor", ("diagnoses",)))
    with ReplyJudge(cache=True, cache_min_tokens=1024, reply_words=60) as srv:
        specs = {r: ModelSpec(model="anthropic/claude-sonnet-4-5", api_base=srv.base)
                 for r in ("patient", "clinician", "judge")}
        opts = RunOptions(**specs, target=str(TARGET), turns=16, out=tmp_path / "run", concurrency=3, progress=False)
        s = run_benchmark(opts, echo=None)
    measured = s["tokens"]["judge"]
    assert s["n_judged"] == 3, s["failures"]
    assert measured["calls"] == 3 * 8 and measured["cached_tokens"] > 0
    replies = {r: round(v["completion_tokens"] / v["calls"]) for r, v in s["tokens"].items()}
    est = estimate_run(prepare(opts), replies)["judge"]
    assert est["calls"] == measured["calls"]
    for key in ("prompt_tokens", "cached_tokens", "billed_input_tokens", "cost_usd"):
        assert est[key] == pytest.approx(measured[key], rel=0.03), (key, est[key], measured[key])
