"""Moving a new sign-in from the Streamlit page into an HttpOnly cookie.

A Streamlit script cannot set cookies, so a successful sign-in issues a one-time
*ticket* (random, 60 s; kept in the database as a hash, see :mod:`annotation_app.store.tickets`,
so any app process behind a proxy can redeem it). The page sends the browser to
``/mindeval/session?t=TICKET``; that route (see :mod:`annotation_app.server`) redeems the
ticket and sets the session cookie: HttpOnly, SameSite=Strict, path ``/``. The session token
itself never appears in a URL, the page or JavaScript.
"""

from __future__ import annotations

COOKIE = "mindeval_session"
SESSION_ROUTE = "/mindeval/session"
SIGNOUT_ROUTE = "/mindeval/signout"
