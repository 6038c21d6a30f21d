"""What every figure a test makes shows, read from matplotlib as it saves it.

:func:`record_figures` wraps ``Figure.savefig``: for each saved file it keeps the smallest font
of the visible text, the texts, each axes' y-range and whether its bars and points carry error
bars, so a test can assert what a reader sees (intervals, n, axis range, legible text).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel


class AxesFacts(BaseModel):
    ylim: tuple[float, float]
    xlim: tuple[float, float]
    bar_sets: int  # bar containers drawn
    bar_sets_with_errors: int  # of those, with error bars
    errorbar_sets: int  # points drawn with ax.errorbar


class FigureFacts(BaseModel):
    min_font_pt: float
    texts: list[str]
    axes: list[AxesFacts]


def _facts(fig: Any) -> FigureFacts:
    from matplotlib.container import BarContainer, ErrorbarContainer
    from matplotlib.text import Text

    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    axes = [AxesFacts(ylim=tuple(ax.get_ylim()), xlim=tuple(ax.get_xlim()),
                      bar_sets=sum(isinstance(c, BarContainer) for c in ax.containers),
                      bar_sets_with_errors=sum(isinstance(c, BarContainer) and c.errorbar is not None
                                               for c in ax.containers),
                      errorbar_sets=sum(isinstance(c, ErrorbarContainer) for c in ax.containers))
            for ax in fig.axes if ax.get_label() != "<colorbar>"]
    return FigureFacts(min_font_pt=min(t.get_fontsize() for t in texts), texts=[t.get_text() for t in texts],
                       axes=axes)


def record_figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, FigureFacts]:
    """``{file name: facts}`` of every figure saved from now on (the files are still written)."""
    from matplotlib.figure import Figure

    seen: dict[str, FigureFacts] = {}
    save = Figure.savefig

    def savefig(self: Figure, fname: Any, *args: Any, **kwargs: Any) -> Any:
        seen[Path(str(fname)).name] = _facts(self)
        return save(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return seen
