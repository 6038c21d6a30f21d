"""Targets: a benchmark as a folder with a manifest (``target.yaml``).

A target names its profiles, its patient/clinician/judge prompts, its guidelines (the
judge's dimensions with their scale and anchors, and the human rating form), the
default number of turns and the opening line. The MindEval benchmark is the built-in
target ``mindeval`` (the default); its runs are unchanged by targets (no ``target``
block in ``config.json``).

Paths in a manifest are relative to the manifest. ``prompts.<role>`` may instead be a
built-in template ref (``patient/default``) and ``guidelines`` a built-in file
(``builtin:guidelines.yaml``). ``profiles: null`` keeps ``--profiles`` (MindEval).
"""

from __future__ import annotations

import hashlib
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .config import DEFAULT_TURNS, MAX_SESSIONS, OPENING_LINE
from .errors import MindEvalError
from .formula import Formula, FormulaError, parse_formula
from .guidelines import Guidelines, guideline_problems, load_guidelines, validation_problems
from .prompts import ALLOWED_FIELDS, LabelScope, PromptTemplate, load_template, resolve_path
from .records import (
    AXES,
    DEFAULT_ROLES,
    Profile,
    TargetInfo,
    load_profiles,
    profile_from_json,
    read_jsonl,
)
from .resources import guidelines_dir, targets_dir

MANIFEST = "target.yaml"
DEFAULT_TARGET = "mindeval"
BUILTIN_PREFIX = "builtin:"
TARGET_ROLES: tuple[str, ...] = ("patient", "clinician", "judge")
SESSION_ROLES: tuple[str, ...] = ("memory", "next_session")  # the session step's templates (sessions > 1)

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _name(v: str) -> str:
    if not _SNAKE.match(v):
        raise ValueError(f"name '{v}' must be snake_case (a-z, 0-9, underscores)")
    return v


def _text(v: str) -> str:
    if not v.strip():
        raise ValueError("must not be empty")
    return v


class TargetPrompts(BaseModel):
    """The template of each model role: a path relative to the manifest or a built-in ref."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    patient: str
    clinician: str
    judge: str
    memory: str | None = None  # sessions > 1: the clinician writes its notes after a session
    next_session: str | None = None  # sessions > 1: the patient's situation for the next session


Role = Literal["patient", "clinician", "judge"]
LABELS_SEEN_BY: tuple[Role, ...] = ("judge",)  # who may name a label in a template unless visible_to says


class TargetLabels(BaseModel):
    """Profile labels: fields with their allowed values, held in a file beside the profiles
    (``{profile id: {field: value}}``), for breakdowns. A label reaches a prompt only where a
    template names it (``${risk_level}``), and only a template of a role it is visible to:
    ``visible_to: {label: [roles]}``, the judge alone for a label not listed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str  # relative to the manifest
    fields: dict[str, list[str]] = Field(min_length=1)
    visible_to: dict[str, list[Role]] = Field(default_factory=dict)

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        taken = frozenset().union(*ALLOWED_FIELDS.values())
        for name, values in v.items():
            _name(name)
            if name in taken:
                raise ValueError(f"label {name} has the name of a template field; choose another name")
            if not values:
                raise ValueError(f"label {name} needs at least one value")
            if len(set(map(str, values))) != len(values):
                raise ValueError(f"label {name} lists a value twice")
        return {k: [str(x) for x in vals] for k, vals in v.items()}

    @model_validator(mode="after")
    def _visible(self) -> TargetLabels:
        unknown = sorted(self.visible_to.keys() - self.fields.keys())
        if unknown:
            raise ValueError(f"visible_to names {unknown[0]}, which is not a declared label "
                             f"({', '.join(self.fields)})")
        return self

    def scope(self, role: str) -> LabelScope:
        """The labels a template of ``role`` may name, and those it may not."""
        seen = {n for n in self.fields if role in self.visible_to.get(n, LABELS_SEEN_BY)}
        return LabelScope(visible=frozenset(seen), hidden=frozenset(self.fields.keys() - seen))


class TargetRoles(BaseModel):
    """How the transcript shown to the judge names the two sides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    patient: Annotated[str, AfterValidator(_text)] = DEFAULT_ROLES["patient"]
    clinician: Annotated[str, AfterValidator(_text)] = DEFAULT_ROLES["clinician"]


class TargetScore(BaseModel):
    """A declared headline score: a formula over the reported quantities (mindeval.formula),
    e.g. VERA-MH's ``max(0, (50 + pct_best_practice / 2) * (1 - pct_high_harm / 100) ** 2)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    formula: str
    label: Annotated[str, AfterValidator(_text)] = "Score"
    higher_is_better: bool = True

    @field_validator("formula")
    @classmethod
    def _formula(cls, v: str) -> str:
        try:
            parse_formula(v)  # the language; its names are checked against the guidelines by validate
        except FormulaError as exc:
            raise ValueError(str(exc)) from None
        return v


class TargetManifest(BaseModel):
    """``target.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, AfterValidator(_name)]
    version: Annotated[str, AfterValidator(_text)]
    description: Annotated[str, AfterValidator(_text)]
    profiles: str | None = None
    turns: int = Field(DEFAULT_TURNS, ge=1)
    sessions: int = Field(1, ge=1, le=MAX_SESSIONS)  # per conversation; > 1 needs prompts.memory, prompts.next_session
    opening_line: str = OPENING_LINE  # "": the patient model writes the first message
    roles: TargetRoles = Field(default_factory=lambda: TargetRoles())
    reply_format: Literal["output_format", "template"] = "output_format"  # template: the judge prompt writes it
    prompts: TargetPrompts
    guidelines: str
    labels: TargetLabels | None = None
    rank_by: Literal["average", "harm_share", "all_best"] = "average"  # the leaderboard's ranking metric
    score: TargetScore | None = None  # a declared headline score over the reported quantities
    # Pinned compatibility (the built-in mindeval target only): its runs' files carry no target
    # fields (no config.json block, no summary "target"), its leaderboard has MindEval's own
    # title, so they stay byte-identical to those of the code before targets.
    legacy_files: bool = False
    # The authors' data release is in this target's form (MindEval's five axes and nine human
    # sub-axes): their judge (--judge-protocol paper, --transcript-format authors), few-shot
    # examples from their ratings, and their criterion mapping for human ratings apply.
    authors_release: bool = False


class Target:
    """A loaded target: its manifest, folder and the files it names."""

    def __init__(self, manifest: TargetManifest, path: Path) -> None:
        self.manifest = manifest
        self.path = path  # the manifest file

    def __repr__(self) -> str:
        return f"Target({self.name!r}, {str(self.path)!r})"

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def is_builtin(self) -> bool:
        """Shipped in ``targets_dir()`` (found by name)."""
        try:
            return self.root.resolve().parent == targets_dir().resolve()
        except MindEvalError:  # pragma: no cover - broken install
            return False

    def block(self) -> TargetInfo:
        """The ``target`` block a run of this target records in ``config.json``."""
        return TargetInfo.model_validate(self.info())

    def speakers(self) -> dict[str, str]:
        """The transcript's speaker label per message role (user = patient)."""
        roles = self.manifest.roles
        return {"user": roles.patient, "assistant": roles.clinician}

    # ----------------------------------------------------------------- files

    def roles_with_prompts(self) -> tuple[str, ...]:
        """The template roles this target names: patient, clinician, judge, and the session step's."""
        p = self.manifest.prompts
        return TARGET_ROLES + tuple(r for r in SESSION_ROLES if getattr(p, r) is not None)

    def prompt_ref(self, role: str) -> str:
        """The template of ``role`` as :func:`mindeval.prompts.load_template` takes it."""
        ref = getattr(self.manifest.prompts, role)
        local = self.root / ref
        return str(local) if local.is_file() else ref

    def template(self, role: str, ref: str | None = None) -> PromptTemplate:
        """``role``'s template (``ref``: another one, e.g. ``--clinician-prompt``), checked with
        the labels this target lets ``role`` see as its only extra fields."""
        labels = self.manifest.labels
        try:
            return load_template(ref or self.prompt_ref(role), kind=role,
                                 labels=labels.scope(role) if labels is not None else LabelScope())
        except MindEvalError as exc:
            if ref is not None or "no prompt template" not in exc.message:
                raise
            raise _missing(self, f"prompts.{role}", self.root / getattr(self.manifest.prompts, role)) from None

    def template_labels(self, templates: list[PromptTemplate], profiles: list[Profile]) -> dict[str, dict[str, str]]:
        """``{profile id: {label: value}}`` of the labels the templates name (none: ``{}``);
        raises naming the labels file and the first profile without a value."""
        names = frozenset().union(*(t.labels for t in templates))
        if not names:
            return {}
        have = self.profile_labels()
        out: dict[str, dict[str, str]] = {}
        for p in profiles:
            row = have.get(p.id, {})
            lacking = sorted(names - row.keys())
            if lacking:
                raise MindEvalError(f"profile {p.id} has no {lacking[0]} label, which a template names",
                                    path=self.labels_path, field=f"{p.id}.{lacking[0]}")
            out[p.id] = {k: row[k] for k in sorted(names)}
        return out

    @property
    def guidelines_path(self) -> Path:
        ref = self.manifest.guidelines
        if ref.startswith(BUILTIN_PREFIX):
            return guidelines_dir() / ref.removeprefix(BUILTIN_PREFIX)
        return self.root / ref

    @cached_property
    def guidelines(self) -> Guidelines:
        return load_guidelines(self.guidelines_path)

    def score_formula(self) -> Formula | None:
        """The declared headline score, its names checked against the guidelines' quantities
        (``None``: the target declares none); raises naming target.yaml:line:score.formula."""
        decl = self.manifest.score
        if decl is None:
            return None
        try:
            return parse_formula(decl.formula, self.guidelines.quantity_names())
        except FormulaError as exc:
            raise MindEvalError(str(exc), path=self.path, line=_line_of_key(self.path, "score.formula"),
                                field="score.formula") from None

    @property
    def profiles_path(self) -> Path | None:
        return None if self.manifest.profiles is None else self.root / self.manifest.profiles

    def profiles(self) -> list[Profile] | None:
        """The target's profiles (``None`` when it takes them from ``--profiles``)."""
        p = self.profiles_path
        return None if p is None else load_profiles(p)

    def files(self) -> dict[str, Path]:
        """The manifest and every file it names, by manifest field."""
        out = {"manifest": self.path, "guidelines": self.guidelines_path}
        for role in self.roles_with_prompts():
            out[f"prompts.{role}"] = resolve_path(self.prompt_ref(role))
        if self.profiles_path is not None:
            out["profiles"] = self.profiles_path
        if self.labels_path is not None:
            out["labels"] = self.labels_path
        return out

    @property
    def labels_path(self) -> Path | None:
        return None if self.manifest.labels is None else self.root / self.manifest.labels.file

    def profile_labels(self) -> dict[str, dict[str, str]]:
        """``{profile id: {label: value}}`` (empty when the target declares no labels); raises on a bad file."""
        problems = self.label_problems()
        if problems:
            raise problems[0]
        return _read_labels(self.labels_path)[0] if self.labels_path is not None else {}

    def label_problems(self, profile_ids: list[str] | None = None) -> list[MindEvalError]:
        """Every problem of the labels file: unknown profiles or fields, values not declared, gaps."""
        decl, path = self.manifest.labels, self.labels_path
        if decl is None or path is None:
            return []
        if not path.is_file():
            return [MindEvalError(f"file not found: {path}", path=self.path,
                                  line=_line_of_key(self.path, "labels.file"), field="labels.file")]
        data, text, problems = _read_labels(path)
        if problems:
            return problems
        if profile_ids is None:
            try:
                profile_ids = [p.id for p in (self.profiles() or [])]
            except MindEvalError:
                profile_ids = []
        from .guidelines import yaml_line

        for pid, row in data.items():
            if profile_ids and pid not in profile_ids:
                problems.append(MindEvalError(f"'{pid}' is not a profile id of {self.manifest.profiles}",
                                              path=path, line=yaml_line(text, (pid,)), field=pid))
                continue
            if not isinstance(row, dict):
                problems.append(MindEvalError("must be a mapping of label to value", path=path,
                                              line=yaml_line(text, (pid,)), field=pid))
                continue
            for name in row.keys() - decl.fields.keys():
                problems.append(MindEvalError(f"unknown label (declared: {', '.join(decl.fields)})", path=path,
                                              line=yaml_line(text, (pid, name)), field=f"{pid}.{name}"))
            for name, allowed in decl.fields.items():
                if name not in row:
                    problems.append(MindEvalError("label is missing", path=path, line=yaml_line(text, (pid,)),
                                                  field=f"{pid}.{name}"))
                elif str(row[name]) not in allowed:
                    problems.append(MindEvalError(f"'{row[name]}' is not one of {', '.join(allowed)}", path=path,
                                                  line=yaml_line(text, (pid, name)), field=f"{pid}.{name}"))
        for pid in profile_ids:
            if pid not in data:
                problems.append(MindEvalError(f"profile {pid} has no labels", path=path, field=pid))
        return problems

    @cached_property
    def sha256(self) -> str:
        """SHA-256 over the manifest and every file it names (field, file hash pairs)."""
        h = hashlib.sha256()
        for key, path in self.files().items():
            h.update(f"{key}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
        return h.hexdigest()

    def info(self) -> dict[str, Any]:
        """The ``target`` block of a run's ``config.json``: what readers need of the target."""
        g = self.guidelines
        out = {"name": self.name, "version": self.manifest.version, "sha256": self.sha256,
               "axes": list(g.axis_codes), "scale": g.scale_info(), **g.items_info()}
        if self.manifest.roles.model_dump() != DEFAULT_ROLES:
            out["roles"] = self.manifest.roles.model_dump()
        if self.manifest.rank_by != "average":
            out["rank_by"] = self.manifest.rank_by
        if self.manifest.legacy_files:
            out["legacy_files"] = True
        if g.point_criteria:
            out["points"] = {c.id: c.points for c in g.point_criteria}
        if self.manifest.sessions > 1:
            out["sessions"] = self.manifest.sessions
        if (score := self.manifest.score) is not None:
            out["score"] = {**score.model_dump(), **({"weights": w} if (w := g.scale_spec().weights) else {})}
        if self.manifest.labels is not None:
            out["labels"] = self.manifest.labels.fields
            out["profile_labels"] = self.profile_labels()
        return out


def _read_labels(path: Path) -> tuple[dict[str, Any], str, list[MindEvalError]]:
    """The labels file's mapping and text, or the problem reading it."""
    data, text, problems = _read_manifest(path)
    if data is None:
        for p in problems:
            p.message = p.message.replace("the manifest", "the labels file")
        return {}, text, problems
    return {str(k): ({str(a): str(b) for a, b in v.items()} if isinstance(v, dict) else v)
            for k, v in data.items()}, text, []


def target_identity(target: TargetInfo) -> str:
    """``name version (sha12)`` of a run's target, ``mindeval`` for MindEval runs: what tells two
    versions of one target apart (the SHA-256 over its files, :attr:`Target.sha256`)."""
    t = target
    return t.name if t.legacy_files else f"{t.name} {t.version} ({t.sha256[:12]})"


# ----------------------------------------------------------------------- loading


def builtin_names() -> list[str]:
    return sorted(p.parent.name for p in targets_dir().glob(f"*/{MANIFEST}"))


def manifest_path(ref: str | Path) -> Path:
    """``NAME`` of a built-in target, else a folder or its ``target.yaml``."""
    text = str(ref)
    if _SNAKE.match(text):
        builtin = targets_dir() / text / MANIFEST
        if builtin.is_file():
            return builtin
    p = Path(ref)
    if p.is_dir():
        p = p / MANIFEST
    if not p.is_file():
        raise MindEvalError(
            f"no target '{text}': not a built-in target ({', '.join(builtin_names())}) "
            f"nor a folder holding {MANIFEST}", field="--target")
    return p


def _read_manifest(path: Path) -> tuple[dict[str, Any] | None, str, list[MindEvalError]]:
    """The manifest's YAML mapping and text, or the problem reading it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, "", [MindEvalError(f"cannot read the manifest: {exc}", path=path)]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return None, text, [MindEvalError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}", path=path,
                                          line=mark.line + 1 if mark is not None else None, field="yaml")]
    if not isinstance(data, dict):
        return None, text, [MindEvalError("the manifest must be a YAML mapping", path=path, line=1)]
    return data, text, []


def _parse_manifest(path: Path) -> tuple[TargetManifest | None, list[MindEvalError]]:
    data, text, problems = _read_manifest(path)
    if data is None:
        return None, problems
    try:
        return TargetManifest.model_validate(data), []
    except ValidationError as exc:
        return None, validation_problems(exc, path, text)


def _files_only(path: Path, problems: list[MindEvalError]) -> TargetManifest | None:
    """A manifest with problems elsewhere whose file fields are valid: enough to check the files too."""
    files = {"prompts", "guidelines", "profiles"}
    if any((p.field or "yaml").split(".")[0] in files | {"yaml"} for p in problems):
        return None
    data, _, _ = _read_manifest(path)
    if data is None:
        return None
    bad = {(p.field or "").split(".")[0] for p in problems} - {"labels", "score"}
    data = {k: v for k, v in data.items() if k not in bad}  # a field with its own problem keeps its default
    labels = data.get("labels")
    if labels is not None and not _labels_bad(problems):
        labels = TargetLabels.model_validate(labels)
    elif isinstance(labels, dict) and isinstance(labels.get("fields"), dict):
        # Its own problems are reported: the templates' other fields are still checked.
        names = [str(k) for k in labels["fields"]]
        labels = TargetLabels.model_construct(file="", fields=dict.fromkeys(names, []),
                                              visible_to=dict.fromkeys(names, list(TARGET_ROLES)))
    else:
        labels = None
    try:  # its own problems are reported: the formula's names are checked only when it parses
        score = TargetScore.model_validate(data["score"]) if data.get("score") is not None else None
    except ValidationError:
        score = None
    return TargetManifest.model_construct(**{**data, "prompts": TargetPrompts(**data["prompts"]), "labels": labels,
                                             "score": score})


def _labels_bad(problems: list[MindEvalError]) -> bool:
    return any((p.field or "").split(".")[0] == "labels" for p in problems)


def load_target(ref: str | Path = DEFAULT_TARGET) -> Target:
    """Load a target by built-in name or path; a bad manifest raises naming file:line:field.

    The files it names are read when used (``mindeval targets validate`` checks them all).
    """
    path = manifest_path(ref)
    manifest, problems = _parse_manifest(path)
    if manifest is None:
        first = problems[0]
        if len(problems) > 1:
            first.message += f" (and {len(problems) - 1} more; run `mindeval targets validate {path.parent}`)"
        raise first
    target = Target(manifest, path)
    if (problem := _legacy_problem(target)) is not None:
        raise problem
    return target


def _legacy_problem(target: Target) -> MindEvalError | None:
    """``legacy_files`` belongs to the built-in mindeval target alone: a copy that kept it would
    write runs that read back as MindEval's."""
    if not target.manifest.legacy_files or (target.is_builtin and target.name == DEFAULT_TARGET):
        return None
    return MindEvalError("legacy_files is the built-in mindeval target's own (its files predate targets); "
                         "remove it from a copy", path=target.path, line=_line_of_key(target.path, "legacy_files"),
                         field="legacy_files")


def as_target(ref: Target | str | Path | None = None) -> Target:
    """A loaded target as it is; a name or folder loaded; nothing: the built-in ``mindeval``."""
    return ref if isinstance(ref, Target) else load_target(ref or DEFAULT_TARGET)


def list_targets() -> list[Target]:
    """The built-in targets, by name."""
    return [load_target(name) for name in builtin_names()]


# --------------------------------------------------------------------- validation


def _line_of_key(path: Path, dotted: str) -> int | None:
    from .guidelines import yaml_line

    try:
        return yaml_line(path.read_text(encoding="utf-8"), tuple(dotted.split(".")))
    except (OSError, UnicodeDecodeError):
        return None


def _judge_fields(target: Target, tpl: PromptTemplate) -> list[MindEvalError]:
    """The judge template must show the rubric and the conversation, and ask for the reply
    shape the parser reads (``${output_format}``) unless the target says its template
    writes it (``reply_format: template``; never with questions or "not relevant")."""
    need = ["rubric", "conversation"]
    g = None
    try:
        g = target.guidelines
    except MindEvalError:
        pass
    if target.manifest.reply_format == "output_format" or (g is not None and g.has_items):
        need.append("output_format")
    return [MindEvalError(f"the judge template must use ${{{f}}}"
                          + (" (the reply shape the parser reads, from the guidelines)" if f == "output_format" else ""),
                          path=tpl.source, field=f) for f in need if f not in tpl.fields]


def validate_target(ref: str | Path) -> list[MindEvalError]:
    """Every problem of a target (empty when valid), each naming file:line:field.

    Checks the manifest, that every named file exists, the guidelines, the templates
    (their fields, the clinician's intake-only rule) and every profile row.
    """
    try:
        path = manifest_path(ref)
    except MindEvalError as exc:
        return [exc]
    manifest, problems = _parse_manifest(path)
    if manifest is None:
        manifest = _files_only(path, problems)
        if manifest is None:
            return problems
    target = Target(manifest, path)
    if (legacy := _legacy_problem(target)) is not None:
        problems.append(legacy)
    problems += _authors_release_problems(target)
    problems += _guidelines_problems(target)
    problems += _score_problems(target)
    problems += _template_problems(target)
    if not any(p.field == "sessions" for p in problems):  # a bad count is its own problem, not the prompts'
        problems += _session_problems(target)
    problems += _profiles_problems(target)
    ppath = target.profiles_path
    if manifest.labels is not None and not _labels_bad(problems) and not any(p.path == str(ppath) for p in problems):
        problems += target.label_problems()
    return problems


def run_problems(target: Target, own_profiles: bool = True) -> list[MindEvalError]:
    """What a run refuses of a loaded target beyond its manifest: the cross-field checks of
    ``validate`` (authors_release, score names, sessions), the labels file and (``own_profiles``:
    the run uses them) the target's profiles file."""
    return [*_authors_release_problems(target), *_score_problems(target), *_session_problems(target),
            *(_profiles_problems(target) if own_profiles else []), *target.label_problems()]


def _missing(target: Target, field: str, what: Path | str) -> MindEvalError:
    """A file the manifest names (at ``field``) that does not exist."""
    return MindEvalError(f"file not found: {what}", path=target.path,
                         line=_line_of_key(target.path, field), field=field)


def _authors_release_problems(target: Target) -> list[MindEvalError]:
    """``authors_release`` needs MindEval's own dimensions (checked when the guidelines load)."""
    gpath, path = target.guidelines_path, target.path
    if target.manifest.authors_release and gpath.is_file() and not guideline_problems(gpath) \
            and load_guidelines(gpath).axis_codes != AXES:
        return [MindEvalError(f"authors_release needs MindEval's dimensions ({', '.join(AXES)})", path=path,
                              line=_line_of_key(path, "authors_release"), field="authors_release")]
    return []


def _guidelines_problems(target: Target) -> list[MindEvalError]:
    """The guidelines file: present, valid, and with the scale ``rank_by`` needs."""
    gpath, path, manifest = target.guidelines_path, target.path, target.manifest
    if not gpath.is_file():
        return [_missing(target, "guidelines", gpath)]
    problems = list(guideline_problems(gpath))
    if not problems:
        g = load_guidelines(gpath)
        need = {"harm_share": (bool(g.harm_levels), "a scale with harm levels"),
                "all_best": (g.scale_kind == "categorical", "a categorical scale")}.get(manifest.rank_by)
        if need is not None and not need[0]:
            problems.append(MindEvalError(f"rank_by {manifest.rank_by} needs {need[1]}", path=path,
                                          line=_line_of_key(path, "rank_by"), field="rank_by"))
    return problems


def _score_problems(target: Target) -> list[MindEvalError]:
    """The headline score reads only quantities the guidelines report (checked once they are valid)."""
    if target.manifest.score is None or not target.guidelines_path.is_file() \
            or guideline_problems(target.guidelines_path):
        return []
    try:
        target.score_formula()
    except MindEvalError as exc:
        return [exc]
    return []


def _template_problems(target: Target) -> list[MindEvalError]:
    """Each role's prompt template: present and loadable; the judge's with the fields it needs."""
    problems: list[MindEvalError] = []
    for role in target.roles_with_prompts():
        try:
            tpl = target.template(role)
            if role == "judge":
                problems += _judge_fields(target, tpl)
        except MindEvalError as exc:
            problems.append(exc)
    return problems


def _session_problems(target: Target) -> list[MindEvalError]:
    """``sessions: N`` > 1 needs the session step's two prompts and templates that carry it over
    (the clinician's ${memory}, the patient's ${situation}, the judge's ${memory}); one session
    names neither prompt."""
    m, path = target.manifest, target.path

    def err(message: str, field: str) -> MindEvalError:
        return MindEvalError(message, path=path, line=_line_of_key(path, field) or _line_of_key(path, "sessions"),
                             field=field)
    if m.sessions < 1:
        return []  # reported by the manifest's own check
    if m.sessions == 1:
        return [err(f"prompts.{r} is used only with sessions > 1 (sessions is 1)", f"prompts.{r}")
                for r in SESSION_ROLES if getattr(m.prompts, r) is not None]
    problems = [err(f"sessions: {m.sessions} needs prompts.{r} (" + ("the clinician writes its notes after each "
                    "session" if r == "memory" else "the patient's situation for the next session") + ")", "sessions")
                for r in SESSION_ROLES if getattr(m.prompts, r) is None]
    need = {"clinician": "memory", "patient": "situation", "judge": "memory"}
    for role, name in need.items():
        try:
            tpl = target.template(role)
        except MindEvalError:
            continue  # reported by _template_problems
        if name not in tpl.fields:
            problems.append(err(f"sessions: {m.sessions} needs ${{{name}}} in the {role} template ({tpl.source})",
                                f"prompts.{role}"))
    return problems


def _profiles_problems(target: Target) -> list[MindEvalError]:
    """The target's profiles file (if it names one): present, non-empty, every row a valid profile."""
    ppath = target.profiles_path
    if ppath is None:
        return []
    if not ppath.is_file():
        return [_missing(target, "profiles", ppath)]
    problems: list[MindEvalError] = []
    rows = 0
    try:
        for n, obj in read_jsonl(ppath, problems):
            rows += 1
            try:
                profile_from_json(obj, path=ppath, line=n)
            except MindEvalError as exc:
                problems.append(exc)
    except MindEvalError as exc:
        problems.append(exc)
    if rows == 0 and not problems:
        problems.append(MindEvalError("no profiles in file", path=ppath))
    return problems
