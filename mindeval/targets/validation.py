"""Every problem of a target (``mindeval targets validate``), and what a run refuses of one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import MindEvalError
from ..prompts import PromptTemplate, placeholder_line, situation_fields
from ..records import AXES, profile_from_json, read_jsonl
from ..schedule import declared, session_problems, template_draws, template_problem
from .first_session import FirstSession
from .guidelines import guideline_problems, load_guidelines
from .manifest import SESSION_ROLES, files_only, labels_bad, manifest_path, parse_manifest
from .target import Target, legacy_problem, missing_file
from .yaml_errors import line_of_key


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
    manifest, problems = parse_manifest(path)
    if manifest is None:
        manifest = files_only(path, problems)
        if manifest is None:
            return problems
    target = Target(manifest, path)
    if (legacy := legacy_problem(target)) is not None:
        problems.append(legacy)
    problems += _authors_release_problems(target)
    problems += _guidelines_problems(target)
    problems += _score_problems(target)
    problems += _template_problems(target)
    if not any(p.field == "sessions" for p in problems):  # a bad count is its own problem, not the prompts'
        problems += _session_problems(target)
    problems += _end_marker_problems(target)
    if not any((p.field or "").split(".")[0] == "schedule" for p in problems):  # a bad schedule: its own lines
        problems += schedule_problems(target)
    problems += _profiles_problems(target)
    ppath = target.profiles_path
    if manifest.labels is not None and not labels_bad(problems) and not any(p.path == str(ppath) for p in problems):
        problems += target.label_problems()
    return problems


def run_problems(target: Target, own_profiles: bool = True) -> list[MindEvalError]:
    """What a run refuses of a loaded target beyond its manifest: the cross-field checks of
    ``validate`` (authors_release, score names, sessions), the labels file and (``own_profiles``:
    the run uses them) the target's profiles file."""
    return [*_authors_release_problems(target), *_score_problems(target), *_session_problems(target),
            *_end_marker_problems(target), *schedule_problems(target), *(_profiles_problems(target) if own_profiles else []), *target.label_problems()]


def _authors_release_problems(target: Target) -> list[MindEvalError]:
    """``authors_release`` needs MindEval's own dimensions (checked when the guidelines load)."""
    gpath, path = target.guidelines_path, target.path
    if target.manifest.authors_release and gpath.is_file() and not guideline_problems(gpath) \
            and load_guidelines(gpath).axis_codes != AXES:
        return [MindEvalError(f"authors_release needs MindEval's dimensions ({', '.join(AXES)})", path=path,
                              line=line_of_key(path, "authors_release"), field="authors_release")]
    return []


def _guidelines_problems(target: Target) -> list[MindEvalError]:
    """The guidelines file: present, valid, and with the scale ``rank_by`` needs."""
    gpath, path, manifest = target.guidelines_path, target.path, target.manifest
    if not gpath.is_file():
        return [missing_file(target, "guidelines", gpath)]
    problems = list(guideline_problems(gpath))
    if not problems:
        g = load_guidelines(gpath)
        need = {"harm_share": (bool(g.harm_levels), "a scale with harm levels"),
                "all_best": (g.scale_kind == "categorical", "a categorical scale")}.get(manifest.rank_by)
        if need is not None and not need[0]:
            problems.append(MindEvalError(f"rank_by {manifest.rank_by} needs {need[1]}", path=path,
                                          line=line_of_key(path, "rank_by"), field="rank_by"))
    return problems


def _score_problems(target: Target) -> list[MindEvalError]:
    """The headline score reads only quantities the guidelines report (checked once they are valid)."""
    if not target.manifest.declared() or not target.guidelines_path.is_file() \
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
    (the patient's ${situation}, and ${memory} in the template of each of ``memory.readers``: by
    default the clinician's and the judge's); one session names neither prompt nor ``memory``."""
    m, path = target.manifest, target.path

    def err(message: str, field: str) -> MindEvalError:
        return MindEvalError(message, path=path, line=line_of_key(path, field) or line_of_key(path, "sessions"),
                             field=field)
    if m.sessions < 1:
        return []  # reported by the manifest's own check
    if m.sessions == 1:
        return [err(f"{f} is used only with sessions > 1 (sessions is 1)", f)
                for f in (*(f"prompts.{r}" for r in SESSION_ROLES if getattr(m.prompts, r) is not None),
                          *(["first_session"] if m.first_session != FirstSession() else []),
                          *(f for f in ("situation_fields", "situation_opening", "memory") if getattr(m, f) is not None))
                ] + _situation_field_problems(target)
    problems = [err(f"sessions: {m.sessions} needs prompts.{r} (" + ("the clinician writes its notes after each "
                    "session" if r == "memory" else "the patient's situation for the next session") + ")", "sessions")
                for r in SESSION_ROLES if getattr(m.prompts, r) is None]
    need = [("patient", "situation"), *((r, "memory") for r in target.memory.readers)]
    for role, name in need:
        try:
            tpl = target.template(role)
        except MindEvalError:
            continue  # reported by _template_problems
        if name not in tpl.fields:
            why = f" (memory.readers lists the {role})" if name == "memory" and m.memory is not None else ""
            problems.append(err(f"sessions: {m.sessions} needs ${{{name}}} in the {role} template ({tpl.source})"
                                + why, f"prompts.{role}"))
    return problems + _situation_field_problems(target)


def _situation_field_problems(target: Target) -> list[MindEvalError]:
    """Every ``${situation_<name>}`` of the patient template is a declared ``situation_fields`` name."""
    try:
        tpl = target.template("patient")
    except MindEvalError:
        return []  # reported by _template_problems
    declared = set(target.manifest.situation_fields or [])
    return [MindEvalError(f"'${{situation_{name}}}' names no declared situation field (situation_fields in "
                          f"{target.path.name}: {', '.join(sorted(declared)) or 'none'})", path=Path(tpl.source),
                          line=placeholder_line(Path(tpl.source), f"situation_{name}"), field=f"situation_{name}")
            for name in situation_fields(tpl) if name not in declared]


def schedule_problems(target: Target, templates: Mapping[str, PromptTemplate] | None = None) -> list[MindEvalError]:
    """``schedule``: each draw's sessions within 1..sessions, and each ``${schedule_<name>}`` of a
    template (the target's, or ``templates`` by role: a run's, overrides included) a declared draw
    visible to its role."""
    path, m = target.path, target.manifest
    schedule = declared(m.schedule)
    problems = [MindEvalError(msg, path=path, line=line_of_key(path, field) or line_of_key(path, "schedule"),
                              field=field) for field, msg in session_problems(schedule, m.sessions)]
    for role in (templates or target.roles_with_prompts()):
        try:
            tpl = templates[role] if templates else target.template(role)
        except MindEvalError:
            continue  # reported by _template_problems
        for name in template_draws(tpl):
            if (why := template_problem(schedule, role, name)) is not None:
                problems.append(MindEvalError(why, path=Path(tpl.source), field=f"schedule_{name}",
                                              line=placeholder_line(Path(tpl.source), f"schedule_{name}")))
    return problems


def _end_marker_problems(target: Target) -> list[MindEvalError]:
    """``patient_can_end``: the patient template must tell the patient model the marker that ends a session."""
    marker = target.manifest.patient_can_end
    if marker is None:
        return []
    try:
        tpl = target.template("patient")
    except MindEvalError:
        return []  # reported by _template_problems
    if marker in tpl.body:
        return []
    return [MindEvalError(f"patient_can_end: the patient template ({tpl.source}) never names {marker!r}, so the "
                          "patient model cannot end a session with it", path=target.path,
                          line=line_of_key(target.path, "patient_can_end"), field="patient_can_end")]


def _profiles_problems(target: Target) -> list[MindEvalError]:
    """The target's profiles file (if it names one): present, non-empty, every row a valid profile."""
    ppath = target.profiles_path
    if ppath is None:
        return []
    if not ppath.is_file():
        return [missing_file(target, "profiles", ppath)]
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
