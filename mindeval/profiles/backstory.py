"""Backstory generation: the backstory prompt (paper Figs. 5-6) through any litellm model.

Every reply is checked by :func:`check_backstory` (exactly 4 paragraphs, second
person, prose without headings or lists, not cut off). A reply that breaks a rule
is sent back with the problems listed, up to ``retries`` attempts in all; a profile
that still fails is recorded as failed, never filled in. All calls go through
:class:`~mindeval.store.CallLog`, so re-running the same command reuses every stored
reply and makes no repeated calls.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .. import __version__
from ..errors import MindEvalError, ModelCallError
from ..files import atomic_write, sha256_file, write_json
from ..llm.gateway import ModelSpec, check_model_string
from ..prompts import PromptTemplate, load_template, render_backstory
from ..records import Profile, load_profiles
from ..run_config import spec_with_defaults
from ..rundir_guard import check_store, run_dir_lock
from ..store import CallLog, redact_url, sqlite_url
from ..store.calls import logged_run
from ..workers import check_concurrency, run_pool
from .sampler import profiles_jsonl, sidecar

DEFAULT_TEMPLATE = "backstory/default"
DEFAULT_RETRIES = 3
PARAGRAPHS = 4
MIN_PARAGRAPH_WORDS = 25
ROLE = "backstory"

# ------------------------------------------------------------------ validation

_SECOND = re.compile(r"\b(you|your|yours|yourself|yourselves)\b", re.I)
_FIRST = re.compile(r"\bI\b|\b(?i:me|my|mine|myself)\b")
_THIRD = re.compile(r"\b(he|she|him|his|her|hers|himself|herself)\b", re.I)
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”")
_LIST_ITEM = re.compile(r"^\s*([-*•+–]|\d{1,2}[.)])\s+")
_MD_HEADING = re.compile(r"^\s*#{1,6}\s")
_BOLD_LINE = re.compile(r"^\s*(\*\*|__)[^*_]+(\*\*|__)\s*:?\s*$")
_LABEL = re.compile(
    r"^\s*((paragraph|part|section)\s*\d+|(patient\s+|psychosocial\s+)?(profile|backstory|narrative))\s*[:.)\-–]",
    re.I,
)
_PREAMBLE = re.compile(r"^\s*(here is|here's|sure|certainly|of course|below is)\b", re.I)
_ENDS_SENTENCE = re.compile(r"[.!?…][\"'”’)]*\s*$")


def split_paragraphs(text: str) -> list[str]:
    """Blocks separated by blank lines; a reply without blank lines is split on single newlines."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]
    if len(blocks) == 1 and "\n" in blocks[0]:
        blocks = [ln.strip() for ln in blocks[0].splitlines() if ln.strip()]
    return blocks


def check_backstory(text: str, name: str | None = None) -> tuple[list[str], list[str]]:
    """Return ``(paragraphs, problems)``; the backstory is valid when ``problems`` is empty."""
    problems: list[str] = []
    paragraphs = split_paragraphs(text)
    if len(paragraphs) != PARAGRAPHS:
        problems.append(f"it has {len(paragraphs)} paragraph(s), not exactly {PARAGRAPHS} "
                        "separated by blank lines")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if any(_LIST_ITEM.match(ln) for ln in lines):
        problems.append("it contains a list (lines starting with '-', '*' or a number)")
    if any(_MD_HEADING.match(ln) or _BOLD_LINE.match(ln) or _LABEL.match(ln) for ln in lines) or any(
        len(p.split()) <= 8 and not _ENDS_SENTENCE.search(p) for p in paragraphs
    ):
        problems.append("it contains a heading, title or label")
    if paragraphs and _PREAMBLE.match(paragraphs[0]):
        problems.append("it starts with a comment about the task instead of the profile itself")
    short = [i + 1 for i, p in enumerate(paragraphs) if len(p.split()) < MIN_PARAGRAPH_WORDS]
    if short and len(paragraphs) <= PARAGRAPHS + 2:
        problems.append(f"paragraph(s) {', '.join(map(str, short))} have fewer than "
                        f"{MIN_PARAGRAPH_WORDS} words")
    unquoted = _QUOTED.sub(" ", text)
    first = len(_FIRST.findall(unquoted))
    second = len(_SECOND.findall(unquoted))
    third = len(_THIRD.findall(unquoted))
    no_you = [i + 1 for i, p in enumerate(paragraphs) if not _SECOND.search(p)]
    if first:
        problems.append(f"it uses the first person ('I', 'my') {first} time(s); write in the second person")
    if no_you:
        problems.append(f"paragraph(s) {', '.join(map(str, no_you))} are not in the second person ('you')")
    elif third > second:
        problems.append("it reads as third person ('he', 'she') rather than second person ('you')")
    if name and len(re.findall(rf"\b{re.escape(name)}\b", unquoted)) >= 3:
        problems.append(f"it keeps calling the person '{name}'; address them as 'you'")
    if paragraphs and not _ENDS_SENTENCE.search(paragraphs[-1]):
        problems.append("it stops mid-sentence (the reply looks cut off)")
    return paragraphs, problems


def feedback_message(problems: list[str]) -> str:
    listed = "; ".join(problems)
    return (
        f"That profile does not follow the output rules: {listed}. Write the whole profile again: "
        f"exactly {PARAGRAPHS} paragraphs of continuous prose separated by blank lines, addressed to "
        "the person as 'you', with no title, headings, labels, lists or comments."
    )


# ------------------------------------------------------------------ generation


class BackstoryOutcome(BaseModel):
    """What happened to one profile."""

    index: int
    profile_id: str
    name: str
    status: Literal["ok", "failed", "kept"]
    attempts: int = 0
    problems: list[str] = []
    error: str | None = None
    narrative: str | None = None
    thinking_trace: str | None = None
    last_reply: str | None = None
    calls_made: int = 0
    calls_reused: int = 0


async def generate_one(
    log: CallLog, spec: ModelSpec, tpl: PromptTemplate, profile: Profile, index: int, *,
    retries: int = DEFAULT_RETRIES, seed: int | None = None,
) -> BackstoryOutcome:
    """Generate and validate one backstory, retrying with feedback up to ``retries`` attempts."""
    out = BackstoryOutcome(index=index, profile_id=profile.id, name=profile.name, status="failed")
    prompt = {"role": "user", "content": render_backstory(tpl, profile)}
    messages = [prompt]
    for attempt in range(1, retries + 1):
        out.attempts = attempt
        try:
            call = await log.call(ROLE, spec, messages, seed=seed, tag=f"backstory:{profile.id}:{attempt}")
        except ModelCallError as exc:
            out.error = str(exc)
            return out
        if call.reused:
            out.calls_reused += 1
        else:
            out.calls_made += 1
        text = call.completion.text
        paragraphs, problems = check_backstory(text, profile.name)
        out.last_reply, out.problems = text, problems
        if not problems:
            out.status = "ok"
            out.narrative = "\n\n".join(paragraphs)
            out.thinking_trace = call.completion.reasoning
            return out
        messages = [prompt, {"role": "assistant", "content": text},
                    {"role": "user", "content": feedback_message(problems)}]
    return out


class BackstoryOptions(BaseModel):
    """How backstories are generated: the prompt, the attempts per profile, the seed, how many
    profiles at once, whether existing backstories are written again, and the progress bar."""

    template: str | PromptTemplate = DEFAULT_TEMPLATE
    retries: int = DEFAULT_RETRIES
    seed: int | None = 0
    concurrency: int = 1
    regenerate: bool = False
    progress: bool = False

    def prompt(self) -> PromptTemplate:
        """The backstory template (loaded when ``template`` names one)."""
        t = self.template
        return t if isinstance(t, PromptTemplate) else load_template(t, kind="backstory")


def generate_backstories(
    profiles: list[Profile], spec: ModelSpec, log: CallLog, options: BackstoryOptions, *,
    on_done: Callable[[BackstoryOutcome], None] | None = None,
) -> list[BackstoryOutcome]:
    """Backstories for ``profiles`` (input order); profiles that have one are kept unless ``options.regenerate``."""
    if options.retries < 1:
        raise MindEvalError("retries must be at least 1", field="--retries")
    tpl = options.prompt()
    results: dict[int, BackstoryOutcome] = {}
    todo: list[int] = []
    for i, p in enumerate(profiles):
        if p.member_narrative.strip() and not options.regenerate:
            results[i] = BackstoryOutcome(index=i, profile_id=p.id, name=p.name, status="kept",
                                          narrative=p.member_narrative,
                                          thinking_trace=p.member_narrative_thinking_trace)
            if on_done:
                on_done(results[i])
        else:
            todo.append(i)

    async def work(i: int) -> None:
        results[i] = await generate_one(log, spec, tpl, profiles[i], i, retries=options.retries, seed=options.seed)
        if on_done:
            on_done(results[i])

    run_pool(todo, work, concurrency=options.concurrency, desc="backstories", progress=options.progress)
    return [results[i] for i in range(len(profiles))]


# ------------------------------------------------------------------ files


class GenerationReport(BaseModel):
    source: str
    output: str
    failures_file: str | None
    db: str
    run_id: str
    resumed: bool
    n_profiles: int
    n_ok: int
    n_kept: int
    n_failed: int
    calls_made: int
    calls_reused: int
    calls_failed: int
    elapsed_s: float
    outcomes: list[BackstoryOutcome]


def run_config(spec: ModelSpec, tpl: PromptTemplate, seed: int | None) -> dict[str, Any]:
    """What identifies a backstory run (retries are not part of it: raising them resumes)."""
    return {"kind": ROLE, "model": spec.model_dump(mode="json"), "prompt": {"ref": tpl.ref, "sha256": tpl.sha256},
            "seed": seed}


def generate_file(
    source: str | Path, output: str | Path, spec: ModelSpec, options: BackstoryOptions | None = None, *,
    db_url: str | None = None, on_done: Callable[[BackstoryOutcome], None] | None = None, new_run: bool = False,
    overwrite: bool = False,
) -> GenerationReport:
    """Read profiles, generate backstories, write ``output`` plus its sidecar files.

    ``output`` receives the profiles whose backstory is valid (or kept), in input order;
    failures go to ``<stem>.failures.jsonl`` and provenance to ``<stem>.meta.json``.
    Calls are stored in ``<stem>.backstory.db`` beside the output unless ``db_url`` is given;
    the run resumes there, or is refused with a diff if its configuration differs (unless
    ``new_run``). One process writes ``output`` at a time (a lock file beside it); an output whose
    store is missing or holds another run is refused unless ``overwrite`` (its calls would be
    bought again: :mod:`mindeval.rundir_guard`).
    """
    started = time.perf_counter()
    options = options or BackstoryOptions()
    src, out = Path(source), Path(output)
    if src.resolve() == out.resolve():
        raise MindEvalError("the output must be a different file from the input", path=out)
    check_model_string(spec.model)
    check_concurrency(options.concurrency)
    spec = spec_with_defaults(ROLE, spec)
    profiles = load_profiles(src)
    tpl = options.prompt()
    url = db_url or sqlite_url(sidecar(out, "backstory.db"))
    meta_file = sidecar(out, "meta.json")
    with run_dir_lock(out.parent, f".{out.name}.lock"):
        check_store(out.parent, db_url, overwrite=overwrite, outputs=(meta_file.name,) if _generated(meta_file) else (),
                    record=meta_file.name, store=sidecar(out, "backstory.db").name)
        with logged_run(url, ROLE, run_config(spec, tpl, options.seed), new_run=new_run) as (log, resumed):
            outcomes = generate_backstories(profiles, spec, log, options.model_copy(update={"template": tpl}),
                                            on_done=on_done)
        failed = _write_outputs(out, profiles, outcomes)
        report = GenerationReport(
            source=str(src), output=str(out), failures_file=str(sidecar(out, "failures.jsonl")) if failed else None,
            db=redact_url(url), run_id=log.run_id, resumed=resumed, n_profiles=len(profiles),
            n_ok=sum(o.status == "ok" for o in outcomes), n_kept=sum(o.status == "kept" for o in outcomes),
            n_failed=failed, calls_made=log.counters.made, calls_reused=log.counters.reused,
            calls_failed=log.counters.failed, elapsed_s=round(time.perf_counter() - started, 3), outcomes=outcomes,
        )
        write_json(meta_file, {
            **report.model_dump(exclude={"outcomes"}),
            "kind": "backstory", "model": spec.model_dump(mode="json"),
            "prompt": {"ref": tpl.ref, "sha256": tpl.sha256}, "retries": options.retries, "seed": options.seed,
            "source_sha256": sha256_file(src), "mindeval_version": __version__,
        })
    return report


def _generated(meta: Path) -> bool:
    """Whether ``meta`` is the provenance of a backstory run (not of a sample or another file)."""
    try:
        return json.loads(meta.read_text(encoding="utf-8")).get("kind") == "backstory"
    except (OSError, ValueError, AttributeError):
        return False


def _write_outputs(out: Path, profiles: list[Profile], outcomes: list[BackstoryOutcome]) -> int:
    """Write the profiles with a backstory to ``out`` and the failures beside it; return how many failed."""
    kept = [
        Profile(member_attributes=profiles[o.index].member_attributes, member_narrative=o.narrative or "",
                member_narrative_thinking_trace=o.thinking_trace)
        for o in outcomes if o.status in ("ok", "kept")
    ]
    atomic_write(out, profiles_jsonl(kept))
    failed = [o for o in outcomes if o.status == "failed"]
    fail_path = sidecar(out, "failures.jsonl")
    if failed:
        rows = [json.dumps({**o.model_dump(exclude={"narrative", "thinking_trace"}),
                            "member_attributes": profiles[o.index].member_attributes.model_dump(mode="json")},
                           ensure_ascii=False) + "\n" for o in failed]
        atomic_write(fail_path, "".join(rows).encode("utf-8"))
    else:
        fail_path.unlink(missing_ok=True)
    return len(failed)
