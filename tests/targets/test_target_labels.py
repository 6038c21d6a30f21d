"""Profile labels in prompts and in `mindeval profiles validate`.

A label reaches a prompt only where a template names it, and only a template of a role the
target declares it visible to (``labels.visible_to``; the judge alone by default). Runs go
through a local OpenAI-compatible server, which records every request the models receive.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.errors import MindEvalError
from mindeval.profiles.validate import validate_file
from mindeval.prompts import load_template, render_clinician
from mindeval.records import load_profiles
from mindeval.targets import load_target, validate_target
from tests.support.fault_server import FaultServer
from tests.support.items import RISK_CHECKLIST, answers, reply

LEVELS = ["none", "passive", "active", "plan", "attempt"]
TOKEN = re.compile(r"lbl_[a-z]+")  # a label value no prompt text contains by chance


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """A copy of risk_checklist whose label values are unmistakable tokens (``lbl_plan``)."""
    t = Path(shutil.copytree(RISK_CHECKLIST, tmp_path / "t"))
    manifest = t / "target.yaml"
    manifest.write_text(manifest.read_text().replace(
        "[none, passive, active, plan, attempt]", "[" + ", ".join(f"lbl_{v}" for v in LEVELS) + "]"))
    labels = t / "profile_labels.yaml"
    labels.write_text(re.sub(r"\{risk_level: (\w+)\}", r"{risk_level: lbl_\1}", labels.read_text()))
    return t


def _show_to(t: Path, roles: str) -> None:
    manifest = t / "target.yaml"
    text = manifest.read_text()
    assert "visible_to: {risk_level: [judge]}" in text
    manifest.write_text(text.replace("visible_to: {risk_level: [judge]}", f"visible_to: {{risk_level: [{roles}]}}"))


def _name_label_in(t: Path, role: str) -> Path:
    tpl = t / "prompts" / f"{role}.txt"
    text = tpl.read_text()
    anchor = "- Region of residence: ${region}\n" if role == "clinician" else "\n---\n"
    assert anchor in text
    tpl.write_text(text.replace(anchor, anchor + ("- Risk: ${risk_level}\n" if role == "clinician"
                                                  else "Your risk level: ${risk_level}\n"), 1))
    return tpl


def _expected(t: Path) -> list[str]:
    tags = load_target(t).profile_labels()
    return [tags[p.id]["risk_level"] for p in load_profiles(t / "profiles.jsonl")]


def _run(t: Path, out: Path, monkeypatch) -> dict[str, list[str]]:
    """Run every profile through the local server (one turn; the patient speaks first); return
    the text of every request per model, in profile order."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    kinds = ["none", "none", "good", "bad", "good", "bad"]
    with FaultServer() as srv:
        srv.script([{"content": reply(answers(k))} for k in kinds], model="judge-model")
        args = ["run", "--quiet", "--target", str(t), "--concurrency", "1", "--turns", "1", "--max-retries", "0",
                "--out", str(out)]
        for role in ("patient", "clinician", "judge"):
            args += [f"--{role}", f"openai/{role}-model", f"--{role}-api-base", srv.url]
        assert main(args) == 0
        sent = {role: [json.dumps(r["body"]["messages"]) for r in srv.requests if r["model"] == f"{role}-model"]
                for role in ("patient", "clinician", "judge")}
    assert [len(v) for v in sent.values()] == [6, 6, 6]
    return sent


def test_the_judge_sees_the_profiles_label_and_no_one_else_does(target, tmp_path, monkeypatch):
    sent = _run(target, tmp_path / "run", monkeypatch)
    want = _expected(target)
    assert sorted(set(want)) == sorted(f"lbl_{v}" for v in LEVELS)
    # Each judge request names exactly its own profile's value, where the template puts it.
    assert [TOKEN.findall(text) for text in sent["judge"]] == [[v] for v in want]
    assert all(f"Scenario risk level (how the member was written; they may disclose it only indirectly, or not "
               f"at all): {v}" in json.loads(text)[0]["content"] for v, text in zip(want, sent["judge"], strict=True))
    assert not any(TOKEN.search(text) for role in ("patient", "clinician") for text in sent[role])


def test_a_label_declared_visible_to_the_clinician_reaches_it_and_only_it(target, tmp_path, monkeypatch):
    _show_to(target, "judge, clinician")
    _name_label_in(target, "clinician")
    assert validate_target(target) == []
    sent = _run(target, tmp_path / "run", monkeypatch)
    want = _expected(target)
    assert [TOKEN.findall(text) for text in sent["clinician"]] == [[v] for v in want]
    assert [TOKEN.findall(text) for text in sent["judge"]] == [[v] for v in want]
    assert not any(TOKEN.search(text) for text in sent["patient"])


def test_a_label_visible_to_the_clinician_is_still_rendered_only_where_named(target):
    _show_to(target, "judge, clinician")  # visible, but the clinician template does not name it
    t = load_target(target)
    tpl = t.template("clinician")
    profile = load_profiles(target / "profiles.jsonl")[0]
    text = render_clinician(tpl, profile, t.profile_labels()[profile.id])
    assert tpl.labels == frozenset() and not TOKEN.search(text)


@pytest.mark.parametrize("role", ["clinician", "patient"])
def test_validate_refuses_a_template_naming_a_label_not_visible_to_its_role(target, capsys, role):
    tpl = _name_label_in(target, role)
    line = tpl.read_text().splitlines().index(next(ln for ln in tpl.read_text().splitlines()
                                                   if "${risk_level}" in ln)) + 1
    want = (f"{tpl}:{line}:risk_level: '${{risk_level}}' is a profile label not visible to the {role}: list {role} "
            "under labels.visible_to.risk_level in target.yaml to show it (default: the judge only)")
    assert [str(p) for p in validate_target(target)] == [want]
    capsys.readouterr()
    assert main(["targets", "validate", str(target)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {want}"]
    # Declared visible: valid.
    _show_to(target, f"judge, {role}")
    assert validate_target(target) == []


def test_a_label_hidden_from_the_judge_is_refused_in_its_template(target):
    _show_to(target, "clinician")
    (p,) = validate_target(target)
    assert p.path.endswith("judge.txt") and p.field == "risk_level" and "not visible to the judge" in p.message


def test_outside_a_target_a_label_is_an_unknown_field(target):
    with pytest.raises(MindEvalError, match=r"unknown field '\$\{risk_level\}' for a judge template"):
        load_template(str(target / "prompts" / "judge.txt"), kind="judge")


def test_bad_visibility_declarations_name_the_manifest_line(target):
    manifest = target / "target.yaml"
    _show_to(target, "judge, therapist")
    line = manifest.read_text().splitlines().index("  visible_to: {risk_level: [judge, therapist]}") + 1
    # One problem: the templates naming the label are not reported too.
    assert [str(p) for p in validate_target(target)] == [
        f"{manifest}:{line}:labels.visible_to.risk_level.1: Input should be 'patient', 'clinician' or 'judge'"]
    manifest.write_text(manifest.read_text().replace("visible_to: {risk_level: [judge, therapist]}",
                                                     "visible_to: {risk: [judge]}"))
    assert [str(p) for p in validate_target(target)] == [
        f"{manifest}:22:labels: visible_to names risk, which is not a declared label (risk_level)"]
    manifest.write_text(manifest.read_text().replace("visible_to: {risk: [judge]}", "")
                        .replace("    risk_level: [", "    age: ["))
    assert any("label age has the name of a template field" in str(p) for p in validate_target(target))


def test_a_run_over_profiles_without_the_named_label_stops_before_any_call(target, tmp_path, capsys):
    from mindeval.llm import fake

    fake.CALLS.clear()
    assert main(["run", "--quiet", "--target", str(target), "--profiles", "demo", "--patient", "fake/echo",
                 "--clinician", "fake/echo", "--judge", "fake/judge", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {target / 'profile_labels.yaml'}:") and ".risk_level: profile " in err
    assert "has no risk_level label, which a template names" in err and "\n" not in err
    assert sum(fake.CALLS.values()) == 0


# --------------------------------------------------------------- profiles validate


def test_profiles_validate_checks_the_targets_labels(capsys):
    for name in ("risk_checklist", "crisis"):
        t = load_target(name)
        assert validate_file(t.profiles_path, target=t)[1] == []
        assert main(["profiles", "validate", str(t.profiles_path)]) == 0  # the target found beside the file
        assert f"labels of target {name} checked ({t.labels_path})" in capsys.readouterr().err
        assert main(["profiles", "validate", "--target", name]) == 0
        assert f"ok: {len(t.profiles())} valid profile(s)" in capsys.readouterr().err


def test_profiles_validate_reports_bad_labels_as_file_line_field(target, capsys):
    labels = target / "profile_labels.yaml"
    lines = labels.read_text().splitlines()
    n = {ln.split(":")[0]: i for i, ln in enumerate(lines, start=1)}
    text = labels.read_text().replace("{risk_level: lbl_passive}", "{risk_level: high}")
    text = text.replace("ruth-1ecd3312b6: {risk_level: lbl_plan}", "ruth-1ecd3312b6: {risk: lbl_plan}")
    text = text.replace("paolo-", "nobody-")
    labels.write_text(text)
    assert main(["profiles", "validate", str(target / "profiles.jsonl")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"{labels}:{n['hannah-5ef2700400']}:hannah-5ef2700400.risk_level: 'high' is not one of " \
           + ", ".join(f"lbl_{v}" for v in LEVELS) in out
    assert f"{labels}:{n['ruth-1ecd3312b6']}:ruth-1ecd3312b6.risk: unknown label (declared: risk_level)" in out
    assert any(m.startswith(f"{labels}:") and m.endswith("ruth-1ecd3312b6.risk_level: label is missing")
               for m in out), out
    assert any(m.startswith(f"{labels}:{n['paolo-6670574c08']}:nobody-6670574c08: 'nobody-6670574c08' is not a "
                            "profile id") for m in out), out
    assert f"{labels}:paolo-6670574c08: profile paolo-6670574c08 has no labels" in out
    # Without the target (a copy of the file elsewhere) only the rows are checked.
    lone = target.parent / "lone.jsonl"
    shutil.copy(target / "profiles.jsonl", lone)
    assert main(["profiles", "validate", str(lone)]) == 0
    assert main(["profiles", "validate", str(lone), "--target", str(target)]) == 1


def test_a_label_given_as_a_profile_attribute_names_the_labels_file(target, capsys):
    path = target / "profiles.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["member_attributes"]["risk_level"] = "lbl_none"
    rows[2]["member_attributes"]["mood_score"] = "3"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["profiles", "validate", str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}:2:member_attributes.risk_level: risk_level is a label of target risk_checklist: give it in "
        "profile_labels.yaml, not in the profile",
        f"{path}:3:member_attributes.mood_score: unknown attribute",
    ]
    # Without a target, a label-like attribute is just unknown.
    lone = target.parent / "lone.jsonl"
    shutil.copy(path, lone)
    assert main(["profiles", "validate", str(lone)]) == 1
    assert f"{lone}:2:member_attributes.risk_level: unknown attribute" in capsys.readouterr().out


def test_profiles_validate_needs_a_file_or_a_target_with_profiles(capsys):
    assert main(["profiles", "validate"]) == 2
    assert capsys.readouterr().err.strip() == \
        "error: FILE: give a profiles FILE (or --target NAME|DIR of a target with its own profiles)"
    assert main(["profiles", "validate", "--target", "mindeval"]) == 2
