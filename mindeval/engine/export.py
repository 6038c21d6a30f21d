"""A run's outputs: interactions.jsonl, judgments.jsonl and the summary's figures (:func:`export_run`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..judging.protocols import protocol_label
from ..judging.refusals import refusal_counts
from ..records import (
    INTERACTIONS_FILE,
    JUDGMENTS_FILE,
    BenchmarkConfig,
    InteractionRecord,
    JudgmentRecord,
)
from ..store.db import Database
from ..store.runs import RunStore
from ..targets.guidelines import Guidelines

if TYPE_CHECKING:
    from ..scoring.coverage import Coverage


def export_run(db: Database, run_id: str, out: Path, config: BenchmarkConfig,
               guidelines: Guidelines | None = None, conversations: str | None = None) -> dict[str, Any]:
    """Write interactions.jsonl and judgments.jsonl; return the summary (without call counts).

    ``conversations``: the run holding the conversations when it is not ``run_id`` (a run that
    re-judges them). Means are per axis code of the target; a target with harm levels adds ``harm``.
    """
    store = RunStore(db, run_id)
    sim = store if conversations in (None, run_id) else RunStore(db, conversations)
    interactions = sim.interactions()
    target = config.target
    judgments = store.judgments(config.judge_protocol, target.name, partial=target.partial_judging)
    by_id = {i.id: i for i in interactions}
    InteractionRecord.write(out / INTERACTIONS_FILE, [InteractionRecord.from_interaction(i) for i in interactions])
    JudgmentRecord.write(out / JUDGMENTS_FILE, [
        JudgmentRecord.from_judgment(
            j, profile_id=by_id[j.interaction_id].profile.id, model=by_id[j.interaction_id].clinician_model,
            severe=by_id[j.interaction_id].profile.severe, n_turns=max(0, len(by_id[j.interaction_id].turns) - 1),
            target=target,
        )
        for j in judgments if j.interaction_id in by_id
    ])
    from ..scoring import Unit, score_run, summary_blocks  # numpy: loaded when the run is scored

    scored = score_run([Unit.of(i) for i in interactions], judgments, samples=config.judge_samples,
                       sessions=target.sessions, target=target)
    means = scored.means()
    extra = summary_blocks(scored)
    return {
        "run_id": run_id,
        "config_hash": config.hash(),
        "clinician": config.clinician.model,
        "patient": config.patient.model,
        "judge": config.judge.model,
        "judge_protocol": config.judge_protocol,
        "judge_protocol_label": protocol_label(config.judge_protocol, config.transcript_format),
        **({"transcript_format": "authors", "hardened": False} if config.transcript_format == "authors" else {}),
        **extra,
        "prompts": {k: v.ref for k, v in config.prompts.items()},
        "guidelines_version": config.guidelines_version,
        "turns": config.turns,
        "seed": config.seed,
        "means": means,
        **means,
        "n_profiles": len(config.profile_ids),
        **_units(config),
        "n_interactions": len(interactions),
        "n_complete": sum(i.status == "complete" for i in interactions),
        "n_failed_interactions": sum(i.status == "failed" for i in interactions),
        "n_judged": sum(j.parse_status == "ok" for j in judgments),
        "n_failed_judgments": sum(j.parse_status == "failed" for j in judgments),
        **refusal_counts(judgments),
        "judge_samples": config.judge_samples,
        "n_means_over": len(scored.conversations),
        "n_partly_judged": scored.n_partly_judged, **_partial(scored.coverage),
        "tokens": store.usage_by_role() if sim is store else dict(sorted({
            **{r: v for r, v in sim.usage_by_role().items() if r != "judge"},
            **{r: v for r, v in store.usage_by_role().items() if r == "judge"}}.items())),
        "package_version": __version__,
    }


def _partial(cov: Coverage | None) -> dict[str, Any]:
    """``partial_judging`` (the target's partial rule only): coverage and refusal rate, with n."""
    return {} if cov is None else {"partial_judging": {"rule": "partial: every judged unit counts", **cov.block()}}


def _units(config: BenchmarkConfig) -> dict[str, int]:
    """The summary's unit counts: with --repeats, the benchmark's conversations (profiles x repeats);
    with sessions > 1, its member x session pairs (one interaction per session). Absent without."""
    members = len(config.profile_ids) * config.repeats
    out = {"repeats": config.repeats, "n_conversations": members} if config.repeats > 1 else {}
    if (n := config.target.sessions) > 1:
        out.update(sessions=n, n_members=members, n_conversations=members * n)
    return out


def is_complete(summary: dict[str, Any]) -> bool:
    """Every profile simulated and judged, nothing failed, the run not stopped. Under the partial rule
    (``partial_judging``) a refused unit is left out, not missing: every conversation judged suffices."""
    if (partial := summary.get("partial_judging")) is not None:
        return (not summary.get("stopped") and summary["n_failed_interactions"] == 0
                and partial["conversations_asked"] == n_conversations(summary))
    return (not summary.get("stopped") and summary["n_failed_interactions"] == 0
            and summary["n_failed_judgments"] == 0 and summary["n_means_over"] == n_conversations(summary))


def n_conversations(summary: dict[str, Any]) -> int:
    """The conversations of the run's benchmark: one per profile and repeat."""
    return summary.get("n_conversations", summary["n_profiles"])
