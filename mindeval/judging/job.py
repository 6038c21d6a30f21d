"""A judge job: everything the judge of one run needs, in one object the judge loop takes.

``mindeval run``, ``mindeval judge`` (re-judging stored conversations) and ``metaeval judge``
each build one :class:`JudgeJob` and hand it, with each conversation as a :class:`Transcript`,
to :func:`mindeval.judging.judge.judge_sample`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..llm.gateway import ModelSpec
from ..records import Profile, TargetInfo
from ..store.calls import CallLog
from .render import JudgePrompt


@dataclass(frozen=True)
class Transcript:
    """One conversation to judge: its id (the stored calls' and judgments' key), profile and turns.
    ``memory``: one session of a multi-session conversation, the notes its clinician started with
    (the judge template's ${memory}); ``clinician_system``: the system prompt the clinician was sent
    for it (``${clinician_system}``)."""

    interaction_id: str
    profile: Profile
    messages: Sequence[dict[str, str]]
    memory: str | None = None
    clinician_system: str | None = None

    def context(self) -> dict[str, str | None]:
        """What the clinician was given, as the judge template's ``${memory}`` and ``${clinician_system}``
        (:func:`~mindeval.judging.render.build_judge_messages`): the one reading of a run's judging,
        its ``--dry-run`` estimate and ``metaeval judge``."""
        return {"memory": self.memory, "clinician_system": self.clinician_system}


@dataclass
class JudgeJob:
    """The judge of one run.

    ``log``: the run's call log (its store holds the judgments and answer codes); ``target``:
    the run's target block (its name is recorded on every judgment); ``samples``: judgments per conversation;
    ``retries``: attempts per judgment round; ``labels``: per profile id the label values the
    judge template names. ``rounds`` is read from the store when the job is made: per
    ``(interaction, judge model, sample)`` the stored status and round, so a resumed run
    judges only what is missing (or got no judge reply at all). A refused judgment is final: it
    is judged again, as its next round, only with ``retry_refused`` (``--retry-refused``).
    """

    log: CallLog
    spec: ModelSpec
    prompt: JudgePrompt
    target: TargetInfo
    samples: int = 1
    retries: int = 3
    seed: int = 0
    labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    retry_refused: bool = False
    rounds: dict[tuple[str, str, int], tuple[str, int]] = field(init=False)

    def __post_init__(self) -> None:
        self.rounds = self.log.store.judgment_rounds()

    def pending(self, interaction_id: str, sample: int) -> bool:
        """True when this sample of the conversation has no stored judgment, a failed round with no
        judge reply (only failed calls: ``unanswered``), or a refused one and ``retry_refused``."""
        status = self.rounds.get((interaction_id, self.spec.model, sample), ("",))[0]
        return status in ("", "unanswered") or (status == "failed" and self.retry_refused)
