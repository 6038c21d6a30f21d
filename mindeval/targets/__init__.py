"""Targets: a benchmark as a folder with a manifest (``target.yaml``).

A target names its profiles, its patient/clinician/judge prompts, its guidelines (the
judge's dimensions with their scale and anchors, and the human rating form), the
default number of turns and the opening line. The MindEval benchmark is the built-in
target ``mindeval`` (the default); its runs are unchanged by targets (no ``target``
block in ``config.json``).

Paths in a manifest are relative to the manifest. ``prompts.<role>`` may instead be a
built-in template ref (``patient/default``) and ``guidelines`` a built-in file
(``builtin:guidelines.yaml``). ``profiles: null`` keeps ``--profiles`` (MindEval).

One module per job: :mod:`.manifest` (``target.yaml``'s fields, finding and reading it),
:mod:`.target` (the loaded :class:`Target`, :func:`load_target`), :mod:`.validation`
(``mindeval targets validate``, what a run refuses), :mod:`.guidelines` (the guidelines
file: :class:`~.guidelines.Guidelines`, :func:`~.guidelines.load_guidelines`) built of
:mod:`.scales` and :mod:`.axes` (on :mod:`.schema`), :mod:`.rubric_text` (the scale and
rubric text the judge prompt shows) and :mod:`.yaml_errors` (file:line:field problems).
"""

from ..records import DEFAULT_TARGET
from .manifest import MANIFEST, TargetManifest, builtin_names, manifest_path
from .target import Target, as_target, list_targets, load_target, target_identity
from .validation import run_problems, validate_target

__all__ = [
    "DEFAULT_TARGET", "MANIFEST", "Target", "TargetManifest", "as_target", "builtin_names", "list_targets",
    "load_target", "manifest_path", "run_problems", "target_identity", "validate_target",
]
