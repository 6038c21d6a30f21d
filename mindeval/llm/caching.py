"""Prompt caching: every turn resends the whole history, so its prefix should be cached.

OpenAI, Gemini and DeepSeek cache long prefixes automatically; MindEval keeps them
byte-stable (the same system prompt and earlier turns, in the same order and wording).
Anthropic caches only up to explicit ``cache_control`` breakpoints (at most four per
request; a prefix shorter than the model's minimum, 1,024 tokens for Sonnet/Opus, is not
cached). :func:`with_breakpoints` marks, in litellm's content-block format:

* the system prompt;
* the last message, which the next request of the conversation reads, and the last
  message of the previous request (two messages back), which this one reads;
* a caller-given ``stable_prefix`` of the first user message (the judge's scale, rubric
  and examples, the same for every interaction of a run) as its own block, so that every
  judge call after the first reads it. Several nested prefixes (a tuple) each end a block,
  and the first and the last two are marked: a reply-level judge call cuts at the rubric and
  at the end of every reply so far (the same blocks in every call of a conversation) and marks
  the rubric, the previous reply (the previous call wrote it) and its own (the next call reads it). The text sent is unchanged: the message is split
  into two blocks whose concatenation is the original content.

A cache entry can be read only once the request that writes it has been answered; the
first request of a role and model goes alone (:mod:`.limits`), so the first judge call of
a run writes the shared prefix before the others are sent.
"""

from __future__ import annotations

from typing import Any

from .providers import provider_of

EPHEMERAL = {"type": "ephemeral"}
CachePrefix = str | tuple[str, ...] | None  # what a caller marks of the first user message


def uses_breakpoints(model: str) -> bool:
    """True for providers whose prompt cache needs explicit ``cache_control`` breakpoints
    (the provider table's ``breakpoints`` rule: Anthropic; Claude on Bedrock and Vertex)."""
    return provider_of(model).uses_breakpoints(model.partition("/")[2])


def _block(text: str, mark: bool) -> dict[str, Any]:
    return {"type": "text", "text": text, **({"cache_control": EPHEMERAL} if mark else {})}


def with_breakpoints(
    messages: list[dict[str, Any]], *, stable_prefix: CachePrefix = None, history: bool = True,
) -> list[dict[str, Any]]:
    """A copy of ``messages`` with ``cache_control`` breakpoints (see the module docstring).

    ``history=False`` leaves the conversation tail unmarked (a one-off request such as a
    judgment would pay the 1.25x write price for a prefix nobody reads again).
    """
    marks: set[int] = set()
    if history:
        marks |= {len(messages) - 1, len(messages) - 3}
    systems = [i for i, m in enumerate(messages) if m.get("role") == "system"]
    if systems:
        marks.add(systems[-1])
    prefixes = (stable_prefix,) if isinstance(stable_prefix, str) else tuple(stable_prefix or ())
    split, cuts = -1, []
    if prefixes:
        split = next((i for i, m in enumerate(messages) if m.get("role") != "system"), -1)
        content = messages[split].get("content") if split >= 0 else None
        if isinstance(content, str):
            cuts = sorted({len(p) for p in prefixes if p and len(content) > len(p) and content.startswith(p)})
        if not cuts:
            split = -1
    out = []
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, str) and content:
            if i == split:
                ends = [0, *cuts]
                keep = {0, len(cuts) - 2, len(cuts) - 1}  # the first and the last two prefixes
                blocks = [_block(content[a:b], k in keep) for k, (a, b) in enumerate(zip(ends, cuts))]
                m = {**m, "content": [*blocks, _block(content[cuts[-1]:], i in marks)]}
            elif i in marks:
                m = {**m, "content": [_block(content, True)]}
        out.append(m)
    return out
