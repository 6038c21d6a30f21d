"""YAML and JSON files whose mappings name each key once: a repeated key is an error naming
the file, the line of the repeat and the key (the parsers would silently keep the last value)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .errors import MindEvalError


def _duplicate(path: Path, line: int | None, key: object) -> MindEvalError:
    return MindEvalError("key given twice (the first value would be silently replaced)", path=path, line=line,
                         field=str(key))


def _yaml_loader() -> type:
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            seen: set[object] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise _duplicate(Path(self.name), key_node.start_mark.line + 1, key)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def load_yaml(text: str, path: Path) -> Any:
    """``yaml.safe_load`` that refuses a repeated key (syntax errors raise as yaml's)."""
    loader = _yaml_loader()(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_json(text: str, path: Path) -> Any:
    """``json.loads`` that refuses a repeated key (syntax errors raise as json's)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise _duplicate(path, _line_of_repeat(text, key), key)
            out[key] = value
        return out

    return json.loads(text, object_pairs_hook=pairs)


def _line_of_repeat(text: str, key: str) -> int | None:
    """The line of the second ``"key":`` in ``text`` (the repeat, in the common case)."""
    hits = [m.start() for m in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text)]
    return text.count("\n", 0, hits[1]) + 1 if len(hits) > 1 else None


def key_line(text: str, key: str) -> int | None:
    """The line of the first ``key:`` (YAML) or ``"key":`` (JSON) in ``text``, if any."""
    found = re.search(rf'^[ \t-]*(?:{re.escape(key)}|"{re.escape(key)}"|\'{re.escape(key)}\')[ \t]*:', text,
                      re.MULTILINE)
    if found is None:
        found = re.search(re.escape(json.dumps(key)) + r"\s*:", text)
    return None if found is None else text.count("\n", 0, found.start()) + 1
