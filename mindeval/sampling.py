"""Sampling parameters within the providers' ranges (:data:`~mindeval.config.SAMPLING_RANGES`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .config import SAMPLING_RANGES
from .errors import MindEvalError


def out_of_range(params: Mapping[str, Any]) -> str | None:
    """The first sampling parameter of ``params`` outside its range, as a message (else None)."""
    for name, (low, high) in SAMPLING_RANGES.items():
        value = params.get(name)
        if value is None or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not low <= value <= high:
            return f"{name} must be between {low:g} and {high:g}, got {value:g}"
    return None


def sampling_arg(option: str, name: str) -> Callable[[str], float]:
    """An argparse ``type`` for ``--ROLE-temperature`` and the like: a number within ``name``'s range."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise MindEvalError(f"expected a number, got {text!r}", field=option) from None
        problem = out_of_range({name: value})
        if problem:
            raise MindEvalError(problem, field=option)
        return value

    parse.__name__ = "float"
    return parse
