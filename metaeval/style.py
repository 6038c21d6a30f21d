"""Simple writing-style statistics of patient turns (length, punctuation, dashes, case).

Each statistic is a mean over turns; :func:`style_table` gives one row per group of
texts (human, and each patient prompt variant) and :func:`relative_to` divides by
the human row, so 1.0 means "like the humans".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

_WORD = re.compile(r"[A-Za-z0-9'’]+")
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
_PUNCT = re.compile(r"[.,;:!?()\"“”'‘’…\-–—]")
EM_DASH = "—"

STAT_COLUMNS: tuple[str, ...] = (
    "chars", "words", "sentences", "punct_per_100_chars", "commas_per_100_words", "question_marks",
    "exclamation_marks", "em_dashes", "has_em_dash", "ellipses", "newlines", "starts_uppercase",
    "all_lowercase", "uppercase_share",
)


def turn_stats(text: str) -> dict[str, float]:
    """Statistics of one turn."""
    words = _WORD.findall(text)
    letters = [c for c in text if c.isalpha()]
    stripped = text.strip()
    first = next((c for c in stripped if c.isalpha()), "")
    n_words = len(words)
    return {
        "chars": float(len(text)),
        "words": float(n_words),
        "sentences": float(max(1, len(_SENTENCE_END.findall(text)))) if stripped else 0.0,
        "punct_per_100_chars": 100.0 * len(_PUNCT.findall(text)) / max(1, len(text)),
        "commas_per_100_words": 100.0 * text.count(",") / max(1, n_words),
        "question_marks": float(text.count("?")),
        "exclamation_marks": float(text.count("!")),
        "em_dashes": float(text.count(EM_DASH)),
        "has_em_dash": float(EM_DASH in text),
        "ellipses": float(text.count("...") + text.count("…")),
        "newlines": float(text.count("\n")),
        "starts_uppercase": float(first.isupper()) if first else 0.0,
        "all_lowercase": float(bool(letters) and all(c.islower() for c in letters)),
        "uppercase_share": sum(c.isupper() for c in letters) / max(1, len(letters)),
    }


def style_table(groups: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Mean statistics per group (rows) with the number of turns in ``n``."""
    rows = {}
    for name, texts in groups.items():
        stats = [turn_stats(t) for t in texts]
        row = {c: float(np.mean([s[c] for s in stats])) if stats else float("nan") for c in STAT_COLUMNS}
        row["n"] = len(stats)
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")[["n", *STAT_COLUMNS]]


def relative_to(table: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Each statistic divided by the reference row (NaN where the reference is 0)."""
    ref = table.loc[reference, list(STAT_COLUMNS)].replace(0, np.nan)
    return table[list(STAT_COLUMNS)].divide(ref, axis=1)
