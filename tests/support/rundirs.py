"""Run directories for tests: made with fake models, or edited by hand."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from mindeval.cli import main


def fake_target_runs(tmp_path: Path, target: Path, clinicians: tuple[str, ...] = ("fake/echo", "fake/slow")) -> list[Path]:
    """One ``mindeval run --target`` per clinician with fake patient and judge; their directories."""
    runs = []
    for clinician in clinicians:
        out = tmp_path / clinician.replace("/", "-")
        assert main(["run", "--target", str(target), "--clinician", clinician, "--patient", "fake/echo",
                     "--judge", "fake/judge", "--out", str(out), "--quiet"]) == 0
        runs.append(out)
    return runs


def summary(run_dir: Path) -> dict:
    """A run directory's ``summary.json``."""
    return json.loads((run_dir / "summary.json").read_text())


def file_digests(run_dir: Path) -> dict[str, str]:
    """SHA-256 of each file directly in ``run_dir``, by name (to show a command wrote nothing)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(run_dir.iterdir()) if p.is_file()}


def set_score(path: Path, index: int, axis: str, value: object) -> None:
    """Overwrite one score of row ``index`` (0-based) in a ``judgments.jsonl``."""
    rows = path.read_text().splitlines()
    row = json.loads(rows[index])
    row["scores"][axis] = value
    rows[index] = json.dumps(row)
    path.write_text("\n".join(rows) + "\n")


def one_session_reply_safety(tmp_path: Path) -> Path:
    """A copy of the shipped ``reply_safety`` target run as one session (no memory step): for tests
    about reply-level judging within one conversation."""
    src = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
    dst = tmp_path / "reply_safety_1"
    shutil.copytree(src, dst)
    manifest = dst / "target.yaml"
    lines = [ln for ln in manifest.read_text().splitlines()
             if ln.strip() not in ("memory: prompts/memory.txt", "next_session: prompts/next_session.txt")]
    text = "\n".join(lines).replace("\nsessions: 2", "\nsessions: 1") + "\n"
    assert "sessions: 1" in text
    manifest.write_text(text)
    return dst
