"""``mindeval profiles validate``: every schema problem of a profiles.jsonl file, as file:line:field.

Unlike :func:`mindeval.records.load_profiles`, which stops at the first error, this
collects all of them: malformed JSON, missing or mistyped fields, unknown or empty
attributes, duplicate profiles and (optionally) backstories that break the rules. With a
target that declares profile labels it also checks the labels file beside the profiles
(the labels' one home: a label given as a profile attribute is refused, naming that file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..errors import MindEvalError
from ..records import ATTRIBUTE_FIELDS, Profile
from .backstory import check_backstory

if TYPE_CHECKING:
    from ..targets import Target

TOP_LEVEL = ("member_attributes", "member_narrative", "member_narrative_thinking_trace")


def _loc(err: dict) -> str:
    return ".".join(str(x) for x in err["loc"])


def file_target(path: str | Path) -> Target | None:
    """The target whose manifest sits beside ``path`` and names it as its profiles (else None)."""
    from ..targets import MANIFEST, load_target

    p = Path(path)
    if not (p.parent / MANIFEST).is_file():
        return None
    try:
        target = load_target(p.parent)
    except MindEvalError:
        return None  # a broken manifest is `mindeval targets validate`'s to report
    tp = target.profiles_path
    return target if tp is not None and tp.resolve() == p.resolve() else None


def validate_file(path: str | Path, *, backstory: bool = False,
                  target: Target | None = None) -> tuple[int, list[MindEvalError]]:
    """Return ``(number of valid profiles, problems)``; ``backstory`` also checks the narratives;
    ``target`` (one declaring labels) also checks its labels file against these profiles."""
    p = Path(path)
    if not p.is_file():
        return 0, [MindEvalError("file not found", path=p)]
    problems: list[MindEvalError] = []
    seen: dict[str, int] = {}
    valid = 0
    from ..targets import load_target

    target = target or load_target()  # no target given: the built-in mindeval (no labels)
    labels = target.manifest.labels
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            line_problems = _check_line(p, lineno, line, backstory, seen, target)
            problems += line_problems
            valid += not line_problems
    if not seen and not problems:
        problems.append(MindEvalError("no profiles in file", path=p))
    if labels is not None:
        # Rows with problems have no id: then only the labels file's own values are checked.
        problems += target.label_problems(profile_ids=[] if problems else list(seen))
    return valid, problems


def _check_line(p: Path, lineno: int, line: str, backstory: bool, seen: dict[str, int],
                target: Target) -> list[MindEvalError]:
    def err(msg: str, field: str | None = None) -> MindEvalError:
        return MindEvalError(msg, path=p, line=lineno, field=field)

    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return [err(f"malformed JSON ({exc.msg} at column {exc.colno})")]
    if not isinstance(obj, dict):
        return [err("each line must be a JSON object")]
    out: list[MindEvalError] = []
    for key in obj:
        if key not in TOP_LEVEL:
            out.append(err(f"unknown field (expected {', '.join(TOP_LEVEL)})", key))
    attrs = obj.get("member_attributes")
    if not isinstance(attrs, dict):
        out.append(err("missing required field" if attrs is None else "must be an object",
                       "member_attributes"))
        return out
    labels = target.manifest.labels
    for key in attrs:
        if labels is not None and key in labels.fields:
            out.append(err(f"{key} is a label of target {target.name}: give it in "
                           f"{labels.file}, not in the profile", f"member_attributes.{key}"))
        elif key not in ATTRIBUTE_FIELDS:
            out.append(err("unknown attribute", f"member_attributes.{key}"))
    for key in ATTRIBUTE_FIELDS:
        if isinstance(attrs.get(key), str) and not attrs[key].strip():
            out.append(err("empty value", f"member_attributes.{key}"))
    try:
        profile = Profile.model_validate(obj)
    except ValidationError as exc:
        for e in exc.errors():
            msg = "missing required field" if e["type"] == "missing" else e["msg"]
            out.append(err(msg, _loc(e)))
        return out
    if out:
        return out
    pid = profile.id
    if pid in seen:
        out.append(err(f"duplicate of the profile on line {seen[pid]}"))
    else:
        seen[pid] = lineno
    if backstory:
        if not profile.member_narrative.strip():
            out.append(err("no backstory", "member_narrative"))
        else:
            _, issues = check_backstory(profile.member_narrative, profile.name)
            out += [err(issue, "member_narrative") for issue in issues]
    return out
