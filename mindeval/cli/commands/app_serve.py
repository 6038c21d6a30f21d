"""``mindeval app serve``: N app processes on consecutive loopback ports, and their nginx site.

The database is opened (and migrated) once before the processes start; the nginx site file
(:mod:`annotation_app.hosting`) is written for the operator to include; the processes are kept
running by :class:`annotation_app.supervisor.AppProcesses` (``kill -HUP`` restarts them one at a
time). All processes share one Streamlit cookie secret (random per start, passed in their
environment, never written), so a form's XSRF cookie set by one process is valid on another.
"""

from __future__ import annotations

import argparse
import os
import secrets
from pathlib import Path

from .. import out_file

COOKIE_SECRET_ENV = "STREAMLIT_SERVER_COOKIE_SECRET"
MAX_PROCESSES = 64


def register_serve(asub: argparse._SubParsersAction) -> None:
    s = asub.add_parser(
        "serve", help="run several app processes for a team, behind nginx",
        description="Start N app processes on consecutive loopback ports (PORT, PORT+1, ...) on one database "
        "(PostgreSQL for a team), write the nginx site that spreads browsers over them, and keep them running "
        "(a process that exits is started again; `kill -HUP` restarts them one at a time). See "
        "docs/annotation-app.md, 'Hosting for a team'.")
    s.add_argument("--db", default=None, metavar="URL", help="as for `mindeval app`")
    s.add_argument("--processes", type=int, default=2, metavar="N", help="app processes (default 2)")
    s.add_argument("--port", type=int, default=8501, help="port of the first process (default 8501)")
    s.add_argument("--nginx-conf", type=out_file("--nginx-conf"), default="mindeval-nginx.conf", metavar="FILE",
                   help="where to write the nginx site (default ./mindeval-nginx.conf)")
    s.add_argument("--listen", default="127.0.0.1:8080", metavar="ADDR:PORT",
                   help="nginx's plain-HTTP listen address in the site file (default 127.0.0.1:8080)")
    s.add_argument("--server-name", default="_", metavar="NAME", help="nginx server_name (default _)")
    s.add_argument("--trusted-proxy-header", default="X-Forwarded-For", metavar="HEADER",
                   help="the header nginx sets to the client's address (default X-Forwarded-For, as the "
                        "site file does)")
    s.set_defaults(func=_serve)


def _check(args: argparse.Namespace) -> None:
    from ...errors import MindEvalError

    if not 1 <= args.processes <= MAX_PROCESSES:
        raise MindEvalError(f"--processes must be between 1 and {MAX_PROCESSES}", field="processes")
    if not (1024 <= args.port and args.port + args.processes - 1 <= 65535):
        raise MindEvalError("--port and the ports after it must be between 1024 and 65535", field="port")
    if not args.listen.strip() or any(c in args.listen for c in ";{}\n"):
        raise MindEvalError(f"'{args.listen}' is not an nginx listen address", field="listen")
    if not args.server_name.strip() or any(c in args.server_name for c in ";{}\n"):
        raise MindEvalError(f"'{args.server_name}' is not an nginx server name", field="server-name")


def _write_site(args: argparse.Namespace, ports: list[int]) -> None:
    from annotation_app.hosting import ProxySite, site_config

    path: Path = args.nginx_conf
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(site_config(ProxySite(ports=ports, listen=args.listen, server_name=args.server_name)))
    os.replace(tmp, path)
    print(f"nginx site written to {path}: include it in nginx's http block (e.g. copy it to "
          "/etc/nginx/conf.d/mindeval.conf), then `nginx -t && nginx -s reload`", flush=True)


def _serve(args: argparse.Namespace) -> int:
    from ...extras import require

    require("app", "mindeval app serve")
    from annotation_app.services import Workspace, default_db_url
    from annotation_app.store.signins import check_header_name
    from annotation_app.supervisor import AppProcesses

    from ...store import redact_url
    from .app_launch import app_env, streamlit_command

    _check(args)
    url = args.db or default_db_url()
    header = check_header_name(args.trusted_proxy_header) if args.trusted_proxy_header.strip() else None
    ws = Workspace(url)  # migrates a fresh or older database once, before any process starts
    if ws.is_empty():
        print("The database is empty: add people with `mindeval app admin add-annotator`.")
    ws.close()
    if url.startswith("sqlite") and args.processes > 1:
        print("Several processes on SQLite work but queue behind one writer: use PostgreSQL for a team.")
    ports = [args.port + i for i in range(args.processes)]
    _write_site(args, ports)
    env = app_env(url, header)
    env.setdefault(COOKIE_SECRET_ENV, secrets.token_urlsafe(32))
    print(f"Starting {args.processes} app process(es) on 127.0.0.1:{ports[0]}-{ports[-1]} "
          f"(database {redact_url(url)}); Ctrl+C stops them, `kill -HUP {os.getpid()}` restarts them one at a time",
          flush=True)
    return AppProcesses(lambda port: streamlit_command("127.0.0.1", port), ports, env).run()
