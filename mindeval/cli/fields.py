"""The command-line options of :class:`~mindeval.run_options.RunOptions`, generated from its fields.

A field's option (name, type, help, metavar, choices, hidden earlier names) comes from the field
itself (:func:`mindeval.run_options.option`); a role's settings from
:data:`~mindeval.run_options.ROLE_SETTINGS`. Nothing here is written per option: adding a field with
its ``option(...)`` metadata adds its option to every command it names.

A generated option has no default in the namespace (``argparse.SUPPRESS``): an option is in the
parsed namespace only when it was given, so :func:`given` knows what the command line said at any
value (a run file loses to ``--seed 0`` too). Its default is shown in the help from the field
(``shown_default``, read by :class:`mindeval.cli.DefaultsFormatter`).
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import DEFAULT_TIMEOUT_S
from ..errors import MindEvalError
from ..profiles.official import release_arg
from ..run_options import ROLE_FIELDS, ROLE_SETTINGS, RunOptions, cli_meta
from ..sampling import sampling_arg
from . import at_least, out_dir

COMMAND_LETTERS = {"run": "r", "judge": "j", "metaeval judge": "m"}


def _by_command(value: Any, command: str) -> Any:
    """``value``, or its entry for ``command`` when given by command (``{"r": ..., "jm": ...}``)."""
    if isinstance(value, dict):
        return next((v for k, v in value.items() if command in k), None)
    return value


def value_type(name: str) -> type:
    """Field ``name``'s value type (``int | None`` is ``int``)."""
    ann = RunOptions.model_fields[name].annotation
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        ann = next(a for a in typing.get_args(ann) if a is not type(None))
    return typing.get_origin(ann) or ann  # type: ignore[return-value]


def _bound(name: str, key: str) -> Any:
    for m in RunOptions.model_fields[name].metadata:
        if hasattr(m, key):
            return getattr(m, key)
    return None


def _argparse_kwargs(name: str, flag: str, meta: dict[str, Any]) -> dict[str, Any]:
    """How field ``name`` reads on the command line: action, type, choices."""
    kind = value_type(name)
    if kind is bool:
        return {"action": "store_true"}
    if kind is dict:
        return {"action": "append", "type": role_tokens}
    if meta.get("choices"):
        return {"choices": list(meta["choices"])}
    if kind is Path:
        return {"type": out_dir(flag)}
    if meta.get("release"):
        return {"type": release_arg(meta["release"])}
    if meta.get("url"):
        return {"type": server_url_arg(flag)}
    if kind is int:
        low, high = _bound(name, "ge"), _bound(name, "le")
        return {"type": int if low is None else at_least(flag, low, high)}
    if kind is float:
        return {"type": seconds(flag) if _bound(name, "gt") == 0 else float}
    return {}


def _group(parser: argparse.ArgumentParser, title: str) -> Any:
    """The parser's argument group ``title`` (made once)."""
    found = [g for g in parser._action_groups if g.title == title]
    return found[0] if found else parser.add_argument_group(title)


def _shown(action: argparse.Action, default: Any) -> argparse.Action:
    action.shown_default = default  # type: ignore[attr-defined]
    return action


def add_field(parser: argparse.ArgumentParser | Any, name: str, command: str, *, suppress: bool = True) -> None:
    """Field ``name``'s option for ``command`` (``r``, ``j``, ``m``) and its hidden earlier names.
    ``suppress`` False: the field's default in the namespace (commands with no run file to merge)."""
    meta = cli_meta(name)
    if name in ROLE_FIELDS:
        return add_role(parser, name, command, suppress=suppress)
    flag = "--" + name.replace("_", "-")
    field = RunOptions.model_fields[name]
    default = None if field.is_required() else field.get_default(call_default_factory=True)
    required = command in meta.get("required", "")
    kw = _argparse_kwargs(name, flag, meta)
    if meta.get("metavar") and kw.get("action") != "store_true" and "choices" not in kw:
        kw["metavar"] = meta["metavar"]
    owner = _group(parser, meta["group"]) if meta.get("group") else parser
    help_text = _by_command(meta.get("help", field.description), command)
    action = owner.add_argument(flag, dest=name, required=required, help=help_text,
                                default=argparse.SUPPRESS if suppress or required else default, **kw)
    _shown(action, None if required or kw.get("action") == "append" else default)
    for letters, aliases in meta.get("aliases", {}).items():
        if command in letters:
            hidden = _argparse_kwargs(name, aliases[0], meta)  # an error names the alias given
            owner.add_argument(*aliases, dest=name, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **hidden)


def add_role(parser: argparse.ArgumentParser, role: str, command: str = "r", *, suppress: bool = True,
             plain_aliases: bool = False) -> None:
    """``--ROLE MODEL`` and ``--ROLE-temperature`` etc. (:data:`~mindeval.run_options.ROLE_SETTINGS`)
    in the group "ROLE model"; ``plain_aliases`` also reads the earlier ``--temperature`` etc. (hidden)."""
    meta = cli_meta(role)
    g = parser.add_argument_group(f"{role} model")
    required = command in meta.get("required", "")
    model = RunOptions.model_fields[role].get_default().model
    action = g.add_argument(f"--{role}", dest=role, required=required, metavar="MODEL", help=meta["help"],
                            default=argparse.SUPPRESS if suppress or required else model)
    _shown(action, None if required else model)
    parser.set_defaults(**{f"_offers_{role}": True})  # options_of gives an offered role its default timeout
    plain = command == "m" or plain_aliases
    for setting, s in ROLE_SETTINGS.items():
        if s["suffix"] is None:
            continue
        flag = f"--{role}{s['suffix']}"
        kind = {"sampling": sampling_arg(flag, setting), "seconds": seconds(flag), "int": int,
                "at_least": at_least(flag), "url": server_url_arg(flag)}.get(s.get("type", ""))
        timeout = DEFAULT_TIMEOUT_S.get(role, 0.0)
        shown = timeout if setting == "timeout_s" else None
        help_text = s.get("help", s["description"])
        action = g.add_argument(flag, dest=f"{role}.{setting}", type=kind, metavar=s["metavar"],
                                choices=s.get("choices"), help=help_text.format(timeout=timeout) if help_text else None,
                                default=argparse.SUPPRESS if suppress or shown is None else shown)
        _shown(action, shown)
        if plain and s.get("plain"):
            g.add_argument(s["suffix"].replace("-", "--", 1), dest=f"{role}.{setting}", type=kind,
                           choices=s.get("choices"), default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def add_fields(parser: argparse.ArgumentParser, command: str) -> None:
    """Every :class:`RunOptions` field ``command`` offers, in the model's order (roles first)."""
    for name in RunOptions.model_fields:
        if command in cli_meta(name)["commands"]:
            add_field(parser, name, command)


def given(args: argparse.Namespace) -> dict[str, Any]:
    """The run-file keys the command line gave (present in the namespace: at any value); a role as
    the mapping of its given settings (``{"model": ..., "temperature": ...}``)."""
    a = vars(args)
    out: dict[str, Any] = {}
    for name in RunOptions.model_fields:
        if name in ROLE_FIELDS:
            spec = {"model": a[name]} if name in a else {}
            spec.update({k.split(".", 1)[1]: v for k, v in a.items() if k.startswith(name + ".")})
            if spec:
                out[name] = spec
        elif name in a and a[name] is not argparse.SUPPRESS:
            out[name] = dict(a[name]) if isinstance(a[name], list) and value_type(name) is dict else a[name]
    return out


def merged(keys: dict[str, Any], cli: dict[str, Any]) -> dict[str, Any]:
    """A run file's ``keys`` with the command line's (``cli``: :func:`given`) over them: an option
    wins at any value; a role's given settings replace only those settings (of each swept model)."""
    out = dict(keys)
    for name, value in cli.items():
        if name in ROLE_FIELDS and "model" not in value and name in keys:
            out[name] = [_with(m, value) for m in keys[name]] if isinstance(keys[name], list) \
                else _with(keys[name], value)
        else:
            out[name] = value
    return out


def _with(spec: Any, settings: dict[str, Any]) -> dict[str, Any]:
    base = {"model": spec} if isinstance(spec, str) else dict(spec if isinstance(spec, dict) else spec.model_dump())
    return {**base, **settings}


def role_tokens(text: str) -> tuple[str, int]:
    """``ROLE=N`` of ``--assume-reply-tokens``."""
    role, _, n = text.partition("=")
    if role not in ("patient", "clinician", "judge") or not n.isdigit() or int(n) < 1:
        raise MindEvalError(f"expected ROLE=N with ROLE patient, clinician or judge and N >= 1, got {text!r}",
                            field="--assume-reply-tokens")
    return role, int(n)


def server_url_arg(option: str):
    """An argparse ``type``: an OpenAI-compatible server URL (:func:`mindeval.llm.gateway.server_url`)."""
    from ..llm.gateway import server_url

    def parse(text: str) -> str:
        try:
            return server_url(text)
        except ValueError as exc:
            raise MindEvalError(str(exc), field=option) from None

    parse.__name__ = "URL"
    return parse


def checked(option: str, name: str, ok: Callable[[Any], bool], problem: str, convert: Callable[[str], Any] = str):
    """An argparse ``type`` named ``name``: ``convert(text)``, refused in one line naming ``option``
    (``problem``, with ``{text}``) unless ``ok`` holds for the value."""

    def parse(text: str) -> Any:
        value = convert(text)
        if not ok(value):
            raise MindEvalError(problem.format(text=text), field=option)
        return value

    parse.__name__ = name
    return parse


def positive_number(option: str):
    """An argparse ``type``: a finite number above 0 (``nan``, ``inf``, 0 and below are errors)."""
    import math

    return checked(option, "float", lambda v: math.isfinite(v) and v > 0,
                   "must be a finite number above 0, got {text}", float)


def nonempty_text(option: str):
    """An argparse ``type``: text with something in it."""
    return checked(option, "text", lambda v: bool(v.strip()), "must not be empty")


def existing_file(option: str):
    """An argparse ``type``: a file that exists (read later; a typo must not be ignored)."""
    return checked(option, "file", lambda v: Path(v).is_file(), "file not found: {text}")


def name_list(option: str):
    """An argparse ``type``: comma-separated names, at least one (the text as given)."""
    return checked(option, "names", lambda v: any(n.strip() for n in v.split(",")),
                   "names no one: give comma-separated names, got {text!r}")


def seconds(option: str):
    """An argparse ``type``: a positive number of seconds."""
    return checked(option, "float", lambda v: v > 0, "must be more than 0 seconds, got {text}", float)


def listen_host(option: str):
    """An argparse ``type``: an address to listen on (an IP address or a host name)."""
    import ipaddress
    import re

    label = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"

    def ok(text: str) -> bool:
        try:
            ipaddress.ip_address(text.strip("[]"))
            return True
        except ValueError:
            return len(text) <= 253 and re.fullmatch(rf"{label}(?:\.{label})*", text) is not None

    return checked(option, "host", ok, "is not an IP address or host name: {text!r}")


def model_string(option: str):
    """An argparse ``type``: a model string whose provider is known (``PROVIDER/MODEL``)."""
    from ..llm.gateway import check_model_string

    def ok(text: str) -> bool:
        try:
            check_model_string(text)
        except MindEvalError as exc:
            raise MindEvalError(exc.message, field=option) from None
        return True

    return checked(option, "model", ok, "{text}")

