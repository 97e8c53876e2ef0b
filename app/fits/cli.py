"""`idlelab fit PLATFORM`: fit a twin to an imported platform's counters, a line per generation
on stderr, the fit's link on stdout (and its JSON in `--json FILE`).

By default the fit is posted to the server (`--server`, default the configured one), which computes
it on its cluster; with `--scheduler tcp://HOST:PORT` this process computes it, its evaluations on
that Dask cluster, into the configured database. Module-level imports stay light (`app.cli`
imports this at start, and job workers import `app.cli`); the rest is imported by the command.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.core.terminal import CliError, errors_line, http_json

POLL_S = 0.5


@dataclass(frozen=True)
class Helpers:
    """What the command uses of `app.cli` (above this layer), given when it registers."""

    database: Callable[[], Any]  # a context manager: the configured database migrated, its sessionmaker
    base_url: Callable[[], str]  # the configured server


def register(sub: Any, helpers: Helpers) -> None:
    fit = sub.add_parser("fit", help="fit a twin to an imported platform's counters, a line per generation")
    fit.add_argument("platform", help="an imported platform (idlelab platforms import)")
    fit.add_argument("--seed", type=int, default=1, help="the fit's seed (default 1)")
    fit.add_argument("--budget", type=int, help="evaluations the search may spend (100-20000, default 3000)")
    fit.add_argument("--cpus", type=int, help="CPUs sampled per evaluation (default 16)")
    fit.add_argument("--unlisted", action="store_true", help="only the fit's link finds it")
    where = fit.add_mutually_exclusive_group()
    where.add_argument("--server", help="the server to post it to (default http://IDLELAB_HOST:IDLELAB_PORT)")
    where.add_argument(
        "--scheduler", help="compute it here on this Dask cluster (tcp://HOST:PORT) into the configured DB"
    )
    fit.add_argument("--json", metavar="FILE", help="write the finished fit's JSON to FILE ('-' for stdout)")
    fit.set_defaults(func=lambda args: cmd_fit(args, helpers))


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"seed": args.seed, "unlisted": args.unlisted}
    for key in ("budget", "cpus"):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    return body


def cmd_fit(args: argparse.Namespace, helpers: Helpers) -> int:
    body = _body(args)
    if args.scheduler:
        view = on_scheduler(args.platform, body, args.scheduler, helpers)
    else:
        server = (args.server or helpers.base_url()).rstrip("/")
        made = http_json("POST", f"{server}/api/platforms/{args.platform}/fit", body)
        print(f"fit {made['url']}; delete token {made['delete_token']}", file=sys.stderr, flush=True)
        view = follow(lambda: http_json("GET", f"{server}/api/fits/{made['id']}"))
        view["link"] = made["url"]
    if args.json:
        text = json.dumps(view, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    print(view["link"])
    return 0 if view["status"] == "done" else 1


def follow(read: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Print each generation as the fit reports it, then the outcome; the finished view."""
    shown = 0
    while True:
        view = read()
        for point in view["history"][shown:]:
            print(
                f"generation {point['generation']}: {point['evaluations']}/{view['budget']} evaluations, "
                f"best distance {point['best_distance']:.4g}",
                file=sys.stderr,
                flush=True,
            )
        shown = len(view["history"])
        if view["status"] not in ("queued", "running"):
            break
        time.sleep(POLL_S)
    if view["status"] == "failed":
        print(f"fit failed: {view['error']}", file=sys.stderr)
        return view
    misses = view["misses"] or []
    verdict = "every figure within the goal" if not misses else f"{len(misses)} figure(s) miss the goal"
    print(f"done: distance {view['distance']['total']:.4g}, {verdict}", file=sys.stderr)
    for m in misses:
        fitted = "none" if m["fitted"] is None else f"{m['fitted']:.4g}"
        print(
            f"  miss: {m['state'] or 'machine'} {m['figure']} measured {m['measured']:.4g}, twin {fitted} "
            f"(tolerance {m['tolerance']:g})",
            file=sys.stderr,
        )
    return view


class ClientCompute:
    """`Compute` over a Dask client this process holds."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, priority: int = 0) -> list[Any]:
        futures = self.client.map(fn, list(items), priority=priority, pure=False)
        return list(self.client.gather(futures))


def on_scheduler(platform: str, body: dict[str, Any], scheduler: str, helpers: Helpers) -> dict[str, Any]:
    """Queue the fit in the configured database and compute it here, on the cluster at
    `scheduler`; the finished view."""
    from distributed import Client
    from pydantic import ValidationError

    from app.core.database import session_scope
    from app.core.errors import AppError, InvalidInput
    from app.fits import service, store
    from app.fits.runner import FitRunner
    from app.fits.service import FitCreate
    from app.runs import store as run_store

    with helpers.database() as factory:
        try:
            with session_scope(factory) as session:
                made = service.submit(session, platform, FitCreate.model_validate(body))
        except InvalidInput as exc:
            raise CliError(errors_line(exc.detail)) from None
        except ValidationError as exc:
            raise CliError(errors_line(exc.errors())) from None
        except AppError as exc:
            raise CliError(str(exc.detail)) from None
        link = helpers.base_url() + service.fit_path(made["id"])
        print(f"fit {link}; delete token {made['delete_token']}", file=sys.stderr, flush=True)
        try:
            client = Client(scheduler, timeout="10s", set_as_default=False)
        except OSError as exc:
            raise CliError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
        try:
            runner = FitRunner(factory, ClientCompute(client), runner_id=uuid.uuid4().hex, enabled=False)
            with session_scope(factory) as session:
                store.claim(session, made["id"], runner.runner_id)
            worker = threading.Thread(target=runner.run, args=(made["id"],), daemon=True)
            worker.start()

            def read() -> dict[str, Any]:
                with session_scope(factory) as session:
                    # A live claim: a server sharing the database leaves this fit alone.
                    run_store.heartbeat(session, runner.runner_id, datetime.now(UTC))
                    return service.fit_view(session, made["id"])

            view = follow(read)
            worker.join()
            with session_scope(factory) as session:
                run_store.forget_runner(session, runner.runner_id)
        finally:
            client.close()
    view["link"] = link
    return view
