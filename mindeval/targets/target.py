"""A loaded target: its manifest, its folder and the files it names; loading one by name or path."""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import MindEvalError
from ..formula import Formula, FormulaError, parse_formula
from ..prompts import LabelScope, PromptTemplate, load_template, resolve_path
from ..records import (
    DEFAULT_MEMORY,
    DEFAULT_ROLES,
    DEFAULT_TARGET,
    MemorySpec,
    Profile,
    TargetInfo,
    load_profiles,
)
from ..resources import guidelines_dir, targets_dir
from ..schedule import record
from ..stats.scale_spec import quantity_names
from .first_session import LEGACY_FIRST_SESSION
from .guidelines import Guidelines, load_guidelines
from .manifest import (
    BUILTIN_PREFIX,
    SESSION_ROLES,
    TARGET_ROLES,
    TargetManifest,
    builtin_names,
    manifest_path,
    parse_manifest,
    read_manifest,
)
from .yaml_errors import line_of_key, yaml_line


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

    @property
    def memory(self) -> MemorySpec:
        """Who writes and reads the between-session memory (``memory:``; not declared: the clinician's
        notes, read by the clinician and the judge)."""
        m = self.manifest.memory
        return MemorySpec.model_validate(m) if isinstance(m, dict) else m or DEFAULT_MEMORY  # dict: files_only

    def first_texts(self, profile: Profile) -> tuple[str, str]:
        """Session 1's (situation, memory) for ``profile`` (``first_session``; sessions > 1)."""
        return self.manifest.first_session.texts(profile, self.manifest.roles.clinician)

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
                                 labels=labels.scope(role) if labels is not None else LabelScope(),
                                 memory=self.memory)
        except MindEvalError as exc:
            if ref is not None or "no prompt template" not in exc.message:
                raise
            raise missing_file(self, f"prompts.{role}", self.root / getattr(self.manifest.prompts, role)) from None

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
        """The declared headline score, every declared formula's names checked against the
        guidelines' quantities (per dimension too: ``NAME[CODE]``, conversation-level judging);
        ``None``: the target declares none. Raises naming target.yaml:line:score.formula (or
        ``scores.N.formula``)."""
        g = self.guidelines
        known = quantity_names(g.scale_spec(), () if g.judging_unit == "reply" else g.axis_codes)
        for where, decl in self.manifest.declared():
            try:
                parse_formula(decl.formula, known)
            except FormulaError as exc:
                field = f"{where}.formula"
                raise MindEvalError(str(exc), path=self.path, line=line_of_key(self.path, field),
                                    field=field) from None
        head = self.manifest.headline()
        return None if head is None else parse_formula(head.formula, known)

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
        return read_labels(self.labels_path)[0] if self.labels_path is not None else {}

    def label_problems(self, profile_ids: list[str] | None = None) -> list[MindEvalError]:
        """Every problem of the labels file: unknown profiles or fields, values not declared, gaps."""
        decl, path = self.manifest.labels, self.labels_path
        if decl is None or path is None:
            return []
        if not path.is_file():
            return [MindEvalError(f"file not found: {path}", path=self.path,
                                  line=line_of_key(self.path, "labels.file"), field="labels.file")]
        data, text, problems = read_labels(path)
        if problems:
            return problems
        if profile_ids is None:
            try:
                profile_ids = [p.id for p in (self.profiles() or [])]
            except MindEvalError:
                profile_ids = []
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
            first = self.manifest.first_session.record(self.manifest.roles.clinician)
            if first != LEGACY_FIRST_SESSION:  # today's texts stay unrecorded: earlier runs keep their hash
                out["first_session"] = first
            for key in ("situation_fields", "situation_opening"):
                if (value := getattr(self.manifest, key)) is not None:
                    out[key] = value
            if self.manifest.memory is not None:  # declared only: earlier runs keep their hash
                out["memory"] = self.memory.model_dump(mode="json")
        if (schedule := record(self.manifest.schedule)) is not None:  # declared only: other hashes stay
            out["schedule"] = schedule
        if self.manifest.patient_can_end is not None:
            out["patient_can_end"] = self.manifest.patient_can_end
        if self.manifest.partial_judging:  # recorded only when declared: earlier runs keep their hash
            out["partial_judging"] = True
        if (score := self.manifest.headline()) is not None:
            out["score"] = {**score.model_dump(), **({"weights": w} if (w := g.scale_spec().weights) else {})}
        if self.manifest.scores:
            out["scores"] = [sc.model_dump() for sc in self.manifest.scores]
        if self.manifest.labels is not None:
            out["labels"] = self.manifest.labels.fields
            out["profile_labels"] = self.profile_labels()
        return out


def read_labels(path: Path) -> tuple[dict[str, Any], str, list[MindEvalError]]:
    """The labels file's mapping and text, or the problem reading it."""
    data, text, problems = read_manifest(path)
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


def load_target(ref: str | Path = DEFAULT_TARGET) -> Target:
    """Load a target by built-in name or path; a bad manifest raises naming file:line:field.

    The files it names are read when used (``mindeval targets validate`` checks them all).
    """
    path = manifest_path(ref)
    manifest, problems = parse_manifest(path)
    if manifest is None:
        first = problems[0]
        if len(problems) > 1:
            first.message += f" (and {len(problems) - 1} more; run `mindeval targets validate {path.parent}`)"
        raise first
    target = Target(manifest, path)
    if (problem := legacy_problem(target)) is not None:
        raise problem
    return target


def legacy_problem(target: Target) -> MindEvalError | None:
    """``legacy_files`` belongs to the built-in mindeval target alone: a copy that kept it would
    write runs that read back as MindEval's."""
    if not target.manifest.legacy_files or (target.is_builtin and target.name == DEFAULT_TARGET):
        return None
    return MindEvalError("legacy_files is the built-in mindeval target's own (its files predate targets); "
                         "remove it from a copy", path=target.path, line=line_of_key(target.path, "legacy_files"),
                         field="legacy_files")


def as_target(ref: Target | str | Path | None = None) -> Target:
    """A loaded target as it is; a name or folder loaded; nothing: the built-in ``mindeval``."""
    return ref if isinstance(ref, Target) else load_target(ref or DEFAULT_TARGET)


def list_targets() -> list[Target]:
    """The built-in targets, by name."""
    return [load_target(name) for name in builtin_names()]


def missing_file(target: Target, field: str, what: Path | str) -> MindEvalError:
    """A file the manifest names (at ``field``) that does not exist."""
    return MindEvalError(f"file not found: {what}", path=target.path,
                         line=line_of_key(target.path, field), field=field)
