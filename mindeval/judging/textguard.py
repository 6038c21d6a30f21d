"""Turn text is data: the one place where a turn is made safe to show to a model.

A patient or clinician turn may contain text that a chat template or a tokenizer would
read as structure. :func:`guard_turn` is applied to every turn before it reaches any
model (the patient's and clinician's views in :mod:`mindeval.simulate`, the judge's
transcript in :mod:`mindeval.judging.render`) and shows what it changed instead of hiding it:

* **Chat-template control sequences** of the common families — ChatML
  (``<|im_start|>``, ``<|im_end|>``), Llama 3 (``<|begin_of_text|>``,
  ``<|start_header_id|>``, ``<|eot_id|>``), Phi (``<|user|>``, ``<|end|>``), any other
  ``<|…|>`` special and its full-width form ``<｜…｜>``, Llama 2 / Mistral (``[INST]``,
  ``[/INST]``, ``<<SYS>>``, ``<</SYS>>``, ``<s>``, ``</s>``, ``[SYSTEM_PROMPT]``,
  ``[TOOL_CALLS]`` …) and Gemma (``<start_of_turn>``, ``<end_of_turn>``, ``<bos>``,
  ``<eos>``) and the embedded model's (SmolLM2, from StarCoder: ``<repo_name>``, ``<reponame>``,
  ``<file_sep>``, ``<filename>``, ``<gh_stars>``, ``<issue_start>``, ``<issue_comment>``,
  ``<issue_closed>``, ``<jupyter_start>``, ``<jupyter_text>``, ``<jupyter_code>``,
  ``<jupyter_output>``, ``<jupyter_script>``, ``<empty_output>``) — keep their name but their brackets become look-alikes
  (``<|im_start|>`` → ``‹|im_start|›``, ``[INST]`` → ``⁅INST⁆``), so no tokenizer or
  template matches them and a reader still sees them.
* **Control characters** (C0 except ``\\n`` and ``\\t``, DEL, C1; a ``\\r\\n`` line end
  becomes ``\\n``) and **invisible characters** (bidirectional controls, zero-width
  spaces, BOM) are shown as ``<U+XXXX>``.
* **An empty turn** (a clinician that gave no reply after the retries) is shown as
  :data:`NO_REPLY`; it is part of the conversation and judged as such.
* **An over-long turn** is cut after :data:`~mindeval.config.MAX_TURN_CHARS` characters
  and ends with ``[cut: N more characters not shown]``.

The stored turn keeps the model's exact text; only what models are shown is guarded.
"""

from __future__ import annotations

import functools
import re

from ..config import MAX_TURN_CHARS

NO_REPLY = "[no reply]"
CUT_MARK = "[cut: {n} more characters not shown]"

# Invisible characters that can reorder or hide text (bidirectional controls, zero-width
# spaces, BOM) and control characters: shown as visible ``<U+XXXX>``.
_INVISIBLE = frozenset(
    [0x061C, 0x200B, 0x200E, 0x200F, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x180E]
    + list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A))
)
_CONTROL = frozenset(c for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A))
_SHOWN = _INVISIBLE | _CONTROL
_SHOWN_RE = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_SHOWN)) + "]")

# Control sequences of chat templates (case-insensitive, spaces inside brackets tolerated).
_SPECIAL = re.compile(
    r"<\s*\|[^|<>\n]{0,64}\|\s*>"                # ChatML, Llama 3, Phi, any <|...|> special
    r"|<\s*｜[^｜<>\n]{0,64}｜\s*>"               # the full-width form (DeepSeek)
    r"|\[\s*/?\s*(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT)\s*\]"  # Llama 2, Mistral
    r"|<<\s*/?\s*SYS\s*>>"                        # Llama 2 system block
    r"|<\s*/?\s*s\s*>"                            # sentence start / end
    r"|<\s*(?:start_of_turn|end_of_turn|bos|eos|pad|unk|mask)\s*>"  # Gemma
    r"|<\s*(?:repo_?name|file_?sep|filename|gh_stars|issue_(?:start|comment|closed)"  # SmolLM2 / StarCoder
    r"|jupyter_(?:start|text|code|output|script)|empty_output)\s*>"
    r"|<\s*[|｜]|[|｜]\s*>",                   # a lone half of a <|...|> special
    re.IGNORECASE,
)
_LOOKALIKE = str.maketrans({"<": "‹", ">": "›", "[": "⁅", "]": "⁆"})


def visible_text(text: str) -> str:
    """``text`` with control, bidi and zero-width characters replaced by ``<U+XXXX>``."""
    return _SHOWN_RE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text.replace("\r\n", "\n"))


def neutralise(text: str) -> str:
    """``text`` with every chat-template control sequence defanged (brackets as look-alikes)."""
    return _SPECIAL.sub(lambda m: m.group().translate(_LOOKALIKE), text)


def control_sequences(text: str) -> list[str]:
    """The chat-template control sequences ``text`` contains (empty when it is clean)."""
    return _SPECIAL.findall(text)


@functools.lru_cache(maxsize=8192)
def guard_turn(text: str, limit: int = MAX_TURN_CHARS) -> str:
    """A turn as models are shown it: neutralised, visible, cut at ``limit``; empty → :data:`NO_REPLY`.

    Cached: a conversation's earlier turns are shown again at every later call."""
    if not text.strip():
        return NO_REPLY
    cut = ""
    if len(text) > limit:
        cut = "\n" + CUT_MARK.format(n=len(text) - limit)
        text = text[:limit]
    return visible_text(neutralise(text)) + cut
