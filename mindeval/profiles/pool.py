"""The attribute pool: load ``data/attribute_pool/*.yaml`` and check it against what the rules need.

Each YAML file has an ``attributes`` mapping. An attribute lists its ``values``
(a string, or a mapping with ``text`` plus tags), or ``groups`` of values (the group
name becomes the value's ``group``), or, for ``age`` only, an inclusive ``range``.
Tags are checked against :data:`SCHEMA`; every problem names file:line:field.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from ..errors import MindEvalError
from ..records import ATTRIBUTE_FIELDS
from ..resources import data_dir

POOL_DIRNAME = "attribute_pool"


# ------------------------------------------------------------------ YAML with line numbers


class _Map(dict):
    """A mapping that remembers the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[str, int]


class _Seq(list):
    """A sequence that remembers the line of each item (1-based)."""

    line: int = 0
    item_lines: list[int]


class _LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences carry line numbers; duplicate keys are errors."""


def _construct_map(loader: _LineLoader, node: yaml.MappingNode) -> _Map:
    loader.flatten_mapping(node)
    out = _Map()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[str(key)] = key_node.start_mark.line + 1
    return out


def _construct_seq(loader: _LineLoader, node: yaml.SequenceNode) -> _Seq:
    out = _Seq(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


# ------------------------------------------------------------------ schema of the tags


def _enum(*allowed: str) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in allowed else f"must be one of {', '.join(allowed)}"

    return check


def _int_between(lo: int, hi: int) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        ok = isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
        return None if ok else f"must be an integer from {lo} to {hi}"

    return check


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


def _probability(v: Any) -> str | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0
    return None if ok else "must be a number from 0 to 1"


def _positive(v: Any) -> str | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
    return None if ok else "must be a positive number"


def _weights_map(v: Any) -> str | None:
    if not isinstance(v, dict) or not v:
        return "must be a non-empty mapping of profession group to weight"
    for k, w in v.items():
        if not isinstance(k, str) or _positive(w):
            return f"entry {k!r}: weights must be positive numbers"
    return None


_GENERIC_TAGS: dict[str, Callable[[Any], str | None]] = {
    "weight": _positive,
    "min_age": _int_between(0, 130),
    "max_age": _int_between(0, 130),
}


@dataclass(frozen=True)
class AttrSpec:
    """What the rules need from one attribute: tags (name → check), required tags, groups."""

    tags: dict[str, Callable[[Any], str | None]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    groups: tuple[str, ...] | None = None  # required group names (None: no groups needed)
    grouped: bool = False  # values must come in groups
    numeric_range: bool = False


GENDERS = ("female", "male", "neutral")
SEVERITY_LEVELS = (0, 1, 2, 3)

SCHEMA: dict[str, AttrSpec] = {
    "name": AttrSpec(groups=GENDERS, grouped=True),
    "sex": AttrSpec(tags={"gender": _enum("female", "male")}, required=("gender",)),
    "gender_identity": AttrSpec(tags={"gender": _enum(*GENDERS)}, required=("gender",)),
    "sexual_orientation": AttrSpec(tags={"heterosexual": _bool}, required=("heterosexual",)),
    "age": AttrSpec(numeric_range=True),
    "race": AttrSpec(),
    "thought_process": AttrSpec(),
    "general_outlook": AttrSpec(),
    "conversation_style": AttrSpec(),
    "recent_mood": AttrSpec(
        tags={"tone": _enum("low", "anxious", "irritable", "steady")}, required=("tone",)
    ),
    "education": AttrSpec(
        tags={
            "level": lambda v: None if isinstance(v, str) and v else "must be a non-empty name",
            "earning": _enum("low", "middle", "high"),
            "professions": _weights_map,
        },
        required=("level", "min_age", "earning", "professions"),
    ),
    "profession": AttrSpec(grouped=True),
    "employment_status": AttrSpec(
        tags={
            "income": _enum("none", "partial", "full", "pension", "household"),
            "has_profession": _bool,
            "needs_children": _bool,
        },
        required=("income", "has_profession"),
    ),
    "financial_situation": AttrSpec(tags={"tier": _int_between(1, 5)}, required=("tier",)),
    "support_system": AttrSpec(tags={"needs_partner": _bool}),
    "siblings": AttrSpec(),
    "relationship_status": AttrSpec(
        tags={
            "partner": _enum("none", "partner", "spouse"),
            "cohabit": _probability,
            "ex": _bool,
        },
        required=("partner",),
    ),
    "living_situation": AttrSpec(
        tags={
            "household": _enum(
                "alone", "shared", "family", "partner", "spouse", "single_parent", "coparent"
            ),
            "children": _bool,
        },
        required=("household",),
    ),
    "exercise": AttrSpec(tags={"level": _int_between(0, 4)}, required=("level",)),
    "sleep_quality": AttrSpec(
        tags={"pattern": _enum("restful", "disturbed", "oversleeping")}, required=("pattern",)
    ),
    "attitude_towards_mindfulness": AttrSpec(),
    "region": AttrSpec(),
    "depressive_symptoms": AttrSpec(tags={"level": _int_between(0, 3)}, required=("level",)),
    "anxious_symptoms": AttrSpec(tags={"level": _int_between(0, 3)}, required=("level",)),
    "program_goal": AttrSpec(
        tags={"focus": _enum("depression", "anxiety", "general")}, required=("focus",)
    ),
}
assert set(SCHEMA) == set(ATTRIBUTE_FIELDS)


# ------------------------------------------------------------------ models


class PoolValue(BaseModel):
    """One value an attribute can take, with its tags."""

    model_config = ConfigDict(frozen=True)

    text: str
    group: str | None = None
    weight: float = 1.0
    tags: dict[str, Any] = {}
    source: str = ""
    line: int = 0

    def tag(self, name: str, default: Any = None) -> Any:
        return self.tags.get(name, default)

    def fits_age(self, age: int) -> bool:
        lo = self.tags.get("min_age")
        hi = self.tags.get("max_age")
        return (lo is None or age >= lo) and (hi is None or age <= hi)


class PoolAttribute(BaseModel):
    """All values of one attribute (or the numeric range of ``age``)."""

    name: str
    description: str = ""
    values: tuple[PoolValue, ...] = ()
    range: tuple[int, int] | None = None
    source: str = ""
    line: int = 0

    def group(self, name: str) -> list[PoolValue]:
        return [v for v in self.values if v.group == name]

    @property
    def group_names(self) -> list[str]:
        return list(dict.fromkeys(v.group for v in self.values if v.group is not None))

    def texts(self) -> list[str]:
        return [v.text for v in self.values]


class AttributePool(BaseModel):
    """The whole pool: one :class:`PoolAttribute` per profile attribute."""

    directory: str
    sha256: str
    attributes: dict[str, PoolAttribute]

    def __getitem__(self, name: str) -> PoolAttribute:
        return self.attributes[name]

    @property
    def age_range(self) -> tuple[int, int]:
        rng = self.attributes["age"].range
        assert rng is not None
        return rng


# ------------------------------------------------------------------ loading


def default_pool_dir() -> Path:
    return data_dir() / POOL_DIRNAME


_CACHE: dict[tuple[str, str], AttributePool] = {}


def load_pool(directory: str | Path | None = None) -> AttributePool:
    """Load and validate every ``*.yaml`` file of ``directory`` (default: the bundled pool)."""
    d = Path(directory) if directory is not None else default_pool_dir()
    if not d.is_dir():
        raise MindEvalError("attribute pool directory not found", path=d)
    files = sorted(d.glob("*.yaml"))
    if not files:
        raise MindEvalError("no *.yaml files in the attribute pool directory", path=d)
    blobs = [(f, f.read_bytes()) for f in files]
    digest = hashlib.sha256()
    for f, blob in blobs:
        digest.update(f.name.encode() + b"\0" + hashlib.sha256(blob).digest())
    key = (str(d.resolve()), digest.hexdigest())
    if key not in _CACHE:
        _CACHE[key] = _build(d, blobs, digest.hexdigest())
    return _CACHE[key]


def _build(directory: Path, blobs: list[tuple[Path, bytes]], sha: str) -> AttributePool:
    attrs: dict[str, PoolAttribute] = {}
    for path, blob in blobs:
        for attr in _parse_file(path, blob):
            if attr.name in attrs:
                raise MindEvalError(
                    f"attribute defined twice (also in {attrs[attr.name].source}:{attrs[attr.name].line})",
                    path=path, line=attr.line, field=attr.name,
                )
            attrs[attr.name] = attr
    missing = [a for a in ATTRIBUTE_FIELDS if a not in attrs]
    if missing:
        raise MindEvalError(
            f"the pool does not define attribute(s): {', '.join(missing)}", path=directory,
            field=missing[0],
        )
    pool = AttributePool(
        directory=str(directory), sha256=sha,
        attributes={a: attrs[a] for a in ATTRIBUTE_FIELDS},
    )
    _cross_check(pool)
    return pool


def _parse_file(path: Path, blob: bytes) -> Iterable[PoolAttribute]:
    try:
        doc = yaml.load(blob.decode("utf-8"), Loader=_LineLoader)  # noqa: S506 (safe subclass)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise MindEvalError(f"invalid YAML: {exc.problem}", path=path, line=line) from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise MindEvalError(f"invalid YAML: {exc}", path=path) from None
    if not isinstance(doc, _Map) or "attributes" not in doc:
        raise MindEvalError("a pool file must have a top-level 'attributes' mapping", path=path, line=1)
    top = doc["attributes"]
    if not isinstance(top, _Map):
        raise MindEvalError("'attributes' must be a mapping", path=path, line=doc.key_lines["attributes"],
                            field="attributes")
    for name, body in top.items():
        yield _parse_attribute(path, str(name), body, top.key_lines[str(name)])


def _parse_attribute(path: Path, name: str, body: Any, line: int) -> PoolAttribute:
    if name not in SCHEMA:
        raise MindEvalError(
            f"unknown attribute (the profile has: {', '.join(ATTRIBUTE_FIELDS)})",
            path=path, line=line, field=name,
        )
    spec = SCHEMA[name]
    if not isinstance(body, _Map):
        raise MindEvalError("an attribute must be a mapping", path=path, line=line, field=name)
    allowed_keys = {"description", "values", "groups", "range"}
    for key in body:
        if key not in allowed_keys:
            raise MindEvalError(
                f"unknown key '{key}' (allowed: {', '.join(sorted(allowed_keys))})",
                path=path, line=body.key_lines[str(key)], field=f"{name}.{key}",
            )
    description = str(body.get("description") or "").strip()
    if spec.numeric_range:
        return PoolAttribute(
            name=name, description=description, range=_parse_range(path, name, body, line),
            source=str(path), line=line,
        )
    values: list[PoolValue] = []
    if "values" in body:
        if spec.grouped:
            raise MindEvalError("this attribute needs 'groups', not 'values'", path=path,
                                line=body.key_lines["values"], field=name)
        values += _parse_values(path, name, body["values"], None, body.key_lines["values"])
    if "groups" in body:
        groups = body["groups"]
        if not isinstance(groups, _Map) or not groups:
            raise MindEvalError("'groups' must map group names to lists of values", path=path,
                                line=body.key_lines["groups"], field=f"{name}.groups")
        for gname, items in groups.items():
            values += _parse_values(path, name, items, str(gname), groups.key_lines[str(gname)])
    if not values:
        raise MindEvalError("no values", path=path, line=line, field=name)
    seen: dict[str, int] = {}
    for v in values:
        if v.text in seen:
            raise MindEvalError(f"duplicate value {v.text!r} (first at line {seen[v.text]})",
                                path=path, line=v.line, field=name)
        seen[v.text] = v.line
    for g in spec.groups or ():
        if not any(v.group == g for v in values):
            raise MindEvalError(f"missing group '{g}'", path=path, line=line, field=name)
    return PoolAttribute(name=name, description=description, values=tuple(values),
                         source=str(path), line=line)


def _parse_range(path: Path, name: str, body: _Map, line: int) -> tuple[int, int]:
    rng = body.get("range")
    ok = (
        isinstance(rng, list) and len(rng) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in rng)
        and 0 < rng[0] <= rng[1] < 130
    )
    if not ok:
        raise MindEvalError("'range' must be [min, max] with 0 < min <= max < 130", path=path,
                            line=body.key_lines.get("range", line), field=f"{name}.range")
    return int(rng[0]), int(rng[1])


def _parse_values(path: Path, name: str, items: Any, group: str | None, line: int) -> list[PoolValue]:
    where = f"{name}.groups.{group}" if group else f"{name}.values"
    if not isinstance(items, _Seq) or not items:
        raise MindEvalError("must be a non-empty list", path=path, line=line, field=where)
    spec = SCHEMA[name]
    out = []
    for item, item_line in zip(items, items.item_lines):
        out.append(_parse_value(path, name, spec, item, group, item_line))
    return out


def _parse_value(path: Path, name: str, spec: AttrSpec, item: Any, group: str | None, line: int) -> PoolValue:
    if isinstance(item, str):
        raw: dict[str, Any] = {"text": item}
    elif isinstance(item, _Map):
        raw = dict(item)
    else:
        raise MindEvalError("a value must be a string or a mapping with 'text'", path=path,
                            line=line, field=name)
    text = raw.pop("text", None)
    if not isinstance(text, str) or not text.strip():
        raise MindEvalError("missing or empty 'text'", path=path, line=line, field=f"{name}.text")
    checks = {**_GENERIC_TAGS, **spec.tags}
    for tag, val in raw.items():
        if tag not in checks:
            allowed = ", ".join(sorted(checks))
            raise MindEvalError(f"unknown tag '{tag}' (allowed here: {allowed})", path=path,
                                line=line, field=f"{name}.{tag}")
        problem = checks[tag](val)
        if problem:
            raise MindEvalError(f"{problem} (got {val!r})", path=path, line=line, field=f"{name}.{tag}")
    for tag in spec.required:
        if tag not in raw:
            raise MindEvalError(f"missing required tag '{tag}'", path=path, line=line,
                                field=f"{name}.{tag}")
    weight = float(raw.pop("weight", 1.0))
    return PoolValue(text=" ".join(text.split()), group=group, weight=weight, tags=raw,
                     source=str(path), line=line)


# ------------------------------------------------------------------ cross-attribute checks


def _fail(attr: PoolAttribute, message: str, line: int | None = None, field: str | None = None) -> None:
    raise MindEvalError(message, path=attr.source, line=line or attr.line, field=field or attr.name)


def _cross_check(pool: AttributePool) -> None:
    """Checks that span values or attributes, so every rule always has something to draw."""
    for name in ("sex", "gender_identity"):
        attr = pool[name]
        for g in ("female", "male"):
            if not any(v.tag("gender") == g for v in attr.values):
                _fail(attr, f"needs a value with gender: {g}")
    if not any(v.tag("gender") == "neutral" for v in pool["gender_identity"].values):
        _fail(pool["gender_identity"], "needs at least one value with gender: neutral")
    orient = pool["sexual_orientation"]
    for flag in (True, False):
        if not any(v.tag("heterosexual") is flag for v in orient.values):
            _fail(orient, f"needs a value with heterosexual: {str(flag).lower()}")
    for name in ("depressive_symptoms", "anxious_symptoms"):
        attr = pool[name]
        levels = sorted(v.tag("level") for v in attr.values)
        if levels != list(SEVERITY_LEVELS):
            _fail(attr, f"needs exactly one value per level 0-3 (got levels {levels})")
    tiers = {v.tag("tier") for v in pool["financial_situation"].values}
    if tiers != {1, 2, 3, 4, 5}:
        _fail(pool["financial_situation"], f"needs values for every tier 1-5 (got {sorted(tiers)})")
    for name, tag, needed in (("exercise", "level", {0, 1, 2, 3, 4}),
                              ("sleep_quality", "pattern", {"restful", "disturbed", "oversleeping"}),
                              ("program_goal", "focus", {"depression", "anxiety", "general"}),
                              ("recent_mood", "tone", {"low", "anxious", "irritable", "steady"})):
        have = {v.tag(tag) for v in pool[name].values}
        if have != needed:
            _fail(pool[name], f"needs values for every {tag} {sorted(map(str, needed))}")
    groups = set(pool["profession"].group_names)
    used: set[str] = set()
    lo_age = pool.age_range[0]
    for v in pool["education"].values:
        for g in v.tag("professions"):
            if g not in groups:
                _fail(pool["education"], f"unknown profession group '{g}' (groups: {', '.join(sorted(groups))})",
                      line=v.line, field="education.professions")
            used.add(g)
    for g in sorted(groups - used):
        _fail(pool["profession"], f"profession group '{g}' is not reachable from any education level",
              field=f"profession.groups.{g}")
    if not any(v.fits_age(lo_age) for v in pool["education"].values):
        _fail(pool["education"], f"no education level fits the youngest age ({lo_age})")
    for v in pool["relationship_status"].values:
        if v.tag("partner") == "partner" and v.tag("cohabit") is None:
            _fail(pool["relationship_status"], "a 'partner' status needs a 'cohabit' chance",
                  line=v.line, field="relationship_status.cohabit")
