"""AppTest: signing in and out, staying signed in across a refresh, admin-only pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from appkit import ADMIN_CODE, APP, DEMO_CODE, all_text, component, new_app, sign_in


def test_a_wrong_code_is_refused_plainly(demo_ws):
    at = sign_in("demo", "WRONG-CODE-0000")
    assert any("do not match" in e.value for e in at.error)
    assert "token" not in at.session_state and "s" not in at.query_params
    assert [t.value for t in at.title] == ["MindEval annotation"]


def test_sign_in_is_case_and_dash_insensitive_and_keeps_the_token_out_of_the_url(demo_ws):
    at = sign_in("Demo", DEMO_CODE.lower().replace("-", " "))
    assert [t.value for t in at.title] == ["Hello, demo"]
    token = at.session_state["token"]
    assert token and not dict(at.query_params)  # nothing in the URL
    # The browser is sent once to the cookie route with a one-time ticket, never the token.
    _, go = component(at, "mindeval_go")
    assert go["target"].startswith("/mindeval/session?t=") and token not in go["target"]
    assert at.get("html") == []  # no injected script

    copied = new_app()  # a copied link with an old-style ?s= token signs nobody in
    copied.query_params["s"] = token
    copied.run()
    assert [t.value for t in copied.title] == ["MindEval annotation"]
    assert "s" not in copied.query_params

    other_tab = new_app()  # the same browser (its cookie) is signed in until sign-out
    other_tab.session_state["token"] = token
    other_tab.run()
    assert [t.value for t in other_tab.title] == ["Hello, demo"]
    at.button(key="sign_out").click().run()
    assert [t.value for t in at.title] == ["MindEval annotation"]
    assert component(at, "mindeval_go")[1]["target"] == "/mindeval/signout"
    other_tab.run()
    assert [t.value for t in other_tab.title] == ["MindEval annotation"]  # revoked everywhere
    assert demo_ws.viewer(token) is None


def _pages(at) -> set[str]:
    return {Path(str(i["script_path"])).stem for i in at._registered_pages.values()}


def test_annotators_do_not_get_admin_pages_admins_do(demo_ws):
    at = sign_in("demo", DEMO_CODE)
    assert _pages(at) == {"home", "rate", "roleplay"}
    with pytest.raises(ValueError):
        at.switch_page("views/admin_results.py")
    # Even run directly, an admin page refuses an annotator's session.
    direct = new_app(APP.parent / "views" / "admin_export.py")
    direct.session_state["token"] = at.session_state["token"]
    direct.run()
    assert any("for study admins" in e.value for e in direct.error)
    assert not direct.get("download_button")

    admin = sign_in("admin", ADMIN_CODE)
    assert {"admin_studies", "admin_people", "admin_results", "admin_export"} <= _pages(admin)
    admin.switch_page("views/admin_results.py").run()
    assert not admin.exception
    assert "Progress" in all_text(admin)


def test_admin_pages_show_progress_means_and_exports(demo_ws):
    admin = sign_in("admin", ADMIN_CODE)
    admin.switch_page("views/admin_studies.py").run()
    assert not admin.exception
    assert "Demo: rate transcripts" in all_text(admin)
    admin.switch_page("views/admin_people.py").run()
    assert not admin.exception and "demo" in all_text(admin)
    admin.switch_page("views/admin_export.py").run()
    assert not admin.exception
    assert admin.get("download_button")
