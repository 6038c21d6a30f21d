"""The command line and environment of one app process (``mindeval app``, ``mindeval app serve``,
and ``mindeval view``'s run viewer)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# paddingTop/paddingBottom: a compact page (the rating page's panes reach the window's bottom edge;
# at 1280x720 the transcript and the form fit side by side without the page scrolling)
THEME = {"base": "light", "primaryColor": "#2f6f73", "font": "sans serif", "paddingTop": "2.75rem",
         "paddingBottom": "0.25rem"}


def app_script() -> Path:
    """The launcher that ``streamlit run`` starts (``annotation_app/server.py``)."""
    import annotation_app

    return Path(annotation_app.__file__).resolve().parent / "server.py"


def streamlit_command(host: str, port: int, script: Path | None = None) -> list[str]:
    """The ``streamlit run`` command line of the app, or of another page ``script`` (the run viewer).

    ``runner.fastReruns`` is off: with it on (Streamlit's default) a click during a script run
    starts the next run at once, in a new thread, while the old run goes on to its next Streamlit
    call. Two runs of one tab then write at the same time, and the rating page refused its own
    autosave as written by another tab (its version had moved under it). Off, the next run starts
    where the old one stops (at its next Streamlit call): one run of a tab at a time.

    ``runner.postScriptGC`` is off: Streamlit otherwise runs a full garbage collection after every
    script run, 0.2-0.3 s of the process's one core per run here (the rating form's fragment run
    itself takes ~0.1 s), so every key an annotator pressed waited for it and a process served a
    third as many annotators (``benchmarks/bench_app.py --annotators``). Python's own generational
    collector still runs."""
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(script or app_script()),
        "--server.headless", "true", "--server.address", host, "--server.port", str(port),
        "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
        "--server.runOnSave", "false", "--client.toolbarMode", "minimal",
        "--runner.fastReruns", "false", "--runner.postScriptGC", "false",
    ]
    for key, val in THEME.items():
        cmd += [f"--theme.{key}", val]
    return cmd


def app_env(url: str, header: str | None) -> dict[str, str]:
    """The environment of an app process on database ``url``, trusting ``header`` from a local proxy."""
    from annotation_app.services import DB_ENV
    from annotation_app.store.signins import PROXY_HEADER_ENV

    env = dict(os.environ)
    env[DB_ENV] = url
    # The web server (uvicorn) would otherwise take X-Forwarded-For from any connection of this
    # machine as the client's address, so a local browser could choose its own: only with the
    # option does the app trust a proxy (an explicit $FORWARDED_ALLOW_IPS is the admin's choice).
    env.setdefault("FORWARDED_ALLOW_IPS", "127.0.0.1,::1" if header else "")
    if header:
        env[PROXY_HEADER_ENV] = header
        print(f"Sign-in limits per client use the right-most address in the {header} header "
              "(only a proxy you trust may set it; the log and admins' pages say so if no browser connection "
              "carries it).", flush=True)
    return env
