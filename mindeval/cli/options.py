"""The options ``mindeval`` and ``metaeval`` share, under the same names: model roles, retries,
the target, the judge. Both command lines import them from here (never from each other's commands).

The options of :class:`~mindeval.run_options.RunOptions` fields are generated from the fields
(:mod:`mindeval.cli.fields`); the helpers here add a field's option to a command that has no run
file to merge (its default in the namespace), and read a parsed command line into ``RunOptions``.
"""

from __future__ import annotations

import argparse

from .fields import add_field, add_role, given, role_tokens, seconds  # noqa: F401  (shared argparse types)


def add_role_options(parser: argparse.ArgumentParser, roles=("patient", "clinician", "judge"), *,
                     plain_aliases: bool = False) -> None:
    """``--ROLE MODEL`` and its ``--ROLE-*`` settings, with their defaults in the namespace
    (``metaeval realism``: no run file)."""
    for role in roles:
        add_role(parser, role, suppress=False, plain_aliases=plain_aliases)


def add_api_base_option(p: argparse.ArgumentParser) -> None:
    """``--api-base URL`` (the field's option) with its default in the namespace."""
    add_field(p, "api_base", "r", suppress=False)


def add_overwrite_option(p: argparse.ArgumentParser) -> None:
    add_field(p, "overwrite", "r", suppress=False)


def add_target_option(p: argparse.ArgumentParser) -> None:
    """``--target NAME|PATH`` with its default (``mindeval app admin create-study``)."""
    add_field(p, "target", "r", suppress=False)


def options_of(args: argparse.Namespace, **over):
    """The :class:`~mindeval.run_options.RunOptions` of a command line: each field from its option
    when given (:func:`~mindeval.cli.fields.given`), else the field's default. ``over`` overrides."""
    from pydantic import ValidationError

    from ..config import DEFAULT_TIMEOUT_S
    from ..errors import MindEvalError
    from ..records.io import _validation_message
    from ..run_options import ROLE_FIELDS, RunOptions

    cli = given(args)
    for role in ROLE_FIELDS:  # a role the command offers records its timeout, given or not (as main did)
        if getattr(args, f"_offers_{role}", False):
            cli[role] = {"timeout_s": DEFAULT_TIMEOUT_S[role], **cli.get(role, {})}
    try:
        return RunOptions.model_validate({"out": ".", **cli, **over})
    except ValidationError as exc:  # a value only the model can judge (a server URL, an empty label)
        field, msg = _validation_message(exc)
        raise MindEvalError(msg, field="--" + field.replace(".", "-").replace("_", "-")) from None


def role_spec(args: argparse.Namespace, role: str):
    """Role ``role``'s :class:`~mindeval.llm.gateway.ModelSpec` from its options (a bad value: one line
    naming ``--ROLE-FIELD``)."""
    from pydantic import ValidationError

    from ..errors import MindEvalError
    from ..llm.gateway import ModelSpec
    from ..records.io import _validation_message

    try:
        return ModelSpec.model_validate(given(args).get(role, {}))
    except ValidationError as exc:
        field, msg = _validation_message(exc)
        raise MindEvalError(msg, field=f"--{role}-{field.replace('_', '-')}") from None
