"""The FastAPI app: `create_app(settings=None)` wires settings, database, job runner and the
slices' routers (runs, platforms, scenarios, sweeps), behind `app.web`'s outermost middleware.

On start (lifespan) it applies the Alembic migrations, requeues runs a stopped server left
`running`, and starts the job runner (which builds its Dask client in the background); on stop
it stops the runner (runs in flight are requeued).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi.openapi.utils import get_openapi
from fastapi_offline import FastAPIOffline

from app import errors, web
from app.config import Settings, get_settings
from app.db import make_db_engine, make_sessionmaker, upgrade_db
from app.jobs import JobRunner
from app.measurements import api as measurements_api
from app.measurements import pages as measurements_pages
from app.measurements.views import IMPORT_PATHS as MEASUREMENT_PATHS
from app.platforms import api as platforms_api
from app.platforms import pages as platforms_pages
from app.platforms.importing import IMPORT_PATHS as DUMP_PATHS
from app.runs import api as runs_api
from app.runs import pages as runs_pages
from app.runs.artifacts import Artifacts
from app.runs.views import ListCache
from app.scenarios import api as scenarios_api
from app.scenarios import pages as scenarios_pages
from app.schemas import RunCreate
from app.sweeps import api as sweeps_api
from app.sweeps import pages as sweeps_pages
from engine import ENGINE_VERSION

ROUTERS = (
    runs_api.router,
    platforms_api.router,
    scenarios_api.router,
    measurements_api.router,
    sweeps_api.router,
    runs_pages.router,
    measurements_pages.router,
    platforms_pages.router,
    scenarios_pages.router,
    sweeps_pages.router,
)


def _openapi(app: FastAPI) -> Any:
    """The generated schema plus `RunCreate` (POST /api/runs reads its body itself, to resolve a
    custom platform id before validating, so FastAPI would not list the model by itself)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        extra = RunCreate.model_json_schema(ref_template="#/components/schemas/{model}")
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, sub in extra.pop("$defs", {}).items():
            components.setdefault(name, sub)
        components["RunCreate"] = extra
        app.openapi_schema = schema
        return schema

    return openapi


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app. Nothing touches the database until the lifespan starts."""
    settings = settings or get_settings()
    db_engine = make_db_engine(settings.database_url)
    sessionmaker = make_sessionmaker(db_engine)
    runner = JobRunner(
        sessionmaker,
        workers=settings.workers,
        scheduler=settings.dask_scheduler,
        progress_step=settings.progress_step,
        reuse=settings.reuse_results,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(upgrade_db, settings.database_url)
        await run_in_threadpool(runner.recover)
        runner.start()
        # Startup's objects (numba, plotly, SQLAlchemy, FastAPI...) live as long as the process: out
        # of the cyclic GC's sight, a full collection no longer walks them (~150 ms, a pause every
        # request in flight would wait out).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await run_in_threadpool(runner.stop)
            db_engine.dispose()

    app = FastAPIOffline(
        title="idlelab",
        version=ENGINE_VERSION,
        description="Simulate CPU idle states (intel_idle C-states, cpuidle governors, IPI wake-ups).",
        lifespan=lifespan,
        redirect_slashes=False,
    )
    app.state.settings = settings
    app.state.db_engine = db_engine
    app.state.sessionmaker = sessionmaker
    app.state.runner = runner
    app.state.artifacts = Artifacts(settings.read_cache_bytes)
    app.state.run_lists = ListCache()
    errors.install(app)
    web.install(
        app,
        max_body_bytes=settings.max_body_bytes,
        loopback_only=settings.host in web.LOOPBACK_HOSTS,
        routers=ROUTERS,
        body_limits={path: settings.import_max_body_bytes for path in (*DUMP_PATHS, *MEASUREMENT_PATHS)},
    )
    app.openapi = _openapi(app)  # type: ignore[method-assign]
    return app
