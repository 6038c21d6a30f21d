"""The building blocks of the YAML schemas (guidelines, manifest): checked text and ids,
frozen models that forbid unknown fields, and the problems a cross-field check reports."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, field_validator

from ..config import SNAKE_CASE


def nonblank(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


def snake(value: str, what: str = "id") -> str:
    if not SNAKE_CASE.match(value):
        raise ValueError(f"{what} '{value}' must be snake_case (a-z, 0-9, underscores)")
    return value


Text = Annotated[str, AfterValidator(lambda v: nonblank(v, "text"))]


class Problems(ValueError):
    """Problems found by a cross-field check: ``(sub-location, message)`` pairs."""

    def __init__(self, items: list[tuple[tuple[Any, ...], str]]) -> None:
        super().__init__(items[0][1])
        self.items = items


def raise_problems(items: list[tuple[tuple[Any, ...], str]]) -> None:
    if items:
        raise Problems(items)


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Identified(Frozen):
    """An item named by a snake_case ``id`` (levels, flags, criteria, sub-axes)."""

    id: str

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return snake(v)



def unique_ids(items: list[Any], what: str) -> None:
    seen: dict[str, int] = {}
    for i, x in enumerate(items):
        if x.id in seen:
            raise ValueError(f"duplicate {what} id '{x.id}' (items {seen[x.id]} and {i})")
        seen[x.id] = i
