"""Leaderboards over benchmark runs: Table-4 statistics, Fig-3 breakdowns, Table-5 agreement.

``build_leaderboard(run_dirs, StatsSettings(...))`` loads run directories and computes
everything; ``write_outputs(lb, out_dir)`` writes Markdown, CSV, LaTeX and JSON.
"""

from .build import Leaderboard, build_leaderboard, with_human_scale
from .loading import RunData, load_run
from .render import to_json, to_latex, to_markdown, write_outputs
from .table import MIN_RESAMPLES, StatsSettings, SystemScores, Table, compute_table

__all__ = [
    "MIN_RESAMPLES",
    "Leaderboard",
    "RunData",
    "StatsSettings",
    "SystemScores",
    "Table",
    "build_leaderboard",
    "compute_table",
    "load_run",
    "to_json",
    "to_latex",
    "to_markdown",
    "with_human_scale",
    "write_outputs",
]
