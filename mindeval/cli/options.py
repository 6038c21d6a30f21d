"""The options ``mindeval`` and ``metaeval`` share, under the same names: model roles, retries,
the target, the judge. Both command lines import them from here (never from each other's commands)."""

from __future__ import annotations

import argparse

from ..config import (
    DEFAULT_FEWSHOT_K,
    DEFAULT_JUDGE_RETRIES,
    DEFAULT_JUDGE_SAMPLES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    DEFAULT_RETRY_BUDGET_S,
    DEFAULT_TIMEOUT_S,
    JUDGE_PROTOCOL,
)
from ..errors import MindEvalError
from ..profiles.official import release_arg
from ..records import DEFAULT_TARGET, PROTOCOLS, ROLES
from ..sampling import sampling_arg
from . import at_least

MODEL_OPTIONS = ("temperature", "max-tokens", "reasoning-effort", "api-base")


def add_role_options(parser: argparse.ArgumentParser, roles=ROLES, *, required: bool = False,
                     plain_aliases: bool = False) -> None:
    """``--ROLE MODEL``, ``--ROLE-temperature/-max-tokens/-reasoning-effort/-api-base`` and
    the call settings ``--ROLE-timeout/-rpm/-tpm``.

    ``plain_aliases`` also accepts the earlier ``--temperature`` etc. (hidden) for a single role.
    """
    for role in roles:
        g = parser.add_argument_group(f"{role} model")
        g.add_argument(f"--{role}", default=None if required else DEFAULT_MODEL, required=required,
                       metavar="MODEL", help=f"litellm model string for the {role}")
        g.add_argument(f"--{role}-temperature", type=sampling_arg(f"--{role}-temperature", "temperature"),
                       default=None, metavar="T", help="sampling temperature, 0 to 2")
        g.add_argument(f"--{role}-max-tokens", type=int, default=None, metavar="N")
        g.add_argument(f"--{role}-reasoning-effort", default=None, metavar="LEVEL",
                       help="low | medium | high (providers that support it)")
        g.add_argument(f"--{role}-api-base", default=None, metavar="URL",
                       help="OpenAI-compatible server URL (e.g. http://127.0.0.1:8000/v1)")
        for name in MODEL_OPTIONS[:-1] if plain_aliases else ():  # --api-base: add_api_base_option
            g.add_argument(f"--{name}", dest=f"{role}_{name.replace('-', '_')}", default=argparse.SUPPRESS,
                           type=sampling_arg("--temperature", "temperature") if name == "temperature" else int if name == "max-tokens" else str,
                           help=argparse.SUPPRESS)
        g.add_argument(f"--{role}-timeout", type=seconds(f"--{role}-timeout"), default=DEFAULT_TIMEOUT_S[role],
                       metavar="S", help=f"seconds per request before it is retried (default {DEFAULT_TIMEOUT_S[role]:g})")
        g.add_argument(f"--{role}-rpm", type=at_least(f"--{role}-rpm"), default=None, metavar="N",
                       help="at most N requests per minute for this role (shared by all workers)")
        g.add_argument(f"--{role}-tpm", type=at_least(f"--{role}-tpm"), default=None, metavar="N",
                       help="at most N tokens per minute for this role (shared by all workers)")


def add_api_base_option(p: argparse.ArgumentParser) -> None:
    """``--api-base URL``: the OpenAI-compatible server of every role without its own ``--ROLE-api-base``."""
    p.add_argument("--api-base", default=None, metavar="URL",
                   help="OpenAI-compatible server of every role (e.g. http://127.0.0.1:8000/v1); a role's own "
                   "--ROLE-api-base wins; no API key is needed for it (one set in the environment is sent)")


def add_overwrite_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite", action="store_true",
                   help="run even where --out holds a run's outputs without its store run.db (or with another "
                   "run's): their calls are bought again and the outputs replaced")


def add_cost_options(p: argparse.ArgumentParser, roles: str = "patient 80, clinician 150, judge 120") -> None:
    """``--max-cost``, ``--dry-run`` and ``--assume-reply-tokens`` (``mindeval run``/``judge``, ``metaeval judge``)."""
    p.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="stop cleanly (resumable) before the run's spend could exceed USD (default: no cap)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the number of calls and estimated tokens and dollars per role; call no model")
    p.add_argument("--assume-reply-tokens", type=role_tokens, action="append", default=[], metavar="ROLE=N",
                   help=f"for --dry-run: the reply length of ROLE in tokens (default {roles}; repeatable)")


def role_tokens(text: str) -> tuple[str, int]:
    """``ROLE=N`` of ``--assume-reply-tokens``."""
    role, _, n = text.partition("=")
    if role not in ("patient", "clinician", "judge") or not n.isdigit() or int(n) < 1:
        raise MindEvalError(f"expected ROLE=N with ROLE patient, clinician or judge and N >= 1, got {text!r}",
                            field="--assume-reply-tokens")
    return role, int(n)


def add_retry_options(parser: argparse.ArgumentParser) -> None:
    """``--max-retries`` and ``--retry-budget-s`` for transient provider errors."""
    g = parser.add_argument_group("retries (429, 408, 5xx, connection errors, timeouts)")
    g.add_argument("--max-retries", type=at_least("--max-retries", 0), default=DEFAULT_MAX_RETRIES, metavar="N",
                   help=f"retries per call after the first attempt (default {DEFAULT_MAX_RETRIES})")
    g.add_argument("--retry-budget-s", type=seconds("--retry-budget-s"), default=DEFAULT_RETRY_BUDGET_S, metavar="S",
                   help=f"total seconds one call may spend on attempts and waits (default {DEFAULT_RETRY_BUDGET_S:g})")


def options_of(args: argparse.Namespace, **given):
    """The :class:`~mindeval.run_options.RunOptions` of a command line: each field from the option of
    the same name (a role from ``--ROLE`` and its ``--ROLE-*`` settings); a field the command has
    no option for keeps its default. ``given`` overrides."""
    from ..run_options import ROLE_FIELDS, RunOptions

    a = vars(args)
    data = {name: a[name] for name in RunOptions.model_fields if name not in ROLE_FIELDS and a.get(name) is not None}
    data.update({role: role_spec(args, role) for role in ROLE_FIELDS if a.get(role) is not None})
    if "assume_reply_tokens" in data:
        data["assume_reply_tokens"] = dict(data["assume_reply_tokens"])
    return RunOptions.model_validate({"out": ".", **data, **given})


def seconds(option: str):
    """An argparse ``type``: a positive number of seconds."""

    def parse(text: str) -> float:
        value = float(text)
        if not value > 0:
            raise MindEvalError(f"must be more than 0 seconds, got {text}", field=option)
        return value

    parse.__name__ = "float"
    return parse


def role_spec(args: argparse.Namespace, role: str):
    from ..llm.gateway import ModelSpec

    a = vars(args)
    return ModelSpec(
        model=a[role], temperature=a[f"{role}_temperature"], max_tokens=a[f"{role}_max_tokens"],
        reasoning_effort=a[f"{role}_reasoning_effort"], api_base=a[f"{role}_api_base"],
        timeout_s=a.get(f"{role}_timeout"), rpm=a.get(f"{role}_rpm"), tpm=a.get(f"{role}_tpm"),
    )


def add_target_option(p: argparse.ArgumentParser) -> None:
    """``--target NAME|PATH`` (``mindeval run``, ``metaeval judge``, ``mindeval app admin create-study``)."""
    p.add_argument("--target", default=DEFAULT_TARGET, metavar="NAME|PATH",
                   help="the benchmark: a built-in target (`mindeval targets list`) or a target folder")


def add_judge_options(p: argparse.ArgumentParser, *, fewshot_file_help: str = "") -> None:
    """The judge options ``mindeval run`` and ``metaeval judge`` share, under the same names."""
    p.add_argument("--judge-retries", type=at_least("--judge-retries"), default=DEFAULT_JUDGE_RETRIES,
                   help="attempts for an unparseable judge reply before it is recorded as failed")
    p.add_argument("--judge-samples", type=at_least("--judge-samples"), default=DEFAULT_JUDGE_SAMPLES,
                   help="judge samples per interaction (30 in the paper's meta-evaluation)")
    p.add_argument("--retry-refused", action="store_true",
                   help="re-judge the stored judgments that failed (refused): each as a new round with a new "
                   "answer code; every round is kept and counted (summary, leaderboard, viewer). Without it a "
                   "refused judgment is final and a re-run judges only what is missing")
    p.add_argument("--fewshot-file", default=None, metavar="FILE", type=release_arg("human_annotations.jsonl"),
                   help="annotated file (authors' human_annotations.jsonl schema; 'official': the downloaded one) "
                   "to draw few-shot examples from"
                   + fewshot_file_help)
    p.add_argument("--fewshot-k", type=at_least("--fewshot-k", 0), default=DEFAULT_FEWSHOT_K, metavar="K",
                   help="few-shot examples shown to the judge: annotated interactions drawn (seeded) from the few-shot "
                   "file, with the annotators' mean scores; an example is never itself judged")
    p.add_argument("--judge-protocol", choices=PROTOCOLS, default=JUDGE_PROTOCOL,
                   help="mindeval (default): integer JSON scores; paper: the authors' few-shot examples with our "
                   "instructions (their 5 rated interactions from human_annotations.jsonl, `Name: score` replies, "
                   "fractional scores, high reasoning; our instructions, rubric wording and transcript layout, so "
                   "not the authors' judge)")
    # Earlier names, kept working but not shown.
    p.add_argument("--judge-fewshot", dest="fewshot_file", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
