"""The run viewer's data: conversations of run directories with their judgments, usage and failures.

``mindeval view`` shows them in a Streamlit page (``annotation_app/view_page.py``) or
writes one run as a static HTML file (:mod:`mindeval.viewer.html`). Model text is data:
every page escapes it.
"""

from .data import Conversation, RoleUsage, filter_conversations, load_conversations
from .sessions import RunSessions, run_sessions

__all__ = ["Conversation", "RoleUsage", "RunSessions", "filter_conversations", "load_conversations", "run_sessions"]
