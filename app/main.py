"""The FastAPI app: `create_app(settings=None)` wires settings, database, job runner and the
slices' routers behind `app.core.web`'s outermost middleware, and hands the lower layers what
they need of the upper ones (`wire`): the routes `url_for` links to, the chart palette the
templates use, the error page, the runner as `RunEvents`.

On start (lifespan) it applies the Alembic migrations, requeues runs a stopped server left
`running`, starts the job runner (which builds its Dask client in the background) and the watch
that drops cached answers of runs other processes delete; on stop it stops them (runs in flight
are requeued).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi_offline import FastAPIOffline

from app import charts
from app.compare import api as compare_api
from app.compare import notes_api
from app.compare import pages as compare_pages
from app.core import errors, web
from app.core.database import make_db_engine, make_sessionmaker, upgrade_db
from app.core.settings import Settings, get_settings
from app.fits import api as fits_api
from app.fits import pages as fits_pages
from app.fits.runner import FitRunner
from app.jobs.runner import DB_THREADS, JobRunner
from app.measurements import api as measurements_api
from app.measurements import pages as measurements_pages
from app.measurements.service import IMPORT_PATHS as MEASUREMENT_PATHS
from app.platforms import api as platforms_api
from app.platforms import pages as platforms_pages
from app.platforms.service import IMPORT_PATHS as DUMP_PATHS
from app.runs import api as runs_api
from app.runs import lifecycle, service
from app.runs import pages as runs_pages
from app.runs.lifecycle import Submitter
from app.runs.service import Artifacts, ListCache
from app.scenarios import api as scenarios_api
from app.scenarios import pages as scenarios_pages
from app.sweeps import api as sweeps_api
from app.sweeps import pages as sweeps_pages
from engine import ENGINE_VERSION

# Longest wait for a pooled connection before the request answers 503 (`Retry-After: 1`).
POOL_TIMEOUT_S = 5.0

ROUTERS = (
    runs_api.router,
    platforms_api.router,
    scenarios_api.router,
    measurements_api.router,
    sweeps_api.router,
    compare_api.router,
    fits_api.router,
    notes_api.router,
    runs_pages.router,
    compare_pages.router,
    measurements_pages.router,
    platforms_pages.router,
    scenarios_pages.router,
    sweeps_pages.router,
    fits_pages.router,
)


def wire() -> None:
    """What the lower layers use of the upper ones, given at start-up (the app's, or a command's
    that renders pages): the routes links name, and the palette and names templates show."""
    web.use_routes(ROUTERS)
    web.env.globals.update(
        state_color=charts.state_color,
        source_names=charts.SOURCE_NAMES,
        mechanism_names=charts.MECHANISM_NAMES,
        sender_part_names=charts.PART_NAMES,
    )


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app. Nothing touches the database until the lifespan starts."""
    settings = settings or get_settings()
    wire()
    # A connection for every request thread and runner thread, and two spare (migrations, a
    # process-wide read): no overflow, and a short wait answered 503 rather than a 30 s stall.
    pool_size = settings.threads + DB_THREADS + 2
    db_engine = make_db_engine(
        settings.database_url, pool_size=pool_size, max_overflow=0, pool_timeout=POOL_TIMEOUT_S
    )
    assert db_engine.pool.size() == settings.threads + DB_THREADS + 2  # type: ignore[attr-defined]
    sessionmaker = make_sessionmaker(db_engine)
    runner = JobRunner(
        sessionmaker,
        workers=settings.workers,
        scheduler=settings.dask_scheduler,
        progress_step=settings.progress_step,
    )

    fit_runner = FitRunner(sessionmaker, runner, runner_id=runner.id, enabled=runner.enabled)
    stopping = threading.Event()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Handlers that are plain functions, and the session dependency, run on these threads.
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.threads
        await run_in_threadpool(upgrade_db, settings.database_url)
        await run_in_threadpool(runner.recover)
        await run_in_threadpool(fit_runner.recover)
        runner.start()
        fit_runner.start()
        pages = threading.Thread(
            target=lifecycle.rerender_stale_pages,
            args=(sessionmaker, stopping),
            name="idlelab-pages",
            daemon=True,
        )
        pages.start()
        # Cached answers of runs another process deletes are dropped within a second.
        deletes = threading.Thread(
            target=service.watch_deletes,
            args=(db_engine, app.state.artifacts, stopping),
            name="idlelab-deletes",
            daemon=True,
        )
        deletes.start()
        # Startup's objects (numba, plotly, SQLAlchemy, FastAPI...) live as long as the process: out
        # of the cyclic GC's sight, a full collection no longer walks them (~150 ms, a pause every
        # request in flight would wait out).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            stopping.set()
            await run_in_threadpool(fit_runner.stop)
            await run_in_threadpool(runner.stop)
            deletes.join(5)
            db_engine.dispose()

    app = FastAPIOffline(
        title="idlelab",
        version=ENGINE_VERSION,
        description="Simulate CPU idle states (intel_idle C-states, cpuidle governors, IPI wake-ups).",
        lifespan=lifespan,
        redirect_slashes=False,
        # One schema per model: SimConfig's serializer (it leaves an empty load out) must not split
        # it into SimConfig-Input and SimConfig-Output, which scripts reading the schema rely on.
        separate_input_output_schemas=False,
    )
    app.state.settings = settings
    app.state.db_engine = db_engine
    app.state.sessionmaker = sessionmaker
    app.state.runner = runner
    app.state.run_events = runner
    app.state.fit_runner = fit_runner
    caps = lifecycle.QueueCaps(settings.client_queued_events, settings.queued_events)
    app.state.submitter = Submitter(sessionmaker, runner, settings.reuse_results, caps)
    app.state.artifacts = Artifacts(settings.read_cache_bytes)
    app.state.run_lists = ListCache()
    errors.install(app, web.error_page)
    web.install(
        app,
        max_body_bytes=settings.max_body_bytes,
        loopback_only=settings.host in web.LOOPBACK_HOSTS,
        routers=ROUTERS,
        body_limits={path: settings.import_max_body_bytes for path in (*DUMP_PATHS, *MEASUREMENT_PATHS)},
    )
    return app
