"""``${clinician_system}``: the judge is shown the clinician's system prompt only as it was sent.

A turn's call record keeps the SHA-256 of the system prompt it was sent with (not a copy:
:mod:`mindeval.simulate`), so before a judge sees the prompt the run renders for a session, the
prompt is checked against every stored hash of that session's clinician calls: a judge never
reads a prompt the clinician was not given.
"""

from __future__ import annotations

import hashlib

from ..errors import MindEvalError
from ..prompts import PromptTemplate
from ..store.calls import CallLog

FIELD = "clinician_system"


def check_sent(log: CallLog, iid: str, system: str, template: PromptTemplate) -> None:
    """Raise when ``template`` names ``${clinician_system}`` and ``system`` is not the prompt every
    stored clinician call of interaction ``iid`` was sent (no call stored: nothing to compare)."""
    if FIELD not in template.fields:
        return
    sent = log.store.system_sha256s(iid, "clinician")
    mine = hashlib.sha256(system.encode()).hexdigest()
    if sent - {mine}:
        raise MindEvalError(
            f"conversation {iid}: the clinician's system prompt stored with its calls differs from the one "
            "rendered now, so the judge cannot be shown it as sent (were the templates or notes changed?)",
            path=template.source, field=FIELD)
