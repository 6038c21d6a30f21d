"""The run viewer's data: conversations of run directories with their judgments, usage and failures.

``mindeval view`` shows them in a Streamlit page (``annotation_app/view_page.py``) or
writes one run as a static HTML file (:mod:`mindeval.viewer.html`). Model text is data:
every page escapes it.
"""

from .data import Conversation, RoleUsage, filter_conversations, load_conversations

__all__ = ["Conversation", "RoleUsage", "filter_conversations", "load_conversations"]
