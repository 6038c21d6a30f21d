"""Clinician verbosity: sentences and words per turn, share of turns over 4 sentences.

Sentence splitter (documented in docs/leaderboard.md):

1. A line break always ends a sentence (list items and paragraphs count separately).
2. Within a line, a sentence ends at ``.``, ``!``, ``?`` or ``…`` (possibly repeated and
   followed by closing quotes or brackets) when whitespace follows — except after a
   common abbreviation (``e.g.``, ``Dr.``, … see ``ABBREVIATIONS``) or a single-letter
   initial. ``3.5`` and ``example.com`` are therefore not split.
3. A piece counts as a sentence only if it contains a letter or digit (so ``...``,
   emoji-only lines and Markdown rules are not sentences).

A word is a run of letters/digits, with inner apostrophes or hyphens kept
(``don't``, ``well-being``) and decimal numbers as one word (``3.5``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel

LONG_TURN_SENTENCES = 4  # a turn with more sentences than this is "long" (paper §4.2, App. D.3)

ABBREVIATIONS: frozenset[str] = frozenset(
    {"e.g", "i.e", "etc", "vs", "dr", "mr", "mrs", "ms", "prof", "st", "jr", "sr", "approx", "cf", "a.m", "p.m"}
)

_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")
_HAS_WORD = re.compile(r"\w")
_WORD = re.compile(r"\d+(?:[.,]\d+)+|\w+(?:['’\-]\w+)*")


def _ends_with_abbreviation(piece: str) -> bool:
    last = piece.rstrip().rsplit(None, 1)[-1] if piece.strip() else ""
    if not last.endswith("."):
        return False
    token = last[:-1].lstrip("(\"'“‘").lower()
    return token in ABBREVIATIONS or (len(token) == 1 and token.isalpha())


def _pieces(line: str) -> list[str]:
    cuts = [m.end() for m in _END.finditer(line)]
    starts = [0, *cuts]
    return [line[a:b] for a, b in zip(starts, [*cuts, len(line)], strict=True)]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` by the rules in the module docstring."""
    sentences: list[str] = []
    for line in text.splitlines():
        pending = ""
        for piece in _pieces(line):
            pending += piece
            if _ends_with_abbreviation(pending):
                continue
            if _HAS_WORD.search(pending):
                sentences.append(pending.strip())
            pending = ""
        if _HAS_WORD.search(pending):
            sentences.append(pending.strip())
    return sentences


def count_words(text: str) -> int:
    return len(_WORD.findall(text))


class VerbosityCounts(BaseModel):
    """Running totals over clinician turns; the ratios are derived properties."""

    turns: int = 0
    sentences: int = 0
    words: int = 0
    long_turns: int = 0

    def add_turns(self, texts: Iterable[str]) -> None:
        for text in texts:
            n = len(split_sentences(text))
            self.turns += 1
            self.sentences += n
            self.words += count_words(text)
            self.long_turns += n > LONG_TURN_SENTENCES

    def _ratio(self, x: int) -> float:
        return x / self.turns if self.turns else float("nan")

    @property
    def sentences_per_turn(self) -> float:
        return self._ratio(self.sentences)

    @property
    def words_per_turn(self) -> float:
        return self._ratio(self.words)

    @property
    def share_long_turns(self) -> float:
        return self._ratio(self.long_turns)
