"""The package graph is a tree from the command lines down to the records.

Imports are read with ``ast`` (module level and inside functions alike), so a lazy
import counts as much as a top-level one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("mindeval", "metaeval", "annotation_app")
# The command lines sit on top: they may import anything.
CLI = ("mindeval.cli", "mindeval.commands", "mindeval.__main__", "metaeval.cli")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (``from x import y`` gives x and x.y)."""
    mod = _module(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


GRAPH = {_module(p): _imports(p) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _offenders(importers: tuple[str, ...], forbidden: tuple[str, ...], exempt: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        f"{mod} imports {name}"
        for mod, names in GRAPH.items()
        if _within(mod, importers) and not _within(mod, exempt)
        for name in names
        if _within(name, forbidden)
    )


def test_the_graph_was_read():
    assert "mindeval.records" in GRAPH and "metaeval.sources" in GRAPH and len(GRAPH) > 50


@pytest.mark.parametrize(
    ("importers", "forbidden", "exempt"),
    [
        # the library never reaches up into the app, the meta-evaluation or the command lines
        (("mindeval",), ("annotation_app", "metaeval", "mindeval.cli", "mindeval.commands"), CLI),
        # the meta-evaluation reads app data through mindeval.store, never through the app
        (("metaeval",), ("annotation_app",), ()),
        # profiles (sampling, download, backstories) sit below the benchmark runner
        (("mindeval.profiles",), ("mindeval.runner",), ()),
        # the stores sit below the runner and the judge
        (("mindeval.store", "mindeval.llm"), ("mindeval.runner", "mindeval.judge"), ()),
    ],
)
def test_no_upward_imports(importers, forbidden, exempt):
    assert _offenders(importers, forbidden, exempt) == []


def test_records_import_nothing_of_mindeval_but_errors():
    mine = {n for n in GRAPH["mindeval.records"] if _within(n, ("mindeval",))}
    assert mine <= {"mindeval.errors", "mindeval.errors.MindEvalError", "mindeval.files", "mindeval.files.atomic_write"}
    # mindeval.files (the one atomic writer) is a leaf: standard library only
    assert not {n for n in GRAPH["mindeval.files"] if _within(n, ("mindeval",))}


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    src = ROOT / "mindeval" / "runner.py"
    names = _imports(src)
    assert "mindeval.records" in names and "mindeval.store.calls" in names


def _definitions() -> dict[str, list[str]]:
    """Module-level classes, functions and assignments of every package module, by name."""
    out: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                    names = [node.name]
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [t.id for t in targets if isinstance(t, ast.Name)]
                else:
                    continue
                for name in names:
                    out.setdefault(name, []).append(_module(path))
    return out


@pytest.mark.parametrize("name", ["AXES", "ROLES", "OPENING_LINE", "EMBEDDED_DEFAULTS", "CriteriaMapping",
                                  "load_mapping", "AUTHORS_FEWSHOT_IDS", "read_run", "check_scores",
                                  "atomic_write", "DEFAULT_MODEL"])
def test_each_concept_has_one_home(name):
    assert len(_definitions().get(name, [])) == 1, _definitions().get(name)
