"""The run viewer's data, filters and static HTML export (model text escaped)."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest

from mindeval.cli import main
from mindeval.viewer import filter_conversations, load_conversations
from tests.support.viewruns import HOSTILE, make_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return make_runs(tmp_path_factory.mktemp("runs"))


def test_conversations_carry_scores_usage_and_errors(runs):
    cs = load_conversations([runs["good"], runs["badjudge"], runs["badclin"]])
    assert len(cs) == 9
    good, badjudge, badclin = cs[0], cs[3], cs[6]
    assert not good.failed and good.errors == [] and good.score() is not None
    assert {u.role for u in good.usage} == {"patient", "clinician", "judge"}
    assert good.tokens == sum(u.prompt_tokens + u.completion_tokens for u in good.usage) > 0
    assert badjudge.failed and badjudge.score() is None
    assert badjudge.errors[0].startswith("judge sample 0: ") and "simulated provider failure" in badjudge.errors[0]
    (judge,) = [u for u in badjudge.usage if u.role == "judge"]
    assert judge.calls == judge.failed_calls >= 1 and judge.prompt_tokens == 0  # every judge call failed
    assert badclin.status == "failed" and badclin.errors == ["interaction: clinician fake/error: simulated provider failure"]


def test_filters(runs):
    cs = load_conversations([runs["good"], runs["badjudge"], runs["badclin"]])
    assert [c.run for c in filter_conversations(cs, failed=True)] == ["badjudge"] * 3 + ["badclin"] * 3
    assert len(filter_conversations(cs, failed=False)) == 3
    scores = sorted(c.score("CAC") for c in cs if c.score("CAC") is not None)
    mid = scores[1]
    hit = filter_conversations(cs, dimension="CAC", low=mid, high=mid)
    assert hit and all(c.score("CAC") == mid for c in hit)
    assert filter_conversations(cs, runs=["badclin"], labels=["severe", "non-severe"]) == cs[6:]
    labels = {c.label for c in cs}
    for label in labels:
        assert {c.label for c in filter_conversations(cs, labels=[label])} == {label}


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_html_export_escapes_model_text(runs, tmp_path, capsys):
    out = tmp_path / "share" / "run.html"
    assert main(["view", str(runs["hostile"]), "--html", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    page = out.read_text()
    assert html.escape(HOSTILE, quote=True) in page
    parsed = _Collect()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags and "a" in parsed.tags  # only our own links
    assert HOSTILE in "".join(parsed.text)  # the reader sees the text as written
    assert "default-src 'none'" in page  # no script would run even if something slipped through
    assert not re.search(r"<a [^>]*http://e\.vil", page)


def test_html_export_shows_failures_and_scores(runs, tmp_path):
    out = tmp_path / "bad.html"
    assert main(["view", str(runs["badjudge"]), "--html", str(out)]) == 0
    page = out.read_text()
    assert page.count("judge sample 0: model call failed: judge fake/error: simulated provider failure") == 3
    assert "3 conversations, 3 with a failure" in page
    good = tmp_path / "good.html"
    assert main(["view", str(runs["good"]), "--html", str(good)]) == 0
    assert "Judge sample 0 (ok, 1 attempt(s))" in good.read_text()


@pytest.mark.parametrize(("argv", "message"), [
    (["view", "nope", "--html", "x.html"], "error: nope: run directory not found"),
    (["view", "RUN", "RUN", "--html", "x.html"], "error: --html: --html exports one run; got 2"),
    (["view", "RUN", "--html", "/proc/x/y.html"], "error: --html: cannot write in /proc"),
    (["view", "RUN", "--html", "."], "error: --html: . is a directory; give a file name"),
])
def test_view_errors_are_one_line(runs, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    argv = [str(runs["good"]) if a == "RUN" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
