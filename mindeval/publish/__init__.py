"""Publishing runs where the field reads them (``mindeval export``): a Hugging Face ``datasets``
folder with a dataset card (:mod:`.hf`) and Every Eval Ever records (:mod:`.eee`), both made from
:func:`.source.load_published` (scrubbed of secrets, scores with their 95% intervals)."""

from .source import PublishedRun, load_published

__all__ = ["PublishedRun", "load_published"]
