"""FastAPI dependencies every handler declares: the request's session (or, for the hot reads, the
database and the artifacts LRU), the job runner, the settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.config import Settings
from app.db import session_scope
from app.jobs import JobRunner
from app.runs.artifacts import Artifacts
from app.runs.views import ListCache


async def get_session(request: Request) -> AsyncIterator[Session]:
    """A session for one request, committed when the handler returns and before the response is
    sent (`scope="function"`), so a client never outruns a write. Opened on the event loop (a
    thread hop per request would cost more than a read): creating a session does no I/O, and a
    handler that writes is a plain `def`, so its statements run in the threadpool; the commit
    here then only finishes a transaction that already holds SQLite's write lock."""
    with session_scope(request.app.state.sessionmaker) as session:
        yield session


async def get_db(request: Request) -> Engine:
    """The database itself, for the hot reads: a Core connection per read costs a fraction of an
    ORM session (the reads of a finished run's bytes need no more)."""
    return request.app.state.db_engine  # type: ignore[no-any-return]


async def get_artifacts(request: Request) -> Artifacts:
    return request.app.state.artifacts  # type: ignore[no-any-return]


async def get_list_cache(request: Request) -> ListCache:
    return request.app.state.run_lists  # type: ignore[no-any-return]


def get_runner(request: Request) -> JobRunner:
    return request.app.state.runner  # type: ignore[no-any-return]


def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
DbDep = Annotated[Engine, Depends(get_db)]
ArtifactsDep = Annotated[Artifacts, Depends(get_artifacts)]
ListCacheDep = Annotated[ListCache, Depends(get_list_cache)]
RunnerDep = Annotated[JobRunner, Depends(get_runner)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
