"""`idlelab sweep FILE`: post a sweep to a server (default) or, with `--scheduler`, compute it here
on that Dask cluster writing to the configured database; either way a line per finished point,
then the sweep's link."""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

POLL_S = 0.5


def _fail(message: str) -> Exception:
    from app.cli import CliError

    return CliError(message)


def _errors(detail: Any) -> str:
    if not isinstance(detail, list):
        return str(detail)
    return "; ".join(
        ".".join(str(p) for p in e.get("loc", []) if p != "body") + f": {e.get('msg')}" for e in detail
    )


def _point_line(point: Mapping[str, Any], n: int) -> str:
    values = ", ".join(f"{k}={v}" for k, v in point["values"].items())
    line = f"[{point['index'] + 1}/{n}] {values}: {point['status']}"
    if point["status"] == "done" and point.get("wake_latency_p99_ns") is not None:
        line += f" (WakeLatency p99 {point['wake_latency_p99_ns'] / 1000:.3g} us)"
    elif point["status"] == "failed":
        line += f" ({point.get('error')})"
    return line


def follow(read: Callable[[], dict[str, Any]], link: str) -> int:
    """Print each point as it finishes until the sweep is over; 0 if every point is done."""
    print(f"sweep {link}", file=sys.stderr, flush=True)
    shown: set[int] = set()
    while True:
        sweep = read()
        for point in sweep["points"]:
            if point["status"] in ("done", "failed") and point["index"] not in shown:
                shown.add(point["index"])
                print(_point_line(point, sweep["n_points"]), file=sys.stderr, flush=True)
        if sweep["status"] not in ("queued", "running"):
            break
        time.sleep(POLL_S)
    counts = sweep["counts"]
    print(f"{counts['done']} done, {counts['failed']} failed: {link}", file=sys.stderr)
    print(link)
    return 0 if counts["failed"] == 0 else 1


def _http(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = json.loads(exc.read()).get("detail")
        except ValueError:
            detail = exc.reason
        raise _fail(f"{url}: {exc.code}: {_errors(detail)}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise _fail(f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from None


def on_server(body: dict[str, Any], server: str) -> int:
    server = server.rstrip("/")
    made = _http("POST", f"{server}/api/sweeps", body)
    print(f"{made['points']} points; delete token {made['delete_token']}", file=sys.stderr)
    return follow(lambda: _http("GET", f"{server}/api/sweeps/{made['id']}"), made["url"])


def on_scheduler(body: dict[str, Any], scheduler: str, factory: Any, base_url: str) -> int:
    """Compute the sweep on the cluster at `scheduler`, this process writing the results."""
    from app.db import session_scope
    from app.errors import InvalidInput
    from app.jobs import JobRunner
    from app.sweeps import views

    parsed = None
    try:
        parsed = views.parse(body)
        with session_scope(factory) as session:
            runner = JobRunner(factory, workers=0, scheduler=scheduler)
            made = views.submit(session, runner, parsed)
    except InvalidInput as exc:
        raise _fail(_errors(exc.detail)) from None
    print(f"{made['points']} points; delete token {made['delete_token']}", file=sys.stderr)
    runner.start()
    try:

        def read() -> dict[str, Any]:
            with session_scope(factory) as session:
                return views.sweep_view(session, made["id"])

        return follow(read, base_url + views.sweep_path(made["id"]))
    finally:
        runner.stop()


def cmd_sweep(args: argparse.Namespace, database: Any, settings: Any) -> int:
    from app.cli import load_json_file

    body = load_json_file(args.file, "a sweep (`base` and `axes`)")
    if args.scheduler:
        with database() as factory:
            return on_scheduler(body, args.scheduler, factory, settings.base_url())
    return on_server(body, args.server or settings.base_url())
