"""What judging one conversation costs, estimated without calling a model (``--dry-run``).

Every request is built as the run builds it (:mod:`.render`; one per clinician reply under
``unit: reply``, with the reply calls' own fields) and priced with the provider's prompt cache
as :func:`mindeval.budget.cached_usage` applies it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..budget import cached_usage, prompt_tokens
from ..records import Usage
from .job import Transcript
from .points import points_fields
from .render import JudgePrompt, build_judge_messages, cache_prefix, reply_cache_prefixes
from .replies import reply_fields


def _tokens(text: str) -> int:
    return prompt_tokens([{"content": text}])


@dataclass(frozen=True)
class JudgeCost:
    """The judge of one run: its model, prompt, assumed reply length and answer code (its length)."""

    model: str
    prompt: JudgePrompt
    reply: int
    nonce: str | None = "0" * 16

    def conversation(self, item: Transcript, labels: Mapping[str, str] | None, samples: int,
                     seen: int) -> tuple[Usage, int, int]:
        """Usage and calls of judging ``item`` ``samples`` times; ``seen``: the tokens of the run-wide
        prefix an earlier request cached (returned updated). The item's context (the notes a session
        started with, the clinician's system prompt) fills the template as the run's judge fills it
        (:meth:`Transcript.context`)."""
        if self.prompt.guidelines.judging_unit == "reply":
            return self._replies(item, labels, samples, seen)
        usage, calls, out = Usage(), 0, seen
        g = self.prompt.guidelines
        requests = [None, *([points_fields(g)] if g.point_criteria else [])]  # a points rubric: one more call
        for k, fields in enumerate(requests):
            text = build_judge_messages(self.prompt, item.profile, item.messages, nonce=self.nonce, labels=labels,
                                        fields=fields, context=item.context())[0]["content"]
            shared = cache_prefix(self.prompt, text, fields)
            end = _tokens(shared) if shared else _tokens(text)
            read = seen if k == 0 else (end if seen and shared else 0)  # each request kind caches its own prefix
            for _ in range(samples):
                usage += cached_usage(self.model, _tokens(text), self.reply, read, end)
                calls += 1
                read = end if shared else 0
            if k == 0:
                out = read
        return usage, calls, out

    def _replies(self, item: Transcript, labels: Mapping[str, str] | None, samples: int,
                 seen: int) -> tuple[Usage, int, int]:
        """Under ``unit: reply`` each reply's request reads what the previous reply's request of
        the conversation cached (the conversation up to that reply)."""
        fields = reply_fields(self.prompt.guidelines, not self.prompt.authors)
        messages = list(item.messages)
        usage, calls, run_wide = Usage(), 0, seen
        for _ in range(samples):
            read = run_wide
            for turn in (i for i, m in enumerate(messages) if m["role"] == "assistant"):
                text = build_judge_messages(self.prompt, item.profile, messages, nonce=self.nonce, fields=fields,
                                            labels=labels, reply_turn=turn, context=item.context())[0]["content"]
                ends = reply_cache_prefixes(text, messages, turn)
                end = _tokens(ends[-1]) if ends else 0
                usage += cached_usage(self.model, _tokens(text), self.reply, read, end)
                calls += 1
                shared = cache_prefix(self.prompt, text, fields)
                run_wide = _tokens(shared) if shared else 0
                read = end
        return usage, calls, run_wide
