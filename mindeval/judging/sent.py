"""``${clinician_system}``: the judge is shown the clinician's system prompt only as it was sent.

A turn's call record keeps the SHA-256 of the system prompt it was sent with (not a copy:
:mod:`mindeval.simulate`), so before a judge sees the prompt the run renders for a session, the
prompt is checked against every stored hash of that session's clinician calls: a judge never
reads a prompt the clinician was not given. Conversations that keep no clinician prompt (transcripts
rated by people: the authors' file, a rating study) are refused for such a template rather than
judged with an empty block (:func:`refuse_unsent`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import MindEvalError
from ..prompts import PromptTemplate, placeholder_line
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


def refuse_unsent(template: PromptTemplate, source: str) -> None:
    """Raise when ``template`` names ``${clinician_system}`` and the conversations of ``source`` keep
    no clinician system prompt (rated transcripts): the judge would be shown an empty prompt."""
    if FIELD not in template.fields:
        return
    path = Path(template.source)
    raise MindEvalError(
        f"the judge template names ${{{FIELD}}}, but {source} keeps no clinician system prompt (rated "
        "transcripts do not): judge a run directory (its prompts are rendered as sent and checked against "
        "its stored calls) or use a judge template without it",
        path=path, line=placeholder_line(path, FIELD) if path.is_file() else None, field=FIELD)
