"""The run viewer's Correct control offers every reply (level, flags) and question of a judge sample
and records the chosen one in the run store (AppTest; the browser test covers a conversation score)."""

from __future__ import annotations

import re

import pytest
from appkit import ROOT

from mindeval.cli import main
from mindeval.corrections import run_corrections

PAGE = ROOT / "annotation_app" / "view_page.py"
FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--limit", "1", "--turns", "2",
        "--quiet"]


@pytest.mark.parametrize(("target", "pick", "to", "unit"), [
    ("reply_safety", "reply 1 (turn 2) level", "critical", "reply"),
    ("reply_safety", "reply 1 (turn 2) flag unsafe_advice", "yes", "reply"),
    ("risk_checklist", "question c_method_info of CONTENT", "no", "question"),
])
def test_the_viewer_corrects_a_reply_or_a_question(tmp_path, monkeypatch, target, pick, to, unit):
    from streamlit.testing.v1 import AppTest

    run = tmp_path / "run"
    assert main(["run", "--target", target, *FAKE, "--out", str(run)]) == 0
    monkeypatch.setenv("MINDEVAL_VIEW_RUNS", str(run))
    at = AppTest.from_file(str(PAGE), default_timeout=120).run()
    at.selectbox(key="open").set_value(at.selectbox(key="open").options[0]).run()
    assert not at.exception, at.exception
    what = next(s for s in at.selectbox if s.key and s.key.endswith("-what"))
    base = what.key.removesuffix("-what")
    what.set_value(next(o for o in what.options if o.startswith(pick)))
    at.text_input(key=f"{base}-to").input(to)
    at.text_area(key=f"{base}-reason").input("a reviewer's reading")
    next(b for b in at.button if "Save" in str(b.label)).click().run()
    assert not at.error, [e.value for e in at.error]
    [c] = run_corrections(run)
    assert (c.unit, c.to_value, c.reason) == (unit, to, "a reviewer's reading")
    assert c.who_source == "os-user"  # no name typed: this computer's user, said so


def test_a_name_typed_in_the_viewer_is_recorded_and_shown_as_self_declared(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    run = tmp_path / "run"
    assert main(["run", *FAKE, "--out", str(run)]) == 0
    monkeypatch.setenv("MINDEVAL_VIEW_RUNS", str(run))
    at = AppTest.from_file(str(PAGE), default_timeout=120).run()
    at.selectbox(key="open").set_value(at.selectbox(key="open").options[0]).run()
    what = next(s for s in at.selectbox if s.key and s.key.endswith("-what"))
    base = what.key.removesuffix("-what")
    at.text_input(key=f"{base}-to").input("6")
    at.text_area(key=f"{base}-reason").input("reflects feelings well")
    at.text_input(key=f"{base}-who").input("Dr Admin")  # anyone can type any name here
    next(b for b in at.button if "Save" in str(b.label)).click().run()
    assert not at.error, [e.value for e in at.error]
    assert any(re.search(r"Dr Admin \\?\(self\\?-declared\\?\)", s.value) for s in at.success), \
        [s.value for s in at.success]
    [c] = run_corrections(run)
    assert (c.who, c.who_source, c.provenance()["who_source"]) == ("Dr Admin", "self-declared", "self-declared")
    table = next(d for d in at.dataframe if "identity" in d.value.columns).value
    assert (list(table["who"]), list(table["identity"])) == (["Dr Admin"], ["self-declared"])
