"""The `idlelab` command: serve, run, platforms (and `platforms import`), collect, import, validate,
sweep, fit (`app.fits.cli`), compare (`app.compare.cli`), db upgrade.

Errors are one line on stderr and a non-zero exit, never a traceback. Heavy imports (FastAPI,
uvicorn, SQLAlchemy, the engine) happen inside the commands: job workers are spawned processes that
import this module when the server was started with `python -m app.cli`, and they need none of it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from app.core.terminal import CliError, ProgressBar, errors_line, http_json
from app.fits import cli as fits_cli

EXIT_ERROR = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


def _settings() -> Any:
    from pydantic import ValidationError

    from app.core.settings import get_settings

    try:
        return get_settings()
    except ValidationError as exc:
        raise CliError("bad IDLELAB_ setting: " + errors_line(exc.errors(), prefix="IDLELAB_")) from None


# --- serve ---------------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.main import create_app

    settings = _settings()
    if args.host:
        settings.host = args.host
    if args.port is not None:
        settings.port = args.port
    app = create_app(settings)
    print(
        f"idlelab: serving on {settings.base_url()}/  (database {_redact(settings.database_url)})", flush=True
    )
    _say_database(settings, writes=False)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        access_log=settings.access_log,
        timeout_keep_alive=30,
    )
    return 0


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001
        return "(unparsable URL)"


# --- run -----------------------------------------------------------------------------------------


def load_json_file(path: str, what: str) -> dict[str, Any]:
    """A JSON object from a file ('-': stdin); `what` names it in the error when it is not one."""
    import orjson

    try:
        data = orjson.loads(_read_input(path))
    except orjson.JSONDecodeError as exc:
        raise CliError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CliError(f"{path}: {what} must be a JSON object")
    return data


def _load_config_file(path: str) -> dict[str, Any]:
    data = load_json_file(path, "the config")
    # A saved RunCreate body ({"config": {...}, "title": ...}) is accepted too.
    if set(data) <= {"config", "title", "unlisted"} and isinstance(data.get("config"), dict):
        data = data["config"]
    return data


def _build_config(args: argparse.Namespace) -> Any:
    from app.core import dotted

    data: dict[str, Any] = _load_config_file(args.config) if args.config else {}
    for attr, path in (
        ("platform", "platform"),
        ("governor", "governor.name"),
        ("mechanism", "ipi_wakeup.mechanism"),
        ("duration_ms", "duration_ms"),
        ("seed", "seed"),
        ("sockets", "topology.sockets"),
        ("cores_per_socket", "topology.cores_per_socket"),
    ):
        value = getattr(args, attr)
        if value is not None:
            dotted.put(data, path, value)
    from app.core.errors import InvalidInput
    from app.runs.service import resolve_config

    name = data.get("platform")
    try:
        if isinstance(name, str) and _needs_db(name, data):
            from app.core.database import session_scope

            with _database() as factory, session_scope(factory) as session:
                return resolve_config(session, data, loc=())
        return resolve_config(_NoSession(), data, loc=())  # type: ignore[arg-type]
    except InvalidInput as exc:
        raise CliError("invalid config: " + errors_line(exc.detail)) from None


def _needs_db(name: str, data: dict[str, Any]) -> bool:
    from engine import BUILTIN_PLATFORMS

    return name not in BUILTIN_PLATFORMS and data.get("platform_table") is None


class _NoSession:
    """Stands in for a session when the platform is built in (no database needed)."""

    def get(self, *_args: Any) -> None:
        return None


def _say_database(settings: Any, *, writes: bool = True) -> None:
    """On stderr: the database a writing command writes to, and how to move an old ./idlelab.db."""
    from app.core.settings import database_note

    if writes:
        print(f"idlelab: database {_redact(settings.database_url)}", file=sys.stderr, flush=True)
    note = database_note(settings)
    if note:
        print(f"idlelab: {note}", file=sys.stderr, flush=True)


class _database:  # noqa: N801 - used as a context manager
    """The configured database, migrated to head; disposed on exit, where a writing command that
    succeeded says which database it wrote to."""

    def __init__(self, *, writes: bool = False) -> None:
        self.writes = writes

    def __enter__(self) -> Any:
        from app.core.database import make_db_engine, make_sessionmaker, upgrade_db

        settings = _settings()
        try:
            upgrade_db(settings.database_url)
        except Exception as exc:  # noqa: BLE001
            raise CliError(f"database {_redact(settings.database_url)}: {_one_line(exc)}") from None
        self.db_engine = make_db_engine(settings.database_url)
        self.settings = settings
        return make_sessionmaker(self.db_engine)

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.db_engine.dispose()
        if exc_type is None:
            _say_database(self.settings, writes=self.writes)


def cmd_run(args: argparse.Namespace) -> int:
    config = _build_config(args)
    from app.jobs.worker import one_line
    from engine import simulate

    compile_s = warm(notice=not args.quiet)
    bar = ProgressBar(enabled=not args.quiet and (args.progress or sys.stderr.isatty()))
    t0 = time.perf_counter()
    try:
        result = simulate(config, progress=bar)
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        bar.close()
        raise CliError(f"the simulation failed: {one_line(exc)}") from None
    bar.close()
    wall_s = time.perf_counter() - t0
    result_json = result.model_dump_json().encode()
    if args.json:
        if args.json == "-":
            sys.stdout.buffer.write(result_json + b"\n")
        else:
            try:
                Path(args.json).write_bytes(result_json)
            except OSError as exc:
                raise CliError(f"cannot write {args.json}: {exc.strerror or exc}") from None
    if args.json != "-":
        print(format_summary(result, wall_s))
    if args.save:
        from app.core.database import session_scope
        from app.main import wire
        from app.runs import lifecycle

        wire()  # the page stored with the run links the app's routes
        with _database(writes=True) as factory:
            spec = lifecycle.RunSpec(config, args.title or "", args.unlisted)
            with session_scope(factory) as session:
                new = lifecycle.add(session, spec, status="running")
                run_id, token = new.id, new.delete_token
            kwargs = {"engine_version": result.engine_version, "wall_s": wall_s, "compile_s": compile_s}
            try:
                lifecycle.finish(factory, run_id, result_json, **kwargs)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - the stored run says why, the user too
                with session_scope(factory) as session:
                    lifecycle.fail(session, run_id, f"the result could not be stored: {one_line(exc)}")
                raise CliError(f"the result could not be stored: {one_line(exc)}") from None
        out = sys.stderr if args.json == "-" else sys.stdout
        link, note = share_link(_settings(), run_id)
        print(f"saved: {link}  (delete token: {token})", file=out)
        if note:
            print(note, file=sys.stderr)
    return 0


def warm(*, notice: bool = True) -> float:
    """Load the engine's compiled code, saying so on stderr when it must be compiled first."""
    from app.jobs.worker import warm_engine
    from app.runs.service import COMPILING_NOTE
    from engine.jit import cache_is_warm

    if notice and not cache_is_warm():
        sys.stderr.write(f"idlelab: {COMPILING_NOTE}\n")
        sys.stderr.flush()
    seconds, _ = warm_engine()
    return seconds


def cmd_warm(args: argparse.Namespace) -> int:
    from engine.jit import cache_is_warm

    cold = not cache_is_warm()
    seconds = warm()
    print(f"engine {'compiled' if cold else 'loaded from its cache'} in {seconds:.1f} s")
    return 0


def share_link(settings: Any, run_id: str) -> tuple[str, str | None]:
    """A saved run's link, and a note when it is a guess: the configured server (IDLELAB_PUBLIC_URL,
    else IDLELAB_HOST and IDLELAB_PORT) is asked whether it holds the run."""
    import httpx

    link = f"{settings.base_url()}/runs/{run_id}"
    try:
        with httpx.stream("GET", link, timeout=2.0) as answer:  # the status is enough
            status = answer.status_code
    except httpx.HTTPError:
        status = None
    if status == 200:
        return link, None
    why = "no server answers there" if status is None else "the server there does not hold this run"
    return link, (
        f"idlelab: the link is a guess ({why}): set IDLELAB_PUBLIC_URL (or IDLELAB_PORT) to the "
        "server that reads this database"
    )


def format_summary(result: Any, wall_s: float) -> str:
    """A short human summary of a `SimResult`."""

    def us(ns: float | None) -> str:
        return "-" if ns is None else f"{ns / 1000:.2f} us"

    lines = [
        f"{result.platform}, {result.governor} ({result.governor_kernel}), {result.mechanism}: "
        f"{result.cpus} CPUs on {result.sockets} socket(s), {result.duration_ns / 1e6:g} ms simulated "
        f"in {wall_s:.2f} s ({result.events:,} events)",
        f"busy share {result.busy_share:.2%}, {result.wakeups:,} wake-ups from idle",
        "state      residency      usage      above      below",
    ]
    for s in result.states:
        flag = " (disabled)" if s.disabled else ""
        lines.append(f"{s.name:<8} {s.residency:>10.2%} {s.usage:>10,} {s.above:>10,} {s.below:>10,}{flag}")
    for src in ("wake", "intr"):
        stats = result.latency.get(src)
        if stats and stats.count:
            lines.append(f"{src}: mean {us(stats.mean_ns)}, p99 {us(stats.p99_ns)}, max {us(stats.max_ns)}")
    ipi = result.ipi
    sent = ipi.ipis_sent + ipi.sched_ipis_sent
    avoided = ipi.ipis_avoided + ipi.sched_ipis_avoided
    lines.append(
        f"IPIs sent {sent:,}, avoided {avoided:,} (calls + scheduler wake-ups): {ipi.requested:,} calls "
        f"sent {ipi.ipis_sent:,}, avoided {ipi.ipis_avoided:,}; {ipi.sched_requested:,} scheduler wake-ups "
        f"sent {ipi.sched_ipis_sent:,}, avoided {ipi.sched_ipis_avoided:,}"
    )
    lines.append(f"energy (estimate): {result.energy.joules:.4g} J")
    return "\n".join(lines)


# --- platforms, db -------------------------------------------------------------------------------


def cmd_platforms(args: argparse.Namespace) -> int:
    from engine import BUILTIN_PLATFORMS

    rows: list[tuple[str, str, Any]] = [
        (n, "built-in", BUILTIN_PLATFORMS[n]) for n in sorted(BUILTIN_PLATFORMS)
    ]
    if args.custom:
        from app.core.database import session_scope
        from app.platforms.service import platforms_view

        with _database() as factory, session_scope(factory) as session:
            for p in platforms_view(session).platforms:
                if p.custom:
                    rows.append((p.name, f"custom, on {p.based_on}", p.table))
    if args.json:
        import orjson

        print(
            orjson.dumps([t.model_dump(mode="json") for _, _, t in rows], option=orjson.OPT_INDENT_2).decode()
        )
        return 0
    for name, kind, table in rows:
        states = " ".join(f"{s.name}({s.exit_latency_us:g}/{s.target_residency_us:g})" for s in table.states)
        print(f"{name:<10} {kind:<16} {table.title}")
        print(f"{'':<10} states (exit/target us): {states}")
    return 0


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--interval: seconds, got {text!r}") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"--interval: 0.1 to 3600 seconds, got {text}")
    return value


def cmd_collect(args: argparse.Namespace) -> int:
    """Write this machine's sysfs dump (reads only sysfs and /proc; no root needed)."""
    from app.platforms.collect import collect

    text = collect(args.root, interval_s=args.interval)
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text)
    except OSError as exc:
        raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    lines = text.count("\n")
    print(f"wrote {args.output} ({lines:,} lines); import it with: idlelab platforms import {args.output}")
    return 0


def _read_input(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None


def _invalid(exc: Any, what: str) -> CliError:
    return CliError(f"{what}: " + "; ".join(str(e["msg"]) for e in exc.detail))


def cmd_platforms_import(args: argparse.Namespace) -> int:
    """Store a sysfs dump as a custom platform in the configured database."""
    from app.core.database import session_scope
    from app.core.errors import AppError, InvalidInput
    from app.platforms.service import import_dump

    data = _read_input(args.file)
    with _database(writes=True) as factory:
        try:
            with session_scope(factory) as session:
                limit = _settings().max_custom_platforms
                table, view = import_dump(session, data, limit=limit, name=args.name, title=args.title or "")
        except InvalidInput as exc:
            raise _invalid(exc, args.file) from None
        except AppError as exc:
            raise CliError(f"{args.file}: {exc.detail}") from None
        base = _settings().base_url()
    topo = view.topology
    print(f"imported {table.name}: {view.recognised.message}")
    rec = view.recognition
    if rec is not None:
        print(
            f"based_on: {rec.based_on or 'none'}; variant: {', '.join(rec.variant) or 'none'}; "
            f"driver: {rec.driver}; governor: {rec.governor or 'none'}"
            + ("" if rec.family_modelled else "; hardware not modelled for this family")
        )
    print(
        f"topology: {topo.sockets} socket(s), {topo.cores} cores, {topo.threads_per_core} thread(s) per core"
        + (" (inferred)" if topo.inferred else "")
    )
    shares = ", ".join(f"{s.name} {s.share:.1%}" for s in view.counters.states if s.share is not None)
    print(f"counters ({view.counters.basis}): {shares or 'none'}")
    print(f"page: {base}/platforms/{table.name}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Store a measurement (a wult result, or turbostat output) in the configured database."""
    from app.core.database import session_scope
    from app.core.errors import InvalidInput
    from app.measurements.service import create_measurement

    files = {Path(f).name if f != "-" else "stdin": _read_input(f) for f in args.files}
    with _database(writes=True) as factory:
        try:
            with session_scope(factory) as session:
                view, token = create_measurement(
                    session, files, title=args.title or "", unlisted=args.unlisted
                )
        except InvalidInput as exc:
            raise _invalid(exc, "not imported") from None
        base = _settings().base_url()
    print(f"imported {view.kind} measurement {view.id}: {view.title}")
    print(f"saved: {base}{view.url}  (delete token: {token})")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """The validation table: the missing runs are made first, through the job runner (as
    `POST /api/validation/run` does), then each published figure is printed beside its run's."""
    import orjson

    from app.core.database import session_scope
    from app.scenarios import service

    with _database(writes=True) as factory, _runner(factory, workers=1) as (runner, submit):
        with session_scope(factory) as session:
            submitted = service.submit_missing(session, submit)
        for s in submitted:
            print(f"simulating {s['role']} ({s['id']}) ...", file=sys.stderr, flush=True)
        for s in submitted:
            if s["status"] not in ("done", "failed"):
                asyncio.run(runner.wait(s["id"], timeout=600))
        with session_scope(factory) as session:
            body = service.validation_report(session)
    if args.json:
        sys.stdout.write(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(service.text_table(body))
    return 0 if body["all_ok"] else 1


# --- sweep --------------------------------------------------------------------------------------

POLL_S = 0.5


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


def sweep_on_server(body: dict[str, Any], server: str) -> int:
    server = server.rstrip("/")
    made = http_json("POST", f"{server}/api/sweeps", body)
    print(f"{made['points']} points; delete token {made['delete_token']}", file=sys.stderr)
    return follow(lambda: http_json("GET", f"{server}/api/sweeps/{made['id']}"), made["url"])


def sweep_on_scheduler(body: dict[str, Any], scheduler: str, factory: Any, base_url: str) -> int:
    """Compute the sweep on the cluster at `scheduler`, this process writing the results."""
    from app.core.database import session_scope
    from app.core.errors import InvalidInput
    from app.sweeps import service
    from app.sweeps.service import SweepCreate

    with _runner(factory, scheduler=scheduler) as (_, submit):
        try:
            with session_scope(factory) as session:
                made = service.submit(session, submit, SweepCreate.model_validate(body))
        except InvalidInput as exc:
            raise CliError(errors_line(exc.detail)) from None
        except ValueError as exc:  # the body's own shape (pydantic)
            raise CliError(errors_line(exc.errors())) from None  # type: ignore[attr-defined]
        print(f"{made['points']} points; delete token {made['delete_token']}", file=sys.stderr)

        def read() -> dict[str, Any]:
            with session_scope(factory) as session:
                return service.sweep_view(session, made["id"])

        return follow(read, base_url + service.sweep_path(made["id"]))


def cmd_sweep(args: argparse.Namespace) -> int:
    body = load_json_file(args.file, "a sweep (`base` and `axes`)")
    settings = _settings()
    if args.scheduler:
        with _database(writes=True) as factory:
            return sweep_on_scheduler(body, args.scheduler, factory, settings.base_url())
    return sweep_on_server(body, args.server or settings.base_url())


class _runner:  # noqa: N801 - used as a context manager
    """A job runner on the configured database and the submission bound to it, started (and the
    app's routes wired: finished runs store their pages); stopped on exit."""

    def __init__(self, factory: Any, *, workers: int = 0, scheduler: str = "") -> None:
        from app.jobs.runner import JobRunner
        from app.main import wire
        from app.runs.lifecycle import Submitter

        wire()
        self.runner = JobRunner(factory, workers=workers, scheduler=scheduler)
        self.submit = Submitter(factory, self.runner, _settings().reuse_results)

    def __enter__(self) -> tuple[Any, Any]:
        self.runner.start()
        return self.runner, self.submit

    def __exit__(self, *exc: object) -> None:
        self.runner.stop()


def cmd_db(args: argparse.Namespace) -> int:
    from app.core.database import downgrade_db, upgrade_db

    settings = _settings()
    _say_database(settings, writes=False)  # the line below names it
    try:
        if args.db_command == "upgrade":
            upgrade_db(settings.database_url, args.revision)
        else:
            downgrade_db(settings.database_url, args.revision)
    except CliError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise CliError(f"database {_redact(settings.database_url)}: {_one_line(exc)}") from None
    print(f"database {_redact(settings.database_url)}: at {args.revision}")
    return 0


def _one_line(exc: BaseException) -> str:
    from app.jobs.worker import one_line

    return one_line(exc)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="idlelab", description="Simulate CPU idle states; serve the dashboard and API.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = sub.add_parser("serve", help="start the dashboard and API (prints the URL to open)")
    serve.add_argument("--host", help="interface (default IDLELAB_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default IDLELAB_PORT or 8000)")
    serve.set_defaults(func=cmd_serve)

    run = sub.add_parser("run", help="run one simulation headless, with a progress bar")
    run.add_argument("config", nargs="?", help="a JSON config file (SimConfig, or '-' for stdin)")
    run.add_argument("--platform", help="skx, icx, wsm or a custom platform id")
    run.add_argument("--governor", help="menu, teo, ladder, oracle or fixed")
    run.add_argument("--mechanism", help="ipi, mwait_rfc or tif_polling")
    run.add_argument("--duration-ms", type=float, help="simulated time in milliseconds")
    run.add_argument("--seed", type=int)
    run.add_argument("--sockets", type=int)
    run.add_argument("--cores-per-socket", type=int)
    run.add_argument("--json", metavar="FILE", help="write the result JSON to FILE ('-' for stdout)")
    run.add_argument("--save", action="store_true", help="store the run in the database and print its link")
    run.add_argument("--title", help="title of the saved run")
    run.add_argument("--unlisted", action="store_true", help="save it unlisted (only its link finds it)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--progress", action="store_true", help="draw the progress bar even when stderr is not a terminal"
    )
    run.set_defaults(func=cmd_run)

    warm_cmd = sub.add_parser("warm", help="compile the engine now (or load it from its cache)")
    warm_cmd.set_defaults(func=cmd_warm)

    plats = sub.add_parser("platforms", help="list the C-state tables")
    plats.add_argument("--json", action="store_true", help="the full tables as JSON")
    plats.add_argument("--custom", action="store_true", help="include custom tables from the database")
    plats.set_defaults(func=cmd_platforms)
    plats_sub = plats.add_subparsers(dest="platforms_command", parser_class=_Parser)
    pimport = plats_sub.add_parser(
        "import", help="store a machine's sysfs dump (idlelab collect's file) as a custom platform"
    )
    pimport.add_argument("file", help="the dump ('-' for stdin)")
    pimport.add_argument("--name", help="the platform's id (default: from the CPU model name)")
    pimport.add_argument("--title")
    pimport.set_defaults(func=cmd_platforms_import)

    coll = sub.add_parser("collect", help="write this machine's cpuidle and topology dump (no root needed)")
    coll.add_argument("-o", "--output", help="the file to write (default: standard output)")
    coll.add_argument(
        "--interval",
        type=_interval,
        metavar="SECONDS",
        help="write a second snapshot after SECONDS (0.1-3600): the counters are then rates over that window",
    )
    coll.add_argument("--root", default="/", help=argparse.SUPPRESS)  # a fake tree, for tests
    coll.set_defaults(func=cmd_collect)

    imp = sub.add_parser("import", help="store a wult result or turbostat output as a measurement")
    imp.add_argument("files", nargs="+", help="datapoints.csv and info.yml, a zip/tar, or turbostat output")
    imp.add_argument("--title")
    imp.add_argument("--unlisted", action="store_true", help="only its link finds it")
    imp.set_defaults(func=cmd_import)

    validate = sub.add_parser("validate", help="each published figure beside the simulated one")
    validate.add_argument("--json", action="store_true", help="print the GET /api/validation body")
    validate.set_defaults(func=cmd_validate)

    sweep = sub.add_parser("sweep", help="run a sweep (a POST /api/sweeps body), a line per point")
    sweep.add_argument("file", help="the sweep as JSON ('-' for stdin)")
    sweep.add_argument("--server", help="the server to post it to (default http://IDLELAB_HOST:IDLELAB_PORT)")
    sweep.add_argument(
        "--scheduler", help="compute it here on this Dask cluster (tcp://HOST:PORT) into the configured DB"
    )
    sweep.set_defaults(func=cmd_sweep)

    fits_cli.register(sub, fits_cli.Helpers(_database, lambda: _settings().base_url()))

    from app.compare.cli import add_parser as add_compare

    add_compare(sub)

    db = sub.add_parser("db", help="database migrations")
    db_sub = db.add_subparsers(dest="db_command", required=True, parser_class=_Parser)
    up = db_sub.add_parser("upgrade", help="apply migrations (default: to head)")
    up.add_argument("revision", nargs="?", default="head")
    down = db_sub.add_parser("downgrade", help="revert migrations to REVISION (e.g. base)")
    down.add_argument("revision")
    db.set_defaults(func=cmd_db)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except CliError as exc:
        sys.stderr.write(f"idlelab: error: {exc}\n")
        return EXIT_ERROR
    except BrokenPipeError:  # `idlelab platforms | head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keep the interpreter quiet at exit
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("idlelab: interrupted\n")
        return 130
    except Exception as exc:  # noqa: BLE001 - never a traceback
        from app.jobs.worker import one_line

        sys.stderr.write(f"idlelab: error: {one_line(exc)}\n")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
