"""The bad-target catalogue: every field of a target manifest (``target.yaml``:
:class:`~mindeval.targets.TargetManifest` and the models nested in it) with at least one bad value.

Each case is a copy of the built-in ``reply_safety`` target (it uses every kind of field: sessions,
roles, labels, a score) with one key replaced. Both ``mindeval targets validate PATH`` and a
``mindeval run --target PATH --dry-run`` against a loopback server must refuse it with exit 2 and
one line naming the file (with its line when the YAML gives one) and the field, without a
traceback, a byte written or a request sent.

A new target field must extend :data:`CATALOGUE`: ``test_every_target_field_has_a_bad_value``
fails until it does. A known gap is a case marked ``gap``: it is expected to fail (strict).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from pydantic import BaseModel

from mindeval.cli import main
from mindeval.targets import TargetManifest

BASE = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
BINARY = b"\x89PNG\r\n\x1a\n\x00\xff\xfe"
DELETE = object()  # the key is removed from the manifest


class Case(NamedTuple):
    value: Any  # the key's new value (DELETE: removed)
    files: dict[str, bytes] = {}  # extra files written into the target folder first
    gap: str = ""  # a known gap: the case is expected to fail until it is fixed
    drop: tuple[str, ...] = ()  # top-level keys removed besides (``scores`` replaces ``score``)


HEAD = {"name": "worst", "formula": "incident_pct_major", "headline": True}


CATALOGUE: dict[str, list[Case]] = {
    "name": [Case("Reply Safety"), Case(5)],
    "version": [Case(""), Case([1])],
    "description": [Case("   "), Case(DELETE)],
    "profiles": [Case("nosuch.jsonl"), Case("bin.jsonl", {"bin.jsonl": BINARY}), Case(["profiles.jsonl"])],
    "turns": [Case(0), Case("six"), Case(2.5)],
    "sessions": [Case(1000), Case("two"), Case(0)],
    "opening_line": [Case(["Hi."]), Case({"text": "Hi."})],
    "patient_can_end": [Case(""), Case(["[END]"]), Case("[NEVER TOLD]")],  # the last: not in the patient template
    "roles": [Case("Member"), Case({"member": "Member"})],
    "roles.patient": [Case(""), Case(7)],
    "roles.clinician": [Case("  "), Case(["Companion"])],
    "reply_format": [Case("bogus")],
    "prompts": [Case("prompts/"), Case(DELETE)],
    "prompts.patient": [Case("prompts/nosuch.txt"), Case("bin.txt", {"bin.txt": BINARY})],
    "prompts.clinician": [Case("bin.txt", {"bin.txt": BINARY}), Case(5)],
    "prompts.judge": [Case("prompts/nosuch.txt"), Case("plain.txt", {"plain.txt": b"Rate it.\n"})],
    "prompts.memory": [Case("bin.txt", {"bin.txt": BINARY}), Case(DELETE)],
    "prompts.next_session": [Case("prompts/nosuch.txt"), Case("bin.txt", {"bin.txt": BINARY})],
    "guidelines": [Case("nosuch.yaml"), Case("bin.yaml", {"bin.yaml": BINARY}), Case(3)],
    "labels": [Case("profile_labels.yaml"), Case({"file": "profile_labels.yaml"})],
    "labels.file": [Case("nosuch.yaml"), Case("bin.yaml", {"bin.yaml": BINARY})],
    "labels.fields": [Case({}), Case({"concern": []}), Case({"Concern": ["everyday", "risk"]}),
                      Case({"concern": ["everyday", "everyday"]})],
    "labels.visible_to": [Case({"nosuch": ["judge"]}), Case({"concern": ["nobody"]})],
    "rank_by": [Case("bogus"), Case(["average"])],
    "score": [Case("incident_pct_major"), Case({"label": "x"})],
    "score.formula": [Case("1 +"), Case("nosuch_quantity * 2"), Case("__import__('os')")],
    "score.label": [Case(""), Case({"a": 1})],
    "score.higher_is_better": [Case("maybe")],
    "scores": [Case([HEAD]),  # with score: both at once
               Case([], drop=("score",)),
               Case([{**HEAD, "headline": False}], drop=("score",)),  # no headline
               Case([HEAD, {**HEAD, "name": "other"}], drop=("score",)),  # two headlines
               Case([HEAD, {"name": "worst", "formula": "pct_major"}], drop=("score",)),  # a duplicate name
               Case([{**HEAD, "name": "Worst score"}], drop=("score",)),
               Case([HEAD, {"name": "x", "formula": "pct_major[THERAPY]"}], drop=("score",)),  # reply-level: no codes
               Case([HEAD, {"name": "x", "formula": "pct_major[0]"}], drop=("score",)),
               Case([{**HEAD, "label": ""}], drop=("score",)), Case({"worst": HEAD}, drop=("score",))],
    "first_session": [Case("hello"), Case({"notes": "hi"})],
    "first_session.situation": [Case(["a", "b"]), Case({"text": "x", "field": "name"})],
    "first_session.memory": [Case("  "), Case({})],
    "first_session.situation.text": [Case(""), Case(5)],
    "first_session.situation.field": [Case("favourite_colour"), Case("Name")],
    "first_session.memory.text": [Case(["notes"])],
    "first_session.memory.field": [Case("member_narrative"), Case("recent_mood")],
    "situation_fields": [Case([]), Case(["Event"]), Case(["event", "event"]), Case("event")],
    "situation_opening": [Case("nowhere"), Case(5)],
    "memory": [Case("patient"), Case({"writers": "patient"})],
    "memory.writer": [Case("judge"), Case(["patient"])],
    # an unknown role, none, twice, a string; the clinician (whose template names ${memory}) left
    # out; the patient listed, whose template does not name it
    "memory.readers": [Case(["nobody"]), Case([]), Case(["judge", "judge"]), Case("judge"), Case(["judge"]),
                       Case(["patient", "clinician", "judge"])],
    "memory.max_entries": [Case(0), Case("two"), Case(2.5)],
    "partial_judging": [Case("maybe"), Case([True])],
    "schedule": [Case([1]), Case({"Gap": {"between": [1, 2]}}), Case({"gap": {"between": [3, 1]}}),
                 Case({"mood": {"choices": ["a"], "weights": [1, 2]}}), Case({"beat": {"choices": ["a"], "sessions": [3]}}),
                 Case({"mood": {"choices": []}}), Case({"gap": {"between": [1, 2], "visible_to": ["nurse"]}})],
    "legacy_files": [Case(True), Case("maybe")],
    "authors_release": [Case(True), Case("maybe")],
    "nosuch_key": [Case(1)],  # an unknown key (not a field: the guard ignores it)
}
NOT_FIELDS = {"nosuch_key"}


def _fields(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every field of ``model`` as a dotted path, recursively through nested models."""
    out: set[str] = set()
    for name, info in model.model_fields.items():
        out.add(prefix + name)
        for arg in (info.annotation, *getattr(info.annotation, "__args__", ())):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                out |= _fields(arg, f"{prefix}{name}.")
    return out


def test_every_target_field_has_a_bad_value():
    """A new target field without a bad value in the catalogue fails here: add one."""
    fields = _fields(TargetManifest)
    assert "score.formula" in fields and "labels.visible_to" in fields  # the walk reaches nested models
    missing = sorted(fields - set(CATALOGUE))
    assert not missing, f"add a bad value to tests/targets/test_bad_target_inputs.py CATALOGUE for {missing}"
    assert not set(CATALOGUE) - fields - NOT_FIELDS, "a catalogue entry names no target field"


CASES = [pytest.param(field, case, id=f"{field}-{k}",
                      marks=[pytest.mark.xfail(strict=True, reason=case.gap)] if case.gap else [])
         for field, cases in CATALOGUE.items() for k, case in enumerate(cases)]


def _bad_target(tmp: Path, field: str, case: Case) -> Path:
    folder = tmp / "bad_target"
    shutil.copytree(BASE, folder)
    for name, data in case.files.items():
        (folder / name).write_bytes(data)
    manifest = folder / "target.yaml"
    data = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    *parents, key = field.split(".")
    node = data
    for p in parents:
        node = node.setdefault(p, {})  # a nested field of an optional block: the block is added
    for name in case.drop:
        data.pop(name)
    if case.value is DELETE:
        node.pop(key)
    else:
        node[key] = case.value
    manifest.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return folder


def _digest(folder: Path) -> str:
    return hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sorted(folder.rglob("*"))
                                   if p.is_file())).hexdigest()


def _one_line(err: str, folder: Path, field: str, case: Case) -> str:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    line = lines[0]
    assert str(folder) in line, line  # names the file: the manifest or the file it names
    if "target.yaml:" in line:
        assert re.search(r"target\.yaml:\d+:", line), line  # the YAML gives the line
    if any(f"{folder}/{name}:" in line for name in case.files):
        return line  # a problem inside the file the field names: that file (and its line) is named
    leaf = field.split(".")[-1]
    assert leaf in line or field in line, line  # names the field
    return line


@pytest.mark.parametrize(("field", "case"), CASES)
def test_a_bad_target_value_is_one_line_exit_2_in_validate_and_run(field, case, server, tmp_path, capsys,
                                                                   monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    folder = _bad_target(tmp_path, field, case)
    before, digest = len(server.requests), _digest(folder)

    code = main(["targets", "validate", str(folder)])
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    _one_line(err, folder, field, case)

    out = tmp_path / "out"
    code = main(["run", "--target", str(folder), "--dry-run", "--patient", "openai/patient-model",
                 "--clinician", "openai/clinician-model", "--judge", "openai/judge-model",
                 "--api-base", server.url, "--limit", "1", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    _one_line(err, folder, field, case)

    assert len(server.requests) == before  # no request reached the model server
    assert not out.exists()  # nothing written
    assert _digest(folder) == digest  # the target is left as it was
