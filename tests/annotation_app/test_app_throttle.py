"""Sign-in throttling and the audit log: failures are recorded (never the code), slowed per
name and per client, and remembered across a restart."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from appkit import ADMIN_CODE, DEMO_CODE, all_text, sign_in
from sqlalchemy import select

from annotation_app.services import SYSTEM, SignInThrottled, Workspace
from annotation_app.store import signins
from annotation_app.store.tables import SignInEventRow, as_utc


def _age(ws: Workspace, seconds: float) -> None:
    """Pretend every logged attempt happened ``seconds`` earlier."""
    with ws.db.write() as s:
        for row in s.scalars(select(SignInEventRow)):
            row.at = as_utc(row.at) - timedelta(seconds=seconds)


def test_failures_are_audited_slowed_per_name_and_survive_a_restart(demo_ws, tmp_db_url, caplog):
    caplog.set_level(logging.DEBUG)
    for _ in range(signins.FREE_FAILURES):
        assert demo_ws.sign_in("Demo", "WRONG-CODE-0001", client="10.0.0.7") is None
    with pytest.raises(SignInThrottled) as err:  # even the right code must wait now
        demo_ws.sign_in("demo", DEMO_CODE, client="10.0.0.7")
    assert 25 <= err.value.retry_after <= 30
    assert "wait about 1 minute" in str(err.value)

    restarted = Workspace(tmp_db_url)  # a server restart does not reset the count
    with pytest.raises(SignInThrottled):
        restarted.sign_in("demo", DEMO_CODE, client="10.0.0.8")
    assert restarted.sign_in("admin", ADMIN_CODE, client="10.0.0.7") is not None  # other names are fine

    _age(restarted, 31)
    assert restarted.sign_in("demo", "WRONG-CODE-0002", client="10.0.0.7") is None  # one more try …
    with pytest.raises(SignInThrottled) as err:  # … and the wait doubles
        restarted.sign_in("demo", DEMO_CODE, client="10.0.0.7")
    assert 55 <= err.value.retry_after <= 60
    _age(restarted, 61)
    assert restarted.sign_in("demo", DEMO_CODE, client="10.0.0.7") is not None
    assert restarted.sign_in("demo", "WRONG-CODE-0003") is None  # a success cleared the count
    assert restarted.sign_in("demo", DEMO_CODE) is not None

    log = restarted.signin_events(SYSTEM)
    assert [e.outcome for e in log].count("failed") == 7 and [e.outcome for e in log].count("throttled") == 3
    assert {e.name for e in log} == {"demo"} and log[0].at > log[-1].at
    with restarted.db.read() as s:
        stored = " ".join(f"{r.name_key} {r.client} {r.outcome}" for r in s.scalars(select(SignInEventRow)))
    for code in ("WRONG-CODE-0001", "WRONGCODE0001", DEMO_CODE):
        assert code not in stored and code not in caplog.text
    assert "sign-in failed for name 'demo' from 10.0.0.7" in caplog.text
    restarted.close()


def test_one_client_trying_many_names_is_slowed(demo_ws):
    for n in range(signins.CLIENT_FREE_FAILURES):
        assert demo_ws.sign_in(f"guess{n}", "WRONG-CODE-0001", client="10.9.9.9") is None
    with pytest.raises(SignInThrottled):
        demo_ws.sign_in("demo", DEMO_CODE, client="10.9.9.9")
    assert demo_ws.sign_in("demo", DEMO_CODE, client="10.1.1.1") is not None


def test_the_sign_in_page_says_to_wait_and_the_admin_sees_the_log(demo_ws):
    for _ in range(signins.FREE_FAILURES):
        sign_in("demo", "WRONG-CODE-0001")
    at = sign_in("demo", DEMO_CODE)
    assert any("too many failed sign-ins" in e.value.lower() for e in at.error)
    assert "token" not in at.session_state
    admin = sign_in("admin", ADMIN_CODE)
    admin.switch_page("views/admin_people.py").run()
    assert not admin.exception
    text = all_text(admin)
    assert "Failed sign-ins" in text and "throttled" in text
    assert "WRONG-CODE" not in text
    _age(demo_ws, 3600)  # an hour later the name may try again
    assert [t.value for t in sign_in("demo", DEMO_CODE).title] == ["Hello, demo"]
