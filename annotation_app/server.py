"""The app's web server: Streamlit's ASGI app plus security headers and the session-cookie routes.

``mindeval app`` runs ``streamlit run annotation_app/server.py``; Streamlit finds the
``app`` object below and serves ``app.py`` through it. Every HTTP response carries
``X-Frame-Options: DENY`` and ``Content-Security-Policy: frame-ancestors 'none'`` (no
framing, so no click-jacking), ``X-Content-Type-Options: nosniff`` and
``Referrer-Policy: no-referrer``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from annotation_app.handoff import COOKIE, SESSION_ROUTE, SIGNOUT_ROUTE
from annotation_app.ui import workspace

SECURITY_HEADERS = {
    b"x-frame-options": b"DENY",
    b"content-security-policy": b"frame-ancestors 'none'",
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"no-referrer",
}


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in SECURITY_HEADERS]
                message = {**message, "headers": kept + list(SECURITY_HEADERS.items())}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _home() -> RedirectResponse:
    return RedirectResponse("/", status_code=303)


async def session(request: Request) -> RedirectResponse:
    """Exchange a one-time sign-in ticket for the HttpOnly session cookie, then go home."""
    token = await run_in_threadpool(workspace().redeem_ticket, request.query_params.get("t"))
    resp = _home()
    if token:
        # A browser-session cookie: closing the browser signs out; the server's own
        # expiry (12 hours) and sign-out revoke the token itself.
        resp.set_cookie(COOKIE, token, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return resp


async def signout(_request: Request) -> RedirectResponse:
    """Remove the session cookie (the page has already revoked its token)."""
    resp = _home()
    resp.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return resp


app = st.App(
    Path(__file__).resolve().parent / "app.py",
    routes=[Route(SESSION_ROUTE, session, methods=["GET"]), Route(SIGNOUT_ROUTE, signout, methods=["GET"])],
    middleware=[Middleware(SecurityHeaders)],
)
