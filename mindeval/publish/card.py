"""The dataset card (``README.md``) of a Hugging Face export: what the files hold, where every
run came from, and what the scores measure and do not (the honest-use statement)."""

from __future__ import annotations

from .source import PublishedRun

# The configurations the card declares (``datasets.load_dataset(DIR, NAME)``) and their files.
CONFIGS = {"runs": "runs.jsonl", "scores": "scores.jsonl", "transcripts": "transcripts.jsonl",
           "judgments": "judgments.jsonl", "corrections": "corrections.jsonl"}

HONEST_USE = """\
**What these scores measure.** How one LLM judge ({judges}) rated the clinician model's side of
multi-turn conversations with an LLM-simulated patient, played from written patient profiles, on
the target's dimensions ({dimensions}){scale}, following the benchmark's rating guidelines. Each
mean comes with a 95% bootstrap interval over the conversations scored (n); a harm share (targets
with harm levels) with its 95% Wilson interval.

**What they do not measure.** They are not evidence of clinical efficacy, of safety with real
people in distress, or of fitness to deploy in mental-health care. The patients are simulated and
the scores are a model's judgment, whose agreement with human clinicians is limited and should be
checked (`metaeval compare`). Scores are comparable only between runs with the same judge, judge
prompt, patient model, profiles and turns; with few conversations the intervals are wide, and
systems whose intervals overlap are not shown to differ. The transcripts are synthetic and contain
simulated descriptions of mental-health crises; they are not advice."""


def _yaml_configs() -> str:
    lines = ["configs:"]
    for i, (name, file) in enumerate(CONFIGS.items()):
        lines += [f"- config_name: {name}", *(["  default: true"] if i == 0 else []),
                  "  data_files:", "  - split: train", f"    path: {file}"]
    return "\n".join(lines)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def card(runs: list[PublishedRun]) -> str:
    """The README.md of an export of ``runs``."""
    judges = ", ".join(dict.fromkeys(r.judge for r in runs))
    criteria = list(dict.fromkeys(s.criterion for r in runs for s in r.scores))
    dims = ", ".join(c for c in criteria if c not in ("average", "harm_share"))
    lo, hi = runs[0].scale_min, runs[0].scale_max
    scale = f", {runs[0].scale_kind} scale {lo:g}-{hi:g}" if lo is not None and hi is not None else ""
    targets = ", ".join(dict.fromkeys(f"{r.target} {r.target_version}".strip() for r in runs))
    header = "\n".join(["---", "pretty_name: MindEval runs", "language:", "- en", "tags:", "- mindeval",
                        "- llm-as-a-judge", "- mental-health", "- synthetic", "size_categories:", "- n<1K",
                        _yaml_configs(), "---", ""])
    body = [f"# MindEval runs: {len(runs)} run(s), target {targets}", "",
            "Exported with `mindeval export --format hf` from the run directories listed below. Load a "
            "configuration with `datasets.load_dataset(\"<this folder>\", \"scores\")` (or `runs`, "
            "`transcripts`, `judgments`).", "",
            "## Honest use", "", HONEST_USE.format(judges=judges, dimensions=dims, scale=scale), "",
            "## Files", "",
            "| configuration | file | one row per |", "|---|---|---|",
            "| runs | runs.jsonl | run: ids, models, judge protocol, the full `config.json` and `summary.json` (JSON text) |",
            "| scores | scores.jsonl | run and criterion: mean (or harm share), 95% interval and its method, n |",
            "| transcripts | transcripts.jsonl | conversation: profile, messages, status |",
            "| judgments | judgments.jsonl | judge sample: scores, parse status, the judge's raw reply |",
            "| corrections | corrections.jsonl | human correction of a judge value: where, from, to, who, when, why |",
            "",
            "## Provenance", "",
            "| run id | clinician | patient | judge | judge protocol (prompt) | turns | seed | scored / benchmark "
            "| mindeval | config hash |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        n = r.scores[0].n if r.scores else 0
        body.append("| " + " | ".join(_cell(v) for v in (
            r.run_id, r.clinician, r.patient, r.judge, f"{r.judge_protocol} ({r.judge_prompt})", r.turns, r.seed,
            f"{n}/{r.n_benchmark}", r.package_version, r.config_hash[:12])) + " |")
    body += ["", "## Scores (mean [95% interval], n)", "",
             "| run id | clinician | " + " | ".join(criteria) + " |", "|---|---|" + "---|" * len(criteria)]
    for r in runs:
        mine = {s.criterion: s for s in r.scores}
        body.append(f"| {_cell(r.run_id)} | {_cell(r.clinician)} | " + " | ".join(
            f"{s.mean:.2f} [{s.ci_low:.2f}, {s.ci_high:.2f}], n={s.n}" if (s := mine.get(c)) else "-"
            for c in criteria) + " |")
    body += corrections_section(runs)
    redacted = sum(r.redacted for r in runs)
    body += ["", f"Secrets: API keys and credentials never enter an export; {redacted} value(s) that looked like "
             "one were replaced by `[redacted]` or left out.", ""]
    return header + "\n".join(body)


def corrections_section(runs: list[PublishedRun]) -> list[str]:
    """The card's list of reviewers' corrections with their provenance (the scores above are the judge's)."""
    rows = [c for r in runs for c in r.corrections]
    out = ["", "## Human corrections", "",
           f"{len(rows)} correction(s) of judge values by reviewers (`mindeval correct`, the run viewer or the app). "
           "The scores above are the judge's own; `mindeval leaderboard --with-corrections` applies the latest "
           "correction per value. The judgments file holds the judge's original values."]
    if rows:
        out += ["", "| run id | interaction | sample | unit | ref | axis | from | to | who | who source | when (UTC) | why |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        keys = ("run_id", "interaction_id", "sample", "unit", "ref", "axis", "from", "to", "who", "who_source", "at",
                "reason")
        out += ["| " + " | ".join(_cell(c.get(k) or "not recorded" if k == "who_source" else c[k]) for k in keys) + " |"
                for c in rows]
    return out
