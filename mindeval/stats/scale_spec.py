"""What a target declares about the scale of its rated units, and the records rated on it: the
plain data :mod:`mindeval.stats.reply_scales` computes with (no numpy here: a target loads it)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator

NATURAL_UNITS = frozenset({"mean_weight", "p99_weight", "points_score"})  # every other quantity is a percentage


class ScaleSpec(BaseModel):
    """What a target declares: levels best to worst, their weights, flags, points per criterion."""

    model_config = ConfigDict(frozen=True)

    levels: list[str] = Field(min_length=1)
    weights: dict[str, float] | None = None
    flags: list[str] = Field(default_factory=list)
    points: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> ScaleSpec:
        if len(set(self.levels)) != len(self.levels) or len(set(self.flags)) != len(self.flags):
            raise ValueError("levels and flags must be unique")
        if self.weights is not None and set(self.weights) != set(self.levels):
            raise ValueError("weights must give exactly one weight per level")
        return self


class Rating(BaseModel):
    """One rated unit: ``level`` ``None`` is not relevant; ``flags`` maps every declared flag to 0/1."""

    model_config = ConfigDict(frozen=True)

    profile: str
    conversation: str
    unit: str  # a reply index, a dimension code, or both
    level: str | None
    flags: dict[str, bool] = Field(default_factory=dict)


class CriterionResult(BaseModel):
    """Whether a conversation met one points criterion (``None``: not applicable to it)."""

    model_config = ConfigDict(frozen=True)

    profile: str
    conversation: str
    criterion: str
    met: bool | None


def quantity_names(spec: ScaleSpec, units: Iterable[str] = ()) -> list[str]:
    """The names a headline formula may read for ``spec`` (``pct_`` quantities are percentages);
    with ``units`` (dimension codes) also each quantity over one unit's ratings, ``NAME[CODE]``
    (no ``points_score``: points criteria belong to no dimension)."""
    plain = _plain_names(spec)
    return plain + [f"{q}[{u}]" for u in units for q in plain if q != "points_score"]


def _plain_names(spec: ScaleSpec) -> list[str]:
    out: list[str] = []
    for lv in spec.levels:
        out += [f"pct_{lv}", f"conv_pct_{lv}", f"incident_pct_{lv}", f"worst_pct_{lv}"]
    for fl in spec.flags:
        out += [f"pct_flag_{fl}", f"conv_pct_flag_{fl}", f"incident_pct_flag_{fl}"]
    if spec.weights is not None:
        out += ["mean_weight", "p99_weight"]
    if spec.points:
        out.append("points_score")
    return out
