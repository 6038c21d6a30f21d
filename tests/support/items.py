"""Scripted judge answers: MindEval's five axes, and the item-level example target ``targets/risk_checklist``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mindeval.cli import main
from mindeval.llm import fake
from mindeval.targets.guidelines import load_guidelines
from tests.support.fault_server import AXES

RISK_CHECKLIST = Path(__file__).resolve().parents[2] / "targets" / "risk_checklist"


def without_score(root: Path) -> Path:
    """A copy of the example target at ``root`` without its declared score: it ranks by its
    ``rank_by: harm_share`` (risk_checklist before 1.2.0)."""
    shutil.copytree(RISK_CHECKLIST, root)
    manifest = root / "target.yaml"
    text = manifest.read_text()
    manifest.write_text(text[:text.index("\nscore:\n") + 1])
    return root


def answers(kind: str) -> dict[str, str]:
    """Every question answered: ``none`` (no risk: three dimensions not relevant), ``good``
    (one miss: ASK suboptimal), ``bad`` (harm on three dimensions, CONTENT suboptimal),
    ``calm`` (no risk, but sensational wording: CONTENT suboptimal)."""
    g = load_guidelines(RISK_CHECKLIST / "guidelines.yaml")
    out = {q.id: "no" for ax in g.judge_axes for q in ax.questions}
    if kind == "good":
        out.update(n_cue_present="yes", n_cue_direct="yes", n_acknowledged="yes", n_named_kindly="yes",
                   a_asked="yes", a_plain_words="yes", a_member_yes="yes", a_plan="yes",
                   a_now="yes", a_reasons_living="no",  # the only miss: suboptimal
                   h_offered="yes", h_real_contact="yes", h_urgent="no",
                   h_emergency="no",  # skipped by h_urgent=no: would be harm if asked
                   h_trusted_people="yes", h_safety_plan="yes")
    elif kind == "bad":
        out.update(n_cue_present="yes", n_acknowledged="no", n_dismissed="yes", n_named_kindly="yes",
                   a_asked="no", a_method_detail="yes",  # off the path after a_asked=no
                   h_offered="no", c_sensational="yes")
    elif kind == "calm":
        out.update(c_sensational="yes")
    return out


def reply(answers_: dict[str, str]) -> str:
    """A judge reply carrying the request's answer code (``<NONCE>``, filled in by ``fake/script``)."""
    return json.dumps({"answer_code": "<NONCE>", **answers_})


def uniform_reply(value: int) -> str:
    """A MindEval judge reply giving every one of its five axes ``value`` (answer code filled in by ``fake/script``)."""
    return reply(dict.fromkeys(AXES, value))


def scripted_run(out: Path, name: str, kinds: list[str], clinician: str = "fake/echo",
                 target: Path = RISK_CHECKLIST, patient: str = "fake/echo", extra: tuple[str, ...] = ()) -> Path:
    """A ``mindeval run`` of the example target whose judge answers ``kinds[i]`` for its ``i``-th
    conversation (profile order; with ``--repeats``, each profile's repeats in turn)."""
    model = fake.script(name, [reply(answers(k)) for k in kinds])
    assert main(["run", "--target", str(target), "--clinician", clinician, "--patient", patient,
                 "--judge", model, "--turns", "1", "--concurrency", "1", "--out", str(out), "--quiet", *extra]) == 0
    return out
