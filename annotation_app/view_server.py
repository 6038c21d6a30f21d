"""The run viewer's web server: its page behind the annotation app's security headers."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from annotation_app.server import SecurityHeaders

app = st.App(Path(__file__).resolve().parent / "view_page.py", middleware=[Middleware(SecurityHeaders)])
