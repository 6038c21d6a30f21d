"""MindEval: benchmark language models as mental-health support clinicians.

Importing this package never touches the network: litellm's remote cost-map
fetch is disabled before litellm can be imported anywhere in the process.
"""

import os as _os

_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_os.environ.setdefault("LITELLM_TELEMETRY", "False")
_os.environ.setdefault("HF_HUB_OFFLINE", "1")

__version__ = "0.1.0"

from .records import Run  # noqa: E402  (after the environment defaults above)
from .rundir import read_run  # noqa: E402

__all__ = ["Run", "read_run", "__version__"]
