"""metaeval: judges and simulated patients against human experts.

``metaeval.compare(humans=[...], judges=["A=DIR", ...], resamples=1000)`` returns frames
(:class:`metaeval.api.CompareFrames`); imported lazily so ``import metaeval`` stays light. The
computation lives in :mod:`metaeval.comparison` (``run_compare``, ``CompareOptions``).
"""

from __future__ import annotations

from typing import Any


def compare(*args: Any, **kwargs: Any) -> Any:
    """See :func:`metaeval.api.compare`."""
    from .api import compare as _compare

    return _compare(*args, **kwargs)
