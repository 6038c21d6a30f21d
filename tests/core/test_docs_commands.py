"""Every command in README.md and docs/*.md runs from a fresh clone as written.

The commands are read from the documents' code blocks. Each one either runs here (in a copy
of the repository's files, with the authors' release fetched by ``mindeval data download``
from a local HTTP server) or is listed in :data:`SKIPS` with the reason; a command that is
neither fails the test, so a new command in the docs is either run or explained. Tables
marked ``<!-- output: COMMAND | SECTION -->`` must equal what COMMAND prints in SECTION.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
SHELL_FENCES = ("", "bash", "sh", "shell", "console")  # other fences (text, yaml, python) are not commands
COMMAND = re.compile(r"(mindeval|metaeval|pip|export)\s|(scripts|\.venv/bin)/\w")

NETWORK = "calls a hosted model or a package index (network, keys)"
PLACEHOLDER = "a placeholder (MODEL, PATH, ...) the reader fills in"
# (regex matched at the start of the command, reason it is not run here)
SKIPS: list[tuple[str, str]] = [
    (r"scripts/start$", "the offline demo: a 5-12 minute embedded-model run, then serves the app "
                        "(tests/llm/test_embedded_e2e.py runs the demo benchmark)"),
    (r"scripts/test\b", "the test suite itself"),
    (r"scripts/setup\b", "creates .venv and installs packages (network)"),
    (r"\.venv/bin/", "needs the .venv that scripts/setup creates"),
    (r"export ", "sets the reader's API keys"),
    (r"pip install", NETWORK),
    (r"mindeval data download$", "fetches from GitHub (network); the test fills the cache the same way "
                                 "from a local mirror with --base-url"),
    (r"mindeval run --profiles official \\?\s*--clinician openai/", NETWORK),
    (r"mindeval run .*--clinician MODEL", PLACEHOLDER),
    (r"mindeval run --target \./my_target \.\.\.", PLACEHOLDER),
    (r"mindeval run --profiles my-full\.jsonl --out runs/mine \.\.\.", PLACEHOLDER),
    (r"mindeval leaderboard RUN_DIR\.\.\. \[", "a synopsis of the options, not a command"),
    (r"mindeval correct runs/fix-a --interaction ID", PLACEHOLDER),
    (r"mindeval run .*--fewshot-file runs/fix-a", "needs the correction above, made with an ID the reader fills "
                                                   "in (tests/core/test_corrections.py runs it)"),
    (r"mindeval profiles generate .*--model openai/", NETWORK),
    (r"mindeval profiles (stats|validate) my-full\.jsonl", "reads my-full.jsonl, written by the network "
                                                          "command before it"),
    (r"metaeval judge .*--judge anthropic/", NETWORK),
    (r"metaeval compare --humans official --judges runs/(judge-)?claude", "reads the judge run written by the "
                                                                         "network command before it"),
    (r"metaeval compare --judges claude=runs/", "reads four judge runs of hosted models"),
    (r"metaeval realism .*--patient local/smollm2 --limit 100", "100 embedded-model calls and the realism "
                                                               "extra (tests/metaeval/test_meta_realism.py)"),
    (r"mindeval run --target crisis --out runs/crisis", "an embedded-model run of 14 profiles x 20 turns "
                                                        "(tests/targets/test_crisis_embedded_e2e.py)"),
    (r"mindeval app admin \S+ \"Crisis pilot\"", "uses runs/crisis, the slow embedded run above"),
    (r"metaeval compare --humans sqlite:///mindeval-app\.db --study \"Crisis pilot\"",
     "uses runs/crisis, the slow embedded run above"),
    (r"mindeval app --db postgresql", "serves the app on a PostgreSQL server"),
    (r"mindeval app serve --db postgresql", "serves N app processes for nginx on a PostgreSQL server "
                                            "(tests/annotation_app/test_app_hosting.py runs it behind a real nginx)"),
    (r"mindeval judge .*--judge openai/", NETWORK),
    (r"mindeval run --patient hosted_vllm/my-model .*--api-base http://127\.0\.0\.1:8000/v1",
     "needs the reader's server on port 8000 (tests/llm/test_api_base.py runs it, keyless, against "
     "the loopback fault server)"),
    (r"mindeval leaderboard runs/sweep/", "reads the runs of the hosted-model sweep before it "
                                          "(tests/cli/test_sweep_rejudge.py runs it with fake models)"),
]
# Commands run here as written but with keyless fake models in place of the hosted ones they name:
# (regex matched at the start of the command, what to replace, by what).
STANDINS: list[tuple[str, str, str]] = [
    (r"mindeval judge runs/sweep/\* ", r"--judge openai/\S+", "--judge fake/judge:b"),
]
# Files a document's commands expect from an earlier step the reader did, made here with fake models.
# The README's sweep (sweep.yaml in docs/running.md) with fake models: runs/sweep/<model> and its leaderboard.
SWEEP = ("printf '%s\\n' 'patient: fake/echo' 'clinicians: [fake/echo:a, fake/echo:b]' 'judge: fake/judge' "
         "'profiles: demo' 'limit: 2' 'turns: 2' 'out: runs/sweep' > sweep.yaml && mindeval run --config sweep.yaml --quiet")
PREPARE: dict[str, list[str]] = {
    "README.md": [SWEEP],
    "docs/running.md": [SWEEP],
    "docs/annotation-app.md": [
        "mindeval run --profiles demo --turns 2 --patient fake/echo --clinician fake/echo --judge fake/judge "
        "--out runs/my-run --quiet",
        # the reader's gold file ("Gold items, qualification and the rater table")
        """printf '%s\\n' '{"item": "demo:demo-harold-1", "expected": {"collaborative_stance": 3}, "tolerance": 1}' """
        "> gold.jsonl",
    ],
    "docs/targets.md": ["cp -r targets/crisis my_target"],  # "copy targets/crisis/, edit it, and run ..."
}


def _commands(doc: str) -> list[str]:
    """Shell commands in the fenced code blocks of ``doc`` (continuations joined, comments dropped)."""
    out: list[str] = []
    fenced = opened = False
    pending = ""
    for raw in (ROOT / doc).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("```"):
            fenced = not opened and line[3:].strip() in SHELL_FENCES
            opened = not opened
            continue
        if not fenced:
            continue
        if pending:
            line = pending + " " + line
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if COMMAND.match(line):
            out.append(re.sub(r"\s+", " ", line))
    return out


def _offline(command: str) -> str:
    """``command`` with the fake models of :data:`STANDINS` in place of hosted ones (else unchanged)."""
    for pattern, old, new in STANDINS:
        if re.match(pattern, command):
            return re.sub(old, new, command)
    return command


def _skip_reason(command: str) -> str | None:
    return next((reason for pattern, reason in SKIPS if re.match(pattern, command)), None)


def test_commands_are_found_and_every_skip_is_used():
    found = {doc: _commands(doc) for doc in DOCS}
    # the README's keyless quickstart and its first metaeval command are run, not skipped
    assert "mindeval leaderboard runs/a runs/b --out board/" in found["README.md"]
    assert "metaeval compare --humans official --out cmp/" in found["README.md"]
    every = [c for cmds in found.values() for c in cmds]
    unused = [p for p, _ in SKIPS if not any(re.match(p, c) for c in every)]
    assert unused == []
    assert all(any(re.match(p, c) for c in every) for p, _, _ in STANDINS)
    # The commands a user reported failing as written are run here (not skipped).
    run = [_offline(c) for c in every if _skip_reason(_offline(c)) is None]
    assert "mindeval judge runs/sweep/* --judge fake/judge:b --out runs/sweep-gpt-4.1" in run
    assert any(c.startswith("metaeval power --humans official ") for c in run)


def test_no_document_points_beside_the_checkout():
    for doc in DOCS:
        assert "../shared" not in (ROOT / doc).read_text(encoding="utf-8"), doc


@pytest.fixture(scope="module")
def release_cache(tmp_path_factory, shared_data) -> Path:
    """The authors' release fetched by ``mindeval data download`` from a local HTTP server."""
    mirror = tmp_path_factory.mktemp("mirror")
    for name in ("profiles.jsonl", "human_annotations.jsonl", "human_user_turns.jsonl"):
        shutil.copyfile(shared_data / name, mirror / name)
    turns_sha = hashlib.sha256((mirror / "human_user_turns.jsonl").read_bytes()).hexdigest()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(mirror))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    cache = tmp_path_factory.mktemp("cache")
    try:
        r = _shell(f"mindeval data download --quiet --base-url http://127.0.0.1:{httpd.server_address[1]} "
                   f"--sha256 human_user_turns.jsonl={turns_sha}", ROOT, cache)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("downloaded") == 3
    return cache


def _shell(command: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(cwd), "MINDEVAL_CACHE_DIR": str(cache)}
    env.pop("MINDEVAL_APP_DB", None)
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _fresh_clone(dest: Path) -> Path:
    """The repository's files (tracked and new, not ignored) copied to ``dest``: a fresh clone."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.mark.parametrize("doc", DOCS)
def test_every_offline_command_runs_as_written(doc, tmp_path, release_cache):
    commands = _commands(doc)
    run = [o for o in map(_offline, commands) if _skip_reason(o) is None]
    if not run:
        pytest.skip(f"{doc}: no offline command ({len(commands)} listed in SKIPS)")
    clone = _fresh_clone(tmp_path / "clone")
    for command in PREPARE.get(doc, []):
        assert _shell(command, clone, release_cache).returncode == 0, command
    for command in run:
        r = _shell(command, clone, release_cache)
        assert r.returncode == 0, f"{doc}: `{command}` exited {r.returncode}: {r.stderr[-1500:]}"
        assert "Traceback" not in r.stderr, command


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _marked_tables() -> list[tuple[str, str, str, list[list[str]]]]:
    """(document, command, section, table rows) for every ``<!-- output: ... -->`` table."""
    out = []
    for doc in DOCS:
        lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"<!-- output: (.+?) \| (.+?) -->$", line.strip())
            if m:
                rows = []
                for row in lines[i + 1:]:
                    if not row.startswith("|"):
                        break
                    rows.append(_cells(row))
                out.append((doc, m.group(1), m.group(2), rows))
    return out


def _printed_table(stdout: str, section: str) -> list[list[str]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("### ") and section in line)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append(_cells(line))
        elif rows:
            break
    return rows


def test_printed_figures_in_the_docs_equal_the_command_output(release_cache):
    tables = _marked_tables()
    assert {doc for doc, *_ in tables} >= {"docs/metaeval.md"}
    printed: dict[str, str] = {}
    for doc, command, section, rows in tables:
        assert _skip_reason(command) is None
        if command not in printed:
            r = _shell(command, ROOT, release_cache)
            assert r.returncode == 0, r.stderr
            printed[command] = r.stdout
        assert rows == _printed_table(printed[command], section), f"{doc}: {command} | {section}"
