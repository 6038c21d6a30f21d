"""The embedded model's reply clean-up, on text alone (no model needed)."""

from __future__ import annotations

from mindeval.llm.embedded import clean_reply


def test_a_sentence_still_being_streamed_does_not_count_towards_the_cap():
    assert clean_reply("Your", max_sentences=1, partial=True) == ("Your", False)
    text, complete = clean_reply("Your feelings matter. And", max_sentences=1, partial=True)
    assert complete and text.startswith("Your feelings matter.")
    assert clean_reply("Your feelings matter. And", max_sentences=1) == ("Your feelings matter.", True)


def test_a_repeated_sentence_ends_the_reply_and_debris_is_dropped():
    raw = "A: I hear you. [insert your chat message here]\nI hear you. I hear you."
    assert clean_reply(raw) == ("I hear you.", True)
    # a sentence of an earlier reply is dropped, not a reason to end the reply
    assert clean_reply("That sounds hard. Tell me more.", earlier=["That sounds hard."]) == ("Tell me more.", False)
    assert clean_reply("That sounds hard.", earlier=["That sounds hard."]) == ("", False)


def test_a_reply_cut_by_the_token_limit_ends_on_a_whole_sentence():
    assert clean_reply("It is okay. You can tell me mo", truncated=True) == ("It is okay.", False)
