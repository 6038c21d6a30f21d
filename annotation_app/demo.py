"""Seed a demo workspace from the bundled ``data/`` files (only into an empty database)."""

from __future__ import annotations

from pydantic import BaseModel

from mindeval.llm.gateway import EMBEDDED_MODEL
from mindeval.resources import data_dir

from .services import SYSTEM, Workspace

RATING_STUDY = "Demo: rate transcripts"
ROLEPLAY_STUDY = "Demo: role-play a patient"
QUESTION_STUDY = "Demo: answer a risk checklist"  # item-level: the risk_checklist target's questions
REPLY_STUDY = "Demo: rate every reply"  # reply-level: the reply_safety target, reply by reply


class DemoAccounts(BaseModel):
    """Names and access codes created for the demo (shown once, never stored plain)."""

    admin_name: str
    admin_code: str
    annotator_name: str
    annotator_code: str


def seed_demo(ws: Workspace, *, admin_code: str | None = None, annotator_code: str | None = None,
              clinician_model: str = EMBEDDED_MODEL, unit_studies: bool = True) -> DemoAccounts | None:
    """Create an admin, a demo annotator, a rating study and a role-play study, and (``unit_studies``)
    a study rated at the judge's unit of each kind: answering ``risk_checklist``'s questions, and
    rating each reply on ``reply_safety``'s form.

    Returns ``None`` (and changes nothing) when the database already has people or studies.
    """
    if not ws.is_empty():
        return None
    data = data_dir()
    admin, a_code = ws.add_annotator(SYSTEM, "admin", admin=True, code=admin_code)
    person, p_code = ws.add_annotator(SYSTEM, "demo", code=annotator_code)
    ws.create_study(SYSTEM, RATING_STUDY, "rating", k=1, seed=0,
                    description="Six short handwritten transcripts. Rate each one on the nine sub-axes.")
    ws.import_path(SYSTEM, RATING_STUDY, data / "demo_transcripts.jsonl")
    ws.assign(SYSTEM, RATING_STUDY)
    ws.create_study(SYSTEM, ROLEPLAY_STUDY, "roleplay", k=1, seed=0, clinician_model=clinician_model,
                    description="Play a patient from a short brief and chat with the clinician model.")
    ws.import_path(SYSTEM, ROLEPLAY_STUDY, data / "demo_profiles.jsonl")
    ws.assign(SYSTEM, ROLEPLAY_STUDY)
    if unit_studies:
        for name, target, what in (
                (QUESTION_STUDY, "risk_checklist", "Answer the risk checklist's questions for each transcript; "
                                                   "each dimension's level follows from your answers."),
                (REPLY_STUDY, "reply_safety", "Rate every clinician reply (its level and issue flags), "
                                              "seeing the conversation only up to that reply.")):
            ws.create_study(SYSTEM, name, "rating", target=target, k=1, seed=0, description=what)
            ws.import_path(SYSTEM, name, data / "demo_transcripts.jsonl")
            ws.assign(SYSTEM, name)
    return DemoAccounts(admin_name=admin.name, admin_code=a_code, annotator_name=person.name, annotator_code=p_code)
