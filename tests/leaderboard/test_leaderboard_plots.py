"""``mindeval leaderboard --plots``: figures read back (PNG size and header, SVG labels and values)."""

from __future__ import annotations

import json
import re

import pytest

from mindeval.cli import main

PROFILES = [f"p{i:02d}" for i in range(12)]
SEVERE = PROFILES[:6]


def _scores(base: int, spread: int) -> dict[str, list[int]]:
    return {p: [min(6, base + (i + k) % spread) for k in range(5)] for i, p in enumerate(PROFILES)}


@pytest.fixture
def board(make_run, tmp_path):
    runs = [make_run(f"{name}-{turns}", model, _scores(base + (turns == 40), 2), turns=turns, severe=SEVERE)
            for name, model, base in (("good", "openai/good", 4), ("weak", "openai/weak", 1))
            for turns in (20, 40)]
    out = tmp_path / "board"
    assert main(["leaderboard", *map(str, runs), "--allow-mixed", "--out", str(out), "--plots", "--quiet"]) == 0
    return out


def test_every_figure_in_png_and_svg(board):
    for stem in ("leaderboard", "dimensions", "by_severity", "by_turns"):
        png = (board / f"{stem}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000, stem
        svg = (board / f"{stem}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg and len(svg) > 5_000, stem


def _texts(svg: str) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def test_figures_show_the_leaderboards_numbers(board):
    lb = json.loads((board / "leaderboard.json").read_text())
    chart = _texts((board / "leaderboard.svg").read_text())
    for s in lb["table"]["systems"]:
        avg = s["results"]["average"]
        assert s["label"] in chart
        assert f"{avg['mean']:.2f}  cluster {avg['cluster']}" in chart
    assert len({s["results"]["average"]["cluster"] for s in lb["table"]["systems"]}) >= 2
    assert "permutation test (one-sided, alpha 0.05)" in chart
    dims = _texts((board / "dimensions.svg").read_text())
    assert all(axis in dims for axis in ("CAC", "EPC", "AR", "TRA", "ASCQ"))
    severity = _texts((board / "by_severity.svg").read_text())
    assert "severe (n=24)" in severity and "non-severe (n=24)" in severity
    turns = _texts((board / "by_turns.svg").read_text())
    assert "Average score by interaction length (turns)" in turns
    assert "20 (n=24)" in turns and "40 (n=24)" in turns
    assert "openai/good" in turns and "[20 turns]" not in turns  # one clinician, two lengths


def test_plots_need_an_out_dir(make_run, capsys):
    run = make_run("r", "openai/x", _scores(3, 2))
    assert main(["leaderboard", str(run), "--plots", "--quiet"]) == 2
    assert capsys.readouterr().err == "error: --plots: --plots writes figures into --out DIR; give --out\n"
