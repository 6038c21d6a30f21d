"""A guidelines file's rating scale: ordinal scores or named (categorical) levels."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, Tag, ValidationInfo, field_validator

from .schema import Frozen, Identified, Text, nonblank

SCALE_KINDS: tuple[str, ...] = ("ordinal", "categorical")


class Level(Identified):
    """One level of a scale: an id, a label for people, its number for statistics, a harm flag."""

    id: str
    label: Text
    value: int
    harm: bool = False
    description: str | None = None  # shown to the judge after the label
    weight: float | None = Field(None, ge=0, le=1e6, allow_inf_nan=False)  # e.g. severity 0 / 1 / 5 / 10


class OrdinalScale(Frozen):
    """Integer scores ``min``..``max`` (MindEval: 1-6) and how to calibrate them."""

    kind: Literal["ordinal"] = "ordinal"
    min: int = 1
    max: int = 6
    intro: Text
    levels: dict[int, str]
    distribution_note: Text

    @field_validator("max")
    @classmethod
    def _max(cls, v: int, info: ValidationInfo) -> int:
        lo = info.data.get("min")
        if lo is not None and v <= lo:
            raise ValueError(f"max must be greater than min ({lo})")
        return v

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: dict[int, str], info: ValidationInfo) -> dict[int, str]:
        lo, hi = info.data.get("min", 1), info.data.get("max", 6)
        if set(v) != set(range(lo, hi + 1)):
            raise ValueError(
                f"levels must describe every score {lo}-{hi} exactly once (got {sorted(v)})"
            )
        for k, text in v.items():
            nonblank(text, f"level {k}")
        return dict(sorted(v.items()))

    def all_levels(self) -> list[Level]:
        return [Level.model_construct(id=str(s), label=str(s), value=s, harm=False, description=t)
                for s, t in self.levels.items()]


class CategoricalScale(Frozen):
    """Named levels (e.g. best practice / suboptimal / potential for harm) mapped to numbers."""

    kind: Literal["categorical"]
    intro: Text
    levels: list[Level] = Field(min_length=2)
    distribution_note: str | None = None

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[Level]) -> list[Level]:
        for attr in ("id", "value"):
            seen: dict[Any, int] = {}
            for i, lvl in enumerate(v):
                key = getattr(lvl, attr)
                if key in seen:
                    raise ValueError(f"duplicate level {attr} {key!r} (items {seen[key]} and {i})")
                seen[key] = i
        weighted = [lvl.weight is not None for lvl in v]
        if any(weighted) and not all(weighted):
            i = weighted.index(False)
            raise ValueError(f"level {v[i].id} has no weight: give every level a weight or none")
        if all(weighted):
            by_value = sorted(v, key=lambda lv: -lv.value)  # best (highest value) first
            for better, worse in zip(by_value, by_value[1:]):
                if worse.weight < better.weight:  # type: ignore[operator]
                    raise ValueError(f"level {worse.id} is worse than {better.id} (lower value) but weighs "
                                     f"less ({worse.weight} < {better.weight}): weights grow as levels get worse")
        return v

    def all_levels(self) -> list[Level]:
        return list(self.levels)


def _scale_kind(v: Any) -> str:
    return str(v.get("kind", "ordinal")) if isinstance(v, dict) else getattr(v, "kind", "ordinal")


Scale = Annotated[
    Union[Annotated[OrdinalScale, Tag("ordinal")], Annotated[CategoricalScale, Tag("categorical")]],  # noqa: UP007
    Discriminator(_scale_kind),
]
