"""The documented sentence splitter and word counter behind the verbosity breakdown."""

from __future__ import annotations

import pytest

from mindeval.leaderboard.verbosity import VerbosityCounts, count_words, split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Hello. How are you? I am fine!", ["Hello.", "How are you?", "I am fine!"]),
        ("Dr. Smith said e.g. rest helps. It costs 3.5 hours... ok",
         ["Dr. Smith said e.g. rest helps.", "It costs 3.5 hours...", "ok"]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("- breathe slowly\n- take a walk\n\n---\nHow does that sound", ["- breathe slowly", "- take a walk",
                                                                         "How does that sound"]),
        ("Wait... what?! Really…  yes", ["Wait...", "what?!", "Really…", "yes"]),
        ("J. R. R. Tolkien wrote it. Visit example.com today.", ["J. R. R. Tolkien wrote it.",
                                                                "Visit example.com today."]),
        ("", []),
        ("... 🙂", []),
    ],
)
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences


def test_count_words_keeps_contractions_hyphens_and_decimals():
    assert count_words("I don't know; well-being takes 3.5 hours, really.") == 8


def test_verbosity_counts_share_of_long_turns():
    v = VerbosityCounts()
    v.add_turns(["One. Two. Three. Four. Five.", "One. Two. Three. Four.", "Just one sentence here"])
    assert (v.turns, v.sentences, v.long_turns) == (3, 10, 1)
    assert v.sentences_per_turn == pytest.approx(10 / 3)
    assert v.share_long_turns == pytest.approx(1 / 3)
    assert v.words_per_turn == pytest.approx(13 / 3)
