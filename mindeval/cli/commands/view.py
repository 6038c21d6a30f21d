"""``mindeval view RUN_DIR...``: read runs in the browser, or export one as static HTML.

The page is the Streamlit app's infrastructure (``annotation_app/view_server.py``, the
app's security headers) with no sign-in, bound to 127.0.0.1 unless ``--host`` says
otherwise. ``--html FILE`` writes one run as a self-contained page instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ...errors import MindEvalError
from .. import at_least, out_file
from ..fields import listen_host

RUNS_ENV = "MINDEVAL_VIEW_RUNS"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("view", help="read runs in the browser: transcripts, judge replies, scores, costs, failures",
                       description="Open a page listing the conversations of RUN_DIR... with filters (failed, "
                       "score on a dimension, label, run); each shows its transcript, the judge's full reply and "
                       "parsed scores, tokens and cost, and its errors. Needs the app extra. With --html, write one "
                       "run as a static page instead (no extra needed).")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories (mindeval run --out)")
    p.add_argument("--html", type=out_file("--html"), default=None, metavar="FILE",
                   help="write RUN_DIR as one self-contained HTML file and exit")
    p.add_argument("--host", type=listen_host("--host"), default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=at_least("--port", 1, 65535), default=8502, metavar="N", help="port to listen on")
    p.set_defaults(func=_view)


def _check_runs(runs: list[str]) -> list[str]:
    from ...rundir import read_run

    out = []
    for r in runs:
        read_run(r)  # a bad directory or row: one error line naming file:line:field
        out.append(str(Path(r).resolve()))
    return out


def _view(args: argparse.Namespace) -> int:
    if args.html is not None:
        if len(args.runs) != 1:
            raise MindEvalError(f"--html exports one run; got {len(args.runs)}", field="--html")
        from ...viewer.html import write_html

        _check_runs(args.runs)
        try:
            path = write_html(args.runs[0], args.html)
        except OSError as exc:
            raise MindEvalError(f"cannot write {args.html}: {exc.strerror or exc}", field="--html") from None
        print(f"wrote {path}")
        return 0
    from ...extras import require

    require("app", "mindeval view")
    runs = _check_runs(args.runs)
    import annotation_app

    from .app import streamlit_command

    script = Path(annotation_app.__file__).resolve().parent / "view_server.py"
    env = {**os.environ, RUNS_ENV: os.pathsep.join(runs)}
    print(f"Run viewer on http://{args.host}:{args.port}  ({len(runs)} run(s); Ctrl+C stops it)", flush=True)
    cmd = streamlit_command(args.host, args.port, script)
    sys.stderr.flush()
    os.execve(cmd[0], cmd, env)  # the viewer process becomes the server (one process to stop)
    return 0  # pragma: no cover
