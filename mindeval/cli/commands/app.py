"""``mindeval app``: launch the annotation app, and ``mindeval app admin …`` to script studies.

The app is ``streamlit run annotation_app/server.py`` (which serves ``app.py`` with
security headers and the session-cookie routes) on 127.0.0.1 (headless, no usage
statistics); the database URL reaches it through ``$MINDEVAL_APP_DB``. Access codes
are printed once when created and never written to disk or logs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .. import at_least, out_file
from ..fields import listen_host, model_string, name_list
from ..options import add_target_option
from .app_launch import app_env, streamlit_command

ADMIN_CODE_ENV = "MINDEVAL_ADMIN_CODE"
DEMO_CODE_ENV = "MINDEVAL_DEMO_CODE"
def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "app", help="annotation app: psychologists rate transcripts and role-play patients",
        description="Launch the annotation app (Streamlit) on this machine, or manage studies with "
        "`mindeval app admin ...`.",
    )
    p.add_argument("--host", type=listen_host("--host"), default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=at_least("--port", 1, 65535), default=8501)
    p.add_argument("--db", default=None, metavar="URL",
                   help="SQLAlchemy URL (default: $MINDEVAL_APP_DB or sqlite ./mindeval-app.db)")
    p.add_argument("--seed-demo", action="store_true",
                   help="if the database is empty, create a demo admin, annotator and two studies")
    p.add_argument("--demo-clinician", type=model_string("--demo-clinician"), default=None, metavar="MODEL",
                   help="clinician model of the demo role-play study (default: the embedded local/smollm2)")
    p.add_argument("--trusted-proxy-header", default=None, metavar="HEADER",
                   help="behind a reverse proxy: the header it sets to the client's address, e.g. "
                        "X-Forwarded-For (its right-most entry), used to slow down failed sign-ins per client "
                        "(default: $MINDEVAL_TRUSTED_PROXY_HEADER, else off: the header is ignored)")
    p.set_defaults(func=_launch)
    asub = p.add_subparsers(dest="app_command", metavar="admin|serve")
    from .app_serve import register_serve

    register_serve(asub)
    admin = asub.add_parser("admin", help="manage studies, people, imports and exports")
    admin.add_argument("--db", default=None, metavar="URL", help="as for `mindeval app`")
    cmds = admin.add_subparsers(dest="admin_command", metavar="COMMAND", required=True)
    _register_setup_commands(cmds)
    _register_data_commands(cmds)


def _register_setup_commands(cmds: argparse._SubParsersAction) -> None:
    """``app admin`` commands that set a study up: create it, add people, assign items."""
    c = cmds.add_parser("create-study", help="create a rating or role-play study")
    c.add_argument("name")
    c.add_argument("--kind", choices=("rating", "roleplay"), default="rating")
    c.add_argument("--k", type=at_least("--k"), default=1, help="annotators per item")
    c.add_argument("--seed", type=int, default=0, help="seed of the assignment and of each annotator's order")
    c.add_argument("--description", default="")
    add_target_option(c)  # the form rated (and the clinician prompt of role-play)
    c.add_argument("--clinician-model", default=None, metavar="MODEL",
                   help="role-play: litellm model string (default local/smollm2)")
    c.add_argument("--clinician-max-tokens", type=at_least("--clinician-max-tokens"), default=None, metavar="N")
    c.add_argument("--clinician-temperature", type=float, default=None, metavar="T")
    c.add_argument("--minutes", type=at_least("--minutes"), default=None, help="role-play session length (default 25)")
    c.set_defaults(func=_create_study)

    a = cmds.add_parser("add-annotator", help="add a person; prints their access code once")
    a.add_argument("name")
    a.add_argument("--admin", action="store_true", help=f"a study admin (code from ${ADMIN_CODE_ENV} if set)")
    a.add_argument("--code-env", default=None, metavar="VAR", help="read the access code from this variable")
    a.set_defaults(func=_add_annotator)

    r = cmds.add_parser("reset-code", help="give a person a new access code (printed once)")
    r.add_argument("name")
    r.add_argument("--code-env", default=None, metavar="VAR")
    r.set_defaults(func=_reset_code)

    s = cmds.add_parser("assign", help="give every item k ratings from a group of annotators, balanced and seeded")
    s.add_argument("study")
    s.add_argument("--k", type=at_least("--k"), default=None,
                   help="ratings per item from this group (default: the study's k); ratings by anybody "
                        "outside the group, e.g. imported raters, do not count")
    s.add_argument("--annotators", type=name_list("--annotators"), default=None,
                   help="comma-separated names: the group (default: every active annotator who can sign in)")
    s.add_argument("--per-system", type=int, default=None, metavar="N",
                   help="assign only N conversations per clinician model, drawn at random with the study's seed "
                        "(the random sample `mindeval leaderboard --humans` needs; reruns top up)")
    s.set_defaults(func=_assign)

    g = cmds.add_parser("gold", help="gold items (known answers) of a rating study, and its qualification")
    g.add_argument("study")
    g.add_argument("--file", type=Path, default=None, metavar="FILE",
                   help="mark the items of this JSON Lines file gold: {\"item\": ID, \"expected\": {SUB_AXIS: VALUE}, "
                        "\"tolerance\": N}")
    g.add_argument("--replace", action="store_true", help="change the expected values of items already gold")
    g.add_argument("--rate", type=float, default=None, metavar="SHARE",
                   help="share of gold items among each rater's new items (0 up to, not including, 1)")
    g.add_argument("--qualify", type=int, default=None, metavar="N",
                   help="a new rater answers N gold items first; real items open only if she passes (0 = off)")
    g.add_argument("--qualify-pass", type=float, default=None, metavar="SHARE",
                   help="share of the N qualification items that must be right (default 1: all)")
    g.set_defaults(func=_gold)


def _register_data_commands(cmds: argparse._SubParsersAction) -> None:
    """``app admin`` commands that move data in and out: import, add-sessions, export, list, results."""
    i = cmds.add_parser("import", help="import a run directory, interactions, profiles, the authors' ratings "
                                       "or the app's own ratings export")
    i.add_argument("study")
    i.add_argument("path", type=Path,
                   help="a run directory or file; 'official' with --kind authors or profiles: the downloaded release")
    i.add_argument("--kind", choices=("run", "interactions", "authors", "profiles", "ratings"), default=None)
    i.add_argument("--map-annotator", action="append", default=[], metavar="FILE_ID=NAME",
                   help="give the ratings of annotator FILE_ID in an authors' or ratings file to the existing person NAME "
                        "(repeatable; by default imported ratings belong to new, inactive imported annotators)")
    i.set_defaults(func=_import)

    rs = cmds.add_parser("add-sessions", help="put finished role-play sessions into a rating study")
    rs.add_argument("rating_study")
    rs.add_argument("roleplay_study")
    rs.set_defaults(func=_add_sessions)

    e = cmds.add_parser("export", help="export ratings or role-play sessions")
    e.add_argument("study")
    e.add_argument("--format", required=True,
                   choices=("csv", "jsonl", "authors", "interactions", "user-turns", "flags", "raters"),
                   help="raters: one JSON object per rater (gold accuracy, time per item, skips, flags, "
                        "leave-one-out agreement, drift blocks)")
    e.add_argument("--out", type=out_file(), required=True, metavar="FILE")
    e.set_defaults(func=_export)

    ls = cmds.add_parser("list", help="list studies, people, or a study's items (the ids a gold file names)")
    ls.add_argument("what", choices=("studies", "annotators", "items"), nargs="?", default="studies")
    ls.add_argument("study", nargs="?", help="for `list items`: the study whose items to list")
    ls.set_defaults(func=_list)

    res = cmds.add_parser("results", help="progress and mean scores of a study (JSON)")
    res.add_argument("study")
    res.set_defaults(func=_results)


def _workspace(args: argparse.Namespace):
    from annotation_app.services import Workspace

    return Workspace(args.db)


def _code_from(var: str | None) -> str | None:
    from ...errors import MindEvalError

    if var is None:
        return None
    code = os.environ.get(var)
    if not code:
        raise MindEvalError(f"environment variable {var} is empty or unset", field="code-env")
    return code


def _print_code(name: str, code: str) -> None:
    print(f"  access code for {name}: {code}   (shown only now; it is stored only as a hash)")


def _launch(args: argparse.Namespace) -> int:
    if getattr(args, "app_command", None) in ("admin", "serve"):  # pragma: no cover - argparse routes admin
        return 2
    from ...extras import require

    require("app", "mindeval app")
    from annotation_app.services import default_db_url
    from annotation_app.store.signins import check_header_name, trusted_proxy_header

    url = args.db or default_db_url()
    header = check_header_name(args.trusted_proxy_header) if args.trusted_proxy_header else trusted_proxy_header()
    ws = _workspace(argparse.Namespace(db=url))
    if args.seed_demo:
        from annotation_app.demo import seed_demo

        kw = {"clinician_model": args.demo_clinician} if args.demo_clinician else {}
        given_admin = os.environ.get(ADMIN_CODE_ENV) or None
        given_demo = os.environ.get(DEMO_CODE_ENV) or None
        accounts = seed_demo(ws, admin_code=given_admin, annotator_code=given_demo, **kw)
        if accounts is None:
            print("The database already has data; the demo workspace was not added.")
        else:
            print("Demo workspace created. Sign in with:")
            for who, code, env in ((f"annotator '{accounts.annotator_name}'", accounts.annotator_code, DEMO_CODE_ENV if given_demo else None),
                                   (f"admin '{accounts.admin_name}'", accounts.admin_code, ADMIN_CODE_ENV if given_admin else None)):
                if env:
                    print(f"  {who}: the access code in ${env}")
                else:
                    _print_code(who, code)
    elif ws.is_empty():
        print("The database is empty: add people with `mindeval app admin add-annotator`, "
              "or start with --seed-demo.")
    ws.close()
    from ...store import redact_url

    print(f"Annotation app on http://{args.host}:{args.port}  (database {redact_url(url)}; Ctrl+C stops it)",
          flush=True)
    env = app_env(url, header)
    cmd = streamlit_command(args.host, args.port)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], cmd, env)
    return 0  # pragma: no cover


def _create_study(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    ws = _workspace(args)
    kw = {}
    if args.kind == "roleplay":
        kw = {"clinician_model": args.clinician_model, "clinician_max_tokens": args.clinician_max_tokens,
              "clinician_temperature": args.clinician_temperature, "minutes": args.minutes}
    info = ws.create_study(SYSTEM, args.name, args.kind, k=args.k, seed=args.seed,
                           description=args.description, target=args.target, **kw)
    print(f"created {info.kind} study '{info.name}' (id {info.id}, target {info.target}, k={info.k}, seed={info.seed})")
    return 0


def _add_annotator(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    code = _code_from(args.code_env)
    if code is None and args.admin:
        code = os.environ.get(ADMIN_CODE_ENV) or None
    info, code = _workspace(args).add_annotator(SYSTEM, args.name, admin=args.admin, code=code)
    print(f"added {'admin' if info.is_admin else 'annotator'} '{info.name}'")
    if not (args.code_env or (args.admin and os.environ.get(ADMIN_CODE_ENV))):
        _print_code(info.name, code)
    return 0


def _reset_code(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    given = _code_from(args.code_env)
    code = _workspace(args).reset_code(SYSTEM, args.name, given)
    print(f"new access code set for '{args.name}'")
    if given is None:
        _print_code(args.name, code)
    return 0


def _assign(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    names = [n.strip() for n in args.annotators.split(",") if n.strip()] if args.annotators else None
    rep = _workspace(args).assign(SYSTEM, args.study, annotators=names, k=args.k, per_system=args.per_system)
    per = ", ".join(f"{n}: {c}" for n, c in sorted(rep.per_annotator.items())) or "nothing new"
    print(f"{rep.created} new assignments (seed {rep.seed}) — {per}")
    if rep.gold:
        print(f"{rep.gold} gold items mixed in (unmarked for the raters)")
    if rep.failed:
        print(f"left out (failed the qualification; their unseen items went back to the pool): {', '.join(rep.failed)}")
    if rep.sampled:
        print(f"random sample of {args.per_system} per system (seed {rep.seed}): "
              + ", ".join(f"{m}: {c}" for m, c in rep.sampled.items()))
    return 0


def _gold(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    ws = _workspace(args)
    if args.file is not None:
        n = ws.import_gold(SYSTEM, args.study, args.file, replace=args.replace)
        print(f"marked {n} gold item(s) from {args.file}")
    cfg = ws.gold_settings(SYSTEM, args.study)
    if (args.rate, args.qualify, args.qualify_pass) != (None, None, None):
        cfg = ws.set_gold_settings(SYSTEM, args.study, gold_rate=args.rate, qualify_n=args.qualify,
                                   qualify_pass=args.qualify_pass)
    print(f"{cfg.n_gold} gold items; gold rate {cfg.gold_rate:g}; qualification: "
          + (f"{cfg.qualify_n} gold items first, {cfg.qualify_pass:.0%} right to pass" if cfg.qualify_n else "none"))
    return 0


def _import(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM
    from annotation_app.store.importers import parse_annotator_map

    mapped = parse_annotator_map(args.map_annotator)
    if str(args.path) == "official":
        from ...errors import MindEvalError
        from ...profiles.official import official_file

        release = {"authors": "human_annotations.jsonl", "profiles": "profiles.jsonl"}
        if args.kind not in release:
            raise MindEvalError("'official' needs --kind authors (human_annotations.jsonl) or --kind profiles",
                                field="--kind")
        args.path = official_file(release[args.kind])
    rep = _workspace(args).import_path(SYSTEM, args.study, args.path, args.kind, map_annotators=mapped)
    print(f"imported {rep.kind}: {rep.items_linked} items linked to the study ({rep.items_added} new, "
          f"{rep.items_reused} identical ones already in the workspace), "
          f"{rep.profiles_added} profiles, {rep.ratings_added} ratings ({rep.ratings_unchanged} unchanged), "
          f"{rep.annotators_added} imported annotators, {rep.skipped} skipped")
    for w in rep.warnings:
        print(f"  warning: {w}", file=sys.stderr)
    return 0


def _add_sessions(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    n = _workspace(args).add_roleplay_items(SYSTEM, args.rating_study, args.roleplay_study)
    print(f"added {n} finished role-play sessions to '{args.rating_study}' (assign them next)")
    return 0


def _export(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    n = _workspace(args).export_file(SYSTEM, args.study, args.format, args.out)
    print(f"wrote {n} rows to {args.out}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    from ...errors import MindEvalError

    ws = _workspace(args)
    if (args.what == "items") != (args.study is not None):
        raise MindEvalError("`list items` takes a study name (and only `list items` does)", field="study")
    if args.what == "items":
        for it in ws.study_items(SYSTEM, args.study):
            print(f"{it.item}\t{it.source}\t{it.clinician_model or '-'}{chr(9) + 'gold' if it.gold else ''}")
    elif args.what == "studies":
        for s in ws.studies(SYSTEM):
            extra = f", clinician {s.clinician_model}, {s.minutes} min" if s.kind == "roleplay" else ""
            print(f"{s.id}\t{s.name}\t{s.kind}\t{s.n_items} items\t{s.n_assignments} assignments\tk={s.k}"
                  f"\tseed={s.seed}\ttarget={s.target}{extra}")
    else:
        for a in ws.annotators(SYSTEM):
            role = "admin" if a.is_admin else "annotator"
            print(f"{a.id}\t{a.name}\t{role}\t{'can sign in' if a.can_sign_in else 'imported'}")
    return 0


def _results(args: argparse.Namespace) -> int:
    from annotation_app.services import SYSTEM

    res = _workspace(args).results(SYSTEM, args.study)
    print(json.dumps(res.model_dump(mode="json"), indent=2))
    return 0
