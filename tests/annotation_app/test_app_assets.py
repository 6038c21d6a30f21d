"""The page scripts survive Streamlit's HTML sanitizer (DOMPurify drops a script whose text holds
``<`` followed by ``/``, ``!`` or a word character, silently: the rating page then loses its
keyboard rating, its unsent-change keeping and its save line)."""

from __future__ import annotations

import re

import pytest

from annotation_app.ui import ASSETS


@pytest.mark.parametrize("name", ["rate_keys.js", "timer.js"])
def test_a_page_script_holds_nothing_the_sanitizer_drops(name):
    text = (ASSETS / name).read_text(encoding="utf-8")
    bad = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if re.search(r"<[/\w!]", line)]
    assert bad == [], f"{name}: DOMPurify would drop the script because of {bad}"


@pytest.mark.parametrize("value", [{"justification": 'a </script> b </title> <!-- c --> "q" & 🙂 ]]>'},
                                   ["</style>", "<b>", "-->"]])
def test_a_marker_attribute_holds_no_markup_and_reads_back_byte_for_byte(value):
    """The stored-state marker's JSON attributes hold no ``<``, ``>`` or ``&`` (the page's HTML
    sanitiser dropped an attribute holding ``</title`` or ``</script``: a justification holding
    one never showed as saved), and JSON.parse of the attribute's text gives the value back."""
    import html
    import json

    from annotation_app.ui import json_attr

    text = json_attr(value)
    assert not re.search(r"[<>]", html.unescape(text))
    assert json.loads(html.unescape(text)) == value
