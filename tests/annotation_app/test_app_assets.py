"""The page scripts survive Streamlit's HTML sanitizer (DOMPurify drops a script whose text holds
``<`` followed by ``/``, ``!`` or a word character, silently: the role-play page then loses its
clock). The form components' scripts (assets/forms/) are not put through it."""

from __future__ import annotations

import re

import pytest

from annotation_app.ui import ASSETS


@pytest.mark.parametrize("name", ["timer.js"])
def test_a_page_script_holds_nothing_the_sanitizer_drops(name):
    text = (ASSETS / name).read_text(encoding="utf-8")
    bad = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if re.search(r"<[/\w!]", line)]
    assert bad == [], f"{name}: DOMPurify would drop the script because of {bad}"

