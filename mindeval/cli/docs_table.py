"""The table of run-file keys in ``docs/configuration.md``, generated from the fields of
:class:`~mindeval.run_options.RunOptions` (and :data:`~mindeval.run_options.ROLE_SETTINGS`).

Regenerate it after adding or changing a run option::

    python -m mindeval.cli.docs_table          # rewrites the table between its markers
    python -m mindeval.cli.docs_table --check  # exit 1 when the table is stale (the tests do this)
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..run_options import ROLE_FIELDS, ROLE_SETTINGS, RunOptions, cli_meta, cli_option

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
BEGIN = "<!-- table generated from mindeval/run_options.py by `python -m mindeval.cli.docs_table` -->"
END = "<!-- end of the generated table -->"
HEADER = "| key | option | commands | default | meaning |\n|---|---|---|---|---|"


def _letters(commands: str) -> str:
    return " ".join(commands) or "file, API"  # no command-line option: a run file's or the API's key


def _default(name: str) -> str:
    meta, field = cli_meta(name), RunOptions.model_fields[name]
    if "doc_default" in meta:
        return meta["doc_default"]
    if field.is_required():
        return "—"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "—"
    return f"`{str(value).lower() if isinstance(value, bool) else value:g}`" if isinstance(value, float) \
        else f"`{str(value).lower() if isinstance(value, bool) else value}`"


def _role_rows() -> list[str]:
    commands = {role: _letters(cli_meta(role)["commands"]) for role in ROLE_FIELDS}
    first = commands[ROLE_FIELDS[0]]
    said = first + "".join(f"; {r}: {c}" for r, c in commands.items() if c != first)
    role = cli_meta(ROLE_FIELDS[0])
    rows = [f"| `ROLE.model` | `--ROLE` | {said} | {role['doc_default']} | "
            f"{RunOptions.model_fields[ROLE_FIELDS[0]].description} |"]
    for setting, s in ROLE_SETTINGS.items():
        option = f"`--ROLE{s['suffix']}`" if s["suffix"] else "—"
        rows.append(f"| `ROLE.{setting}` | {option} | {s.get('doc_commands', 'as `ROLE`')} | {s['doc_default']} | "
                    f"{s['description']} |")
    return rows


def table() -> str:
    """The Markdown table of every run-file key, in the model's order (the roles' settings first)."""
    rows = [HEADER, *_role_rows()]
    for name, field in RunOptions.model_fields.items():
        if name in ROLE_FIELDS:
            continue
        meta = cli_meta(name)
        option = f"`{cli_option(name)}`" if cli_option(name) else "—"
        commands = meta.get("doc_commands") or _letters(meta["commands"])
        rows.append(f"| `{name}` | {option} | {commands} | {_default(name)} | {field.description} |")
    return "\n".join(rows)


def rewrite(text: str) -> str:
    """``docs/configuration.md``'s ``text`` with the generated table between its markers."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC}: the markers of the generated table are missing ({BEGIN!r} ... {END!r})")
    head, rest = text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{rest.split(END, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = DOC.read_text(encoding="utf-8")
    new = rewrite(text)
    if "--check" in args:
        if new != text:
            print(f"{DOC} is stale: run `python -m mindeval.cli.docs_table`", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    print(f"wrote the table of {DOC}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
