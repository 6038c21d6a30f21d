"""What every refusal must look like: one line on stderr, no traceback."""

from __future__ import annotations

import pytest


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    """The captured stderr, asserted to be one line without a Python traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err
