"""No page part injects a script or selects Streamlit's internal elements (they are custom
components: annotation_app/forms.py, annotation_app/panes.py), and none writes HTML from a string."""

from __future__ import annotations

import re

from annotation_app.ui import ASSETS

APP = ASSETS.parent
INTERNALS = re.compile(r"<script|data-testid|st-key-|unsafe_allow_javascript")


def test_no_page_part_injects_a_script_or_selects_streamlit_internals():
    """``grep -rn '<script|data-testid|st-key-|unsafe_allow_javascript' annotation_app`` finds
    nothing: every page part that needs a script is a custom component."""
    found = []
    for path in sorted(APP.rglob("*")):
        if not path.is_file() or path.suffix not in {".py", ".js", ".css", ".html", ".md", ".toml"}:
            continue
        rel = path.relative_to(APP).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if INTERNALS.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == []


def test_the_page_parts_put_text_on_screen_only_through_text_content():
    """No component script of assets/panes/ or assets/forms/ writes HTML from a string."""
    for path in sorted([*(APP / "assets" / "panes").glob("*.js"), *(APP / "assets" / "forms").glob("*.js")]):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", text), path.name
