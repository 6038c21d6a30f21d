"""The worked example of docs/architecture.md ("adding a rating field"): one ``human_subaxes`` entry,
``warmth`` (axis EPC), added to a copy of MindEval's target in tmp_path, with no authors' criterion.

The real code then shows one more field on the study's rating form, stores a rating with it, exports
it, rolls it up into EPC in metaeval, and refuses the authors' export with one line naming it.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
import yaml

from annotation_app.services import SYSTEM, Workspace
from annotation_app.store import read_ratings
from metaeval.sources import load_study
from mindeval.cli import main
from mindeval.errors import MindEvalError
from mindeval.targets.guidelines import load_guidelines

ROOT = Path(__file__).resolve().parents[2]
WARMTH = {"id": "warmth", "axis": "EPC", "name": "Warmth", "allow_na": False, "anchors": {
    1: "Cold or mechanical; the member's feelings go unacknowledged.",
    3: "Polite but generic; warmth comes and goes.",
    6: "Consistently warm and personal without being effusive."}}


def warm_target(tmp_path: Path) -> Path:
    """targets/mindeval copied (without ``legacy_files``, the built-in's own), with its own guidelines file:
    MindEval's plus ``warmth`` (version bumped)."""
    t = tmp_path / "warm"
    shutil.copytree(ROOT / "targets" / "mindeval", t)
    manifest = t / "target.yaml"
    text = manifest.read_text().replace("guidelines: builtin:guidelines.yaml", "guidelines: guidelines.yaml")
    manifest.write_text(text.replace("legacy_files: true\n", ""))  # the built-in target's own (refused in a copy)
    g = yaml.safe_load((ROOT / "guidelines" / "guidelines.yaml").read_text(encoding="utf-8"))
    assert g["version"] == "1.0.0" and "warmth" not in {s["id"] for s in g["human_subaxes"]}
    g["version"] = "1.1.0"
    g["human_subaxes"].append(WARMTH)
    (t / "guidelines.yaml").write_text(yaml.safe_dump(g, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return t


def test_a_rating_field_is_one_guidelines_entry_and_reaches_form_store_exports_and_rollup(tmp_path, tmp_db_url):
    target = warm_target(tmp_path)
    ws = Workspace(tmp_db_url)
    ws.add_annotator(SYSTEM, "ann", code="ANN-CODE-1234")
    sid = ws.create_study(SYSTEM, "warm", "rating", target=target, k=1, seed=0).id
    ws.import_path(SYSTEM, "warm", ROOT / "data" / "demo_transcripts.jsonl")
    ws.assign(SYSTEM, "warm", annotators=["ann"])

    builtin = [s.id for s in load_guidelines().human_subaxes]
    form = [s.id for s in ws.subaxes(sid)]
    assert form == [*builtin, "warmth"]  # the rating page's fields: one more, after MindEval's
    assert [s.id for s in ws.subaxes()] == builtin  # the real MindEval form is untouched

    v = ws.sign_in("ann", "ANN-CODE-1234").viewer
    epc = [s.id for s in ws.subaxes(sid) if s.axis == "EPC"]
    aid = ws.queue(v, sid)[0].assignment_id
    for sub in ws.subaxes(sid):
        ws.save_value(v, aid, sub.id, 6 if sub.id == "warmth" else 3 if sub.axis == "EPC" else 4)
    ws.save_text(v, aid, justification="warm but generic elsewhere")
    ws.submit(v, aid)

    rows = list(csv.DictReader(io.StringIO(ws.export_text(SYSTEM, sid, "csv"))))
    assert [r["warmth"] for r in rows] == ["6"]
    humans = load_study(read_ratings(tmp_db_url, sid))
    frame = humans.raters[0].frame
    got = frame[frame.axis == "EPC"]["score"].tolist()
    assert got == [pytest.approx((6 + 3 * (len(epc) - 1)) / len(epc))]  # EPC: the mean of its sub-axes
    assert len(epc) == 3 and got == [pytest.approx(4.0)]  # (3 + 3 + 6) / 3, as the docs say

    with pytest.raises(MindEvalError) as refused:
        ws.export_text(SYSTEM, sid, "authors")
    assert str(refused.value).endswith("authors_criteria.yaml:fields: sub-axes with no criterion: warmth")


def test_the_cli_refuses_the_authors_export_with_one_line(tmp_path, tmp_db_url, capsys):
    target = warm_target(tmp_path)
    ws = Workspace(tmp_db_url)
    ws.create_study(SYSTEM, "warm", "rating", target=target)
    ws.import_path(SYSTEM, "warm", ROOT / "data" / "demo_transcripts.jsonl")
    out = tmp_path / "authors.jsonl"
    code = main(["app", "admin", "--db", tmp_db_url, "export", "warm", "--format", "authors", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert len(err) == 1 and err[0].endswith("authors_criteria.yaml:fields: sub-axes with no criterion: warmth")
