"""Versioned prompt templates: load, check fields at load time, render.

A template file is YAML front matter (kind, name, version, description, extends)
followed by a body using ``${field}`` placeholders. ``extends: kind/name`` appends
this body to another template's body. The fields a template may use depend on its
kind; a clinician template may only use the intake fields (paper §2.2, Fig. 10).
A target's profile labels (``${risk_level}``) are fields only of the roles it declares
them visible to (:meth:`mindeval.targets.Target.template`); the judge's by default.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel

from .config import FIRST_MEMORY, FIRST_SITUATION
from .errors import MindEvalError
from .records import ATTRIBUTE_FIELDS, DEFAULT_MEMORY, INTAKE_FIELDS, MemorySpec, Profile
from .resources import prompts_dir
from .text_files import read_text

KINDS = ("patient", "clinician", "judge", "backstory", "memory", "next_session")
# Multi-session targets: the fields of the session step (``memory``: the clinician writes its notes;
# ``next_session``: the patient's situation for the next session). ``transcript``: the session just
# ended; ``session``: its number (memory) or the next one's (next_session).
SITUATION_PREFIX = "situation_"  # a patient template's ${situation_<name>}: a declared situation field
SCHEDULE_PREFIX = "schedule_"  # any template's ${schedule_<name>}: a declared draw visible to it (mindeval.schedule)
SESSION_FIELDS = ("memory", "situation", "transcript", "session")
# ``output_format``: the reply instruction for the target's dimensions (guidelines.render_output_format).
# ``conversation_str``: the transcript under the authors' placeholder name (their template's field).
JUDGE_EXTRA_FIELDS = ("rating_scale", "rubric", "fewshot_examples", "conversation", "conversation_str", "output_format")
# ``clinician_system``: the clinician's system prompt as it was sent for the judged conversation
# (its session's, notes included); the judge's alone: no simulated side reads what the other was told.
JUDGE_ONLY_FIELDS = ("clinician_system",)

ALLOWED_FIELDS: dict[str, frozenset[str]] = {
    "patient": frozenset(ATTRIBUTE_FIELDS) | {"member_narrative", "situation"},
    "clinician": frozenset(INTAKE_FIELDS) | {"memory"},
    "judge": frozenset(INTAKE_FIELDS) | frozenset(JUDGE_EXTRA_FIELDS) | frozenset(JUDGE_ONLY_FIELDS) | {"memory"},
    "backstory": frozenset(ATTRIBUTE_FIELDS),
    "memory": frozenset(INTAKE_FIELDS) | {"memory", "transcript", "session"},
    "next_session": frozenset(ATTRIBUTE_FIELDS) | {"member_narrative", "situation", "transcript", "session"},
}
CLINICIAN_SIDE = ("clinician", "memory")  # kinds the clinician model reads: the intake-only rule holds
MEMORY_BOUND = "max_entries"  # a memory template's ${max_entries}: the target's memory.max_entries

# Why a clinician may not see a field: the paper's no-leakage constraint.
_CLINICIAN_FORBIDDEN_REASON = {
    "member_narrative": "the patient's backstory",
    "rubric": "the evaluation rubric",
    "rating_scale": "the evaluation rubric",
    "fewshot_examples": "judge examples",
    "conversation": "judge input",
    "conversation_str": "judge input",
    "output_format": "the judge's reply format",
    "situation": "the patient's situation for the session (written from the backstory)",
    "clinician_system": "judge input",
}


class PromptTemplate(BaseModel):
    kind: str
    name: str
    version: int
    description: str = ""
    body: str
    fields: frozenset[str]
    labels: frozenset[str] = frozenset()  # the profile labels it names (visible to its kind)
    source: str
    sha256: str

    @property
    def ref(self) -> str:
        """Identifier recorded in run configs, e.g. ``clinician/default@v1``."""
        return f"{self.kind}/{self.name}@v{self.version}"

    def render(self, values: dict[str, str]) -> str:
        missing = sorted(f for f in self.fields if f not in values)
        if missing:
            raise MindEvalError(
                f"template {self.ref} needs field(s) the input lacks: {', '.join(missing)}",
                path=self.source,
                field=missing[0],
            )
        return string.Template(self.body).substitute({k: values[k] for k in self.fields})


def template_fields(body: str) -> set[str]:
    """Placeholders used in a ``string.Template`` body (``$$`` escapes excluded)."""
    out: set[str] = set()
    for m in string.Template.pattern.finditer(body):
        if m.group("invalid") is not None:
            line = body.count("\n", 0, m.start()) + 1
            raise ValueError(f"invalid placeholder near line {line} (write a literal $ as $$)")
        name = m.group("named") or m.group("braced")
        if name:
            out.add(name)
    return out


def _split_front_matter(text: str, path: Path) -> tuple[dict, str]:
    if not text.startswith("---"):
        raise MindEvalError("prompt file must start with '---' YAML front matter", path=path, line=1)
    parts = text.split("\n---", 1)
    if len(parts) != 2:
        raise MindEvalError("front matter is not closed by a '---' line", path=path, line=1)
    head = parts[0][3:]
    body = parts[1].split("\n", 1)[1] if "\n" in parts[1] else ""
    try:
        meta = yaml.safe_load(head) or {}
    except yaml.YAMLError as exc:
        raise MindEvalError(f"bad front matter: {exc}", path=path, line=1) from None
    if not isinstance(meta, dict):
        raise MindEvalError("front matter must be a mapping", path=path, line=1)
    return meta, body.strip("\n") + "\n"


def resolve_path(ref: str) -> Path:
    """``kind/name`` → the bundled file; anything that exists on disk → that file."""
    p = Path(ref)
    if p.suffix and p.is_file():
        return p
    bundled = prompts_dir() / f"{ref}.txt"
    if bundled.is_file():
        return bundled
    if p.is_file():
        return p
    raise MindEvalError(f"no prompt template '{ref}' (give kind/name, e.g. judge/default, or a file path)")


@lru_cache(maxsize=64)
def _load_cached(path_str: str, mtime: float, scope: LabelScope, memory: MemorySpec) -> PromptTemplate:
    return _load_file(Path(path_str), chain=(), scope=scope, memory=memory)


class LabelScope(BaseModel, frozen=True):
    """A target's profile labels as one template kind sees them: ``visible`` ones are fields
    of its templates; ``hidden`` ones (declared, not visible to it) are refused by name."""

    visible: frozenset[str] = frozenset()
    hidden: frozenset[str] = frozenset()


NO_LABELS = LabelScope()


def load_template(ref: str, *, kind: str | None = None, labels: LabelScope = NO_LABELS,
                  memory: MemorySpec = DEFAULT_MEMORY) -> PromptTemplate:
    """Load and validate a template by ``kind/name`` or path; ``kind`` asserts its kind;
    ``labels``: the target's label fields this kind may name (none by default); ``memory``: who
    writes and reads the between-session memory (:func:`allowed_fields`)."""
    path = resolve_path(ref)
    tpl = _load_cached(str(path.resolve()), path.stat().st_mtime, labels, memory)
    if kind is not None and tpl.kind != kind:
        raise MindEvalError(f"expected a {kind} template but this is a {tpl.kind} template", path=path, field="kind")
    return tpl


def _load_file(path: Path, chain: tuple[str, ...], scope: LabelScope = NO_LABELS,
               memory: MemorySpec = DEFAULT_MEMORY) -> PromptTemplate:
    meta, body = _split_front_matter(read_text(path, "prompt file"), path)
    for key in ("kind", "name", "version"):
        if key not in meta:
            raise MindEvalError("missing front matter field", path=path, field=key)
    kind = str(meta["kind"])
    if kind not in KINDS:
        raise MindEvalError(f"unknown kind '{kind}' (one of {', '.join(KINDS)})", path=path, field="kind")
    try:
        version = int(meta["version"])
    except (TypeError, ValueError):
        raise MindEvalError("version must be an integer", path=path, field="version") from None
    parent = meta.get("extends")
    if parent:
        parent = str(parent)
        if parent in chain:
            raise MindEvalError(f"circular 'extends' through {parent}", path=path, field="extends")
        base = _load_file(resolve_path(parent), chain + (parent,), scope, memory)
        if base.kind != kind:
            raise MindEvalError(
                f"a {kind} template cannot extend the {base.kind} template '{parent}'",
                path=path, field="extends",
            )
        body = base.body.rstrip("\n") + "\n\n" + body
    try:
        fields = frozenset(template_fields(body))
    except ValueError as exc:
        raise MindEvalError(str(exc), path=path, field="body") from None
    _check_fields(kind, fields, path, scope, memory)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return PromptTemplate(
        kind=kind, name=str(meta["name"]), version=version,
        description=str(meta.get("description") or ""), body=body, fields=fields,
        labels=fields & scope.visible, source=str(path), sha256=digest,
    )


def _placeholder_line(path: Path, name: str) -> int | None:
    """Line of the file where ``${name}`` (or ``$name``) first appears."""
    pattern = re.compile(rf"\$(?:\{{{re.escape(name)}\}}|{re.escape(name)}\b)")
    for n, line in enumerate(read_text(path, "prompt file").splitlines(), start=1):
        if pattern.search(line):
            return n
    return None


def situation_fields(tpl: PromptTemplate) -> list[str]:
    """The ``${situation_<name>}`` fields a patient template names (the ``<name>`` parts), checked
    against the target's ``situation_fields`` by the target's validation."""
    return sorted(f[len(SITUATION_PREFIX):] for f in tpl.fields if f.startswith(SITUATION_PREFIX)) \
        if tpl.kind == "patient" else []


def placeholder_line(path: Path, name: str) -> int | None:
    """Line of the file where ``${name}`` (or ``$name``) first appears."""
    return _placeholder_line(path, name)


def allowed_fields(kind: str, memory: MemorySpec = DEFAULT_MEMORY) -> frozenset[str]:
    """The fields a template of ``kind`` may name under the target's ``memory``: ``${memory}`` only
    in a reader's template (clinician, judge, patient); the memory template's ``${max_entries}``
    only with a bound, and the whole profile only when the patient writes it and no clinician
    reads it (:attr:`~mindeval.records.MemorySpec.private`); the judge is not shown the clinician's
    prompt (``${clinician_system}``, which holds the memory) unless it reads the memory too."""
    out = ALLOWED_FIELDS[kind]
    if kind in ("clinician", "judge", "patient"):
        out = out | {"memory"} if memory.reads(kind) else out - {"memory"}
    if kind == "judge" and memory.reads("clinician") and not memory.reads("judge"):
        out = out - set(JUDGE_ONLY_FIELDS)
    if kind == "memory":
        out = out | ({MEMORY_BOUND} if memory.max_entries is not None else set()) \
            | (ALLOWED_FIELDS["backstory"] | {"member_narrative"} if memory.private else set())
    return out


def _memory_problem(kind: str, bad: str, memory: MemorySpec) -> str | None:
    """Why a field of the memory rules is refused in a ``kind`` template (None: not one of them)."""
    if bad == "memory" and kind in ("clinician", "judge", "patient"):
        return (f"'${{memory}}' in a {kind} template: the {kind} is not a reader of the between-session memory "
                f"(target.yaml's memory.readers: {', '.join(memory.readers)})")
    if bad == MEMORY_BOUND and kind == "memory":
        return "'${max_entries}' needs memory.max_entries in target.yaml (the bound of the memory log)"
    if bad in JUDGE_ONLY_FIELDS and kind == "judge":
        return (f"'${{{bad}}}' would show the judge the memory (the clinician's prompt holds it), and the judge "
                f"is not a reader of it (target.yaml's memory.readers: {', '.join(memory.readers)})")
    return None


def _check_fields(kind: str, fields: frozenset[str], path: Path, scope: LabelScope = NO_LABELS,
                  memory: MemorySpec = DEFAULT_MEMORY) -> None:
    allowed = allowed_fields(kind, memory)
    unknown = sorted(f for f in fields - allowed - scope.visible
                     if not (kind == "patient" and f.startswith(SITUATION_PREFIX)) and not f.startswith(SCHEDULE_PREFIX))
    if not unknown:
        return
    bad = unknown[0]
    line = _placeholder_line(path, bad)
    if bad in scope.hidden:
        raise MindEvalError(
            f"'${{{bad}}}' is a profile label not visible to the {kind}: list {kind} under "
            f"labels.visible_to.{bad} in target.yaml to show it (default: the judge only)",
            path=path, line=line, field=bad,
        )
    if (why := _memory_problem(kind, bad, memory)) is not None:
        raise MindEvalError(why, path=path, line=line, field=bad)
    clinician_side = kind == "clinician" or (kind == "memory" and not memory.private)
    if clinician_side and bad in _CLINICIAN_FORBIDDEN_REASON | dict.fromkeys(ALLOWED_FIELDS["patient"]):
        what = _CLINICIAN_FORBIDDEN_REASON.get(bad, "a profile attribute outside the intake")
        raise MindEvalError(
            f"{kind} templates may only use the intake fields ({', '.join(INTAKE_FIELDS)})"
            + (" and ${memory}; " if kind == "clinician" else ", ${memory}, ${transcript} and ${session}; ") +
            f"'${{{bad}}}' would leak {what} to the clinician"
            + (" (it reads the memory: memory.readers in target.yaml)" if kind == "memory" and memory.writer == "patient"
               else ""),
            path=path, line=line, field=bad,
        )
    if bad in JUDGE_ONLY_FIELDS:
        raise MindEvalError(f"'${{{bad}}}' (the clinician's system prompt as sent) may be named only in a judge "
                            f"template, not in a {kind} template", path=path, line=line, field=bad)
    raise MindEvalError(
        f"unknown field '${{{bad}}}' for a {kind} template; allowed: {', '.join(sorted(allowed))}",
        path=path, line=line, field=bad,
    )


# ------------------------------------------------------------------ rendering helpers


def label_values(tpl: PromptTemplate, labels: Mapping[str, str] | None) -> dict[str, str]:
    """The profile's label values that ``tpl`` names (only those: no other label reaches a prompt)."""
    return {k: str(v) for k, v in (labels or {}).items() if k in tpl.labels}


def schedule_values(tpl: PromptTemplate, drawn: Mapping[str, str] | None) -> dict[str, str]:
    """The ``${schedule_<name>}`` values ``tpl`` names: the session's drawn value, "" where the draw
    is not drawn for the session (which names a template may use is checked with the target)."""
    return {f: (drawn or {}).get(f[len(SCHEDULE_PREFIX):], "") for f in tpl.fields if f.startswith(SCHEDULE_PREFIX)}


def render_patient(tpl: PromptTemplate, profile: Profile, labels: Mapping[str, str] | None = None,
                   situation: str = FIRST_SITUATION, parts: Mapping[str, str] | None = None,
                   schedule: Mapping[str, str] | None = None, memory: str = "") -> str:
    """``situation``: the patient's situation for this session (multi-session targets' ${situation});
    ``parts``: its declared fields (``situation_fields``), each a ``${situation_<name>}`` (session 1: empty);
    ``schedule``: the session's drawn schedule (``${schedule_<name>}``); ``memory``: the
    between-session memory, when the target lists the patient among its readers."""
    named = {f"{SITUATION_PREFIX}{k}": "" for k in situation_fields(tpl)}
    named |= {f"{SITUATION_PREFIX}{k}": v for k, v in (parts or {}).items()}
    return tpl.render({**profile.fields(), "situation": situation, "memory": memory, **named,
                       **schedule_values(tpl, schedule),
                       **label_values(tpl, labels)})


def render_clinician(tpl: PromptTemplate, profile: Profile, labels: Mapping[str, str] | None = None,
                     memory: str = FIRST_MEMORY, schedule: Mapping[str, str] | None = None) -> str:
    """Render with the intake fields only (and the labels the template names, which the
    target declared visible to the clinician, ``memory``: its own notes from earlier
    sessions, and the draws of ``schedule`` the target shows it), so nothing else can reach the clinician."""
    if tpl.kind != "clinician":
        raise MindEvalError(f"{tpl.ref} is not a clinician template", path=tpl.source, field="kind")
    return tpl.render({**profile.intake(), "memory": memory, **schedule_values(tpl, schedule),
                       **label_values(tpl, labels)})


def render_session_step(tpl: PromptTemplate, profile: Profile, values: Mapping[str, str],
                        labels: Mapping[str, str] | None = None, schedule: Mapping[str, str] | None = None,
                        memory: MemorySpec = DEFAULT_MEMORY) -> str:
    """A ``memory`` template (the intake only, as the clinician sees it, unless ``memory`` is
    :attr:`~mindeval.records.MemorySpec.private`) or a ``next_session`` template (the whole
    profile, as the patient sees it) over ``values`` (:data:`SESSION_FIELDS`); ``schedule``: the
    drawn schedule it is shown (memory: the session just ended's; next_session: the next session's)."""
    base = profile.intake() if tpl.kind == "memory" and not memory.private else profile.fields()
    return tpl.render({**base, **values, **schedule_values(tpl, schedule), **label_values(tpl, labels)})


def render_backstory(tpl: PromptTemplate, profile: Profile) -> str:
    return tpl.render({k: str(v) for k, v in profile.member_attributes.model_dump().items()})
