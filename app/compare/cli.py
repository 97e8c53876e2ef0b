"""`idlelab compare A B [C...]`: a comparison as the robot's text (default), Markdown or JSON,
read from the configured database (no server needed), or with `--server URL` asked of a server.

Registered by `app.cli` (`add_parser`); errors are one line on stderr and exit code 1. As in
`app.cli`, the heavy imports happen inside the command: building the parser stays cheap.
"""

from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.parse
import urllib.request

import orjson

FORMATS = ("text", "markdown", "json")


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    compare = sub.add_parser("compare", help="compare runs: the kernel test robot's table, Markdown or JSON")
    compare.add_argument("ids", nargs="+", help="2 to 8 run ids (changes are against the first)")
    compare.add_argument("--format", choices=FORMATS, default="text", help="default: text")
    compare.add_argument("--all", action="store_true", help="every metric, not only those with a verdict")
    compare.add_argument(
        "--server", help="ask this server (http://HOST:PORT) instead of reading the database"
    )
    compare.set_defaults(func=cmd_compare)


def _message(detail: object) -> str:
    if isinstance(detail, list):
        return "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in detail)
    return str(detail)


def _from_server(server: str, args: argparse.Namespace) -> str:
    query = urllib.parse.urlencode(
        {"ids": ",".join(args.ids), "format": args.format, "all": str(args.all).lower()}
    )
    url = f"{server.rstrip('/')}/api/compare?{query}"
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:  # noqa: S310 - the user's own server
            return str(answer.read().decode())
    except urllib.error.HTTPError as exc:
        try:
            detail = orjson.loads(exc.read()).get("detail")
        except orjson.JSONDecodeError:
            detail = exc.reason
        raise ValueError(f"{url}: {exc.code}: {_message(detail)}") from None
    except urllib.error.URLError as exc:
        raise ValueError(f"{server}: no answer ({exc.reason})") from None


def _from_database(args: argparse.Namespace) -> str:
    from app.compare import exports, service
    from app.core.database import make_db_engine, make_sessionmaker, session_scope
    from app.core.errors import AppError
    from app.core.settings import get_settings

    settings = get_settings()
    db_engine = make_db_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(db_engine)) as session:
            view = service.compare_view(session, args.ids)
    except AppError as exc:
        raise ValueError(_message(exc.detail)) from None
    finally:
        db_engine.dispose()
    if args.format == "json":
        return (
            orjson.dumps(view.comparison.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode() + "\n"
        )
    link = f"{settings.base_url()}/compare?ids={','.join(r.id for r in view.comparison.runs)}"
    return exports.compare_report(view, args.format, link=link, all=args.all)


def cmd_compare(args: argparse.Namespace) -> int:
    try:
        text = _from_server(args.server, args) if args.server else _from_database(args)
    except ValueError as exc:
        sys.stderr.write(f"idlelab: error: {exc}\n")
        return 1
    sys.stdout.write(text)
    return 0
