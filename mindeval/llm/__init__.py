"""Model access: every call goes through :func:`mindeval.llm.gateway.complete`."""

from .gateway import Completion, ModelSpec, complete

__all__ = ["Completion", "ModelSpec", "complete"]
