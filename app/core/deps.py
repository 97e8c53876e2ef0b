"""FastAPI dependencies every handler declares (the request's session, the database, the settings)
and the Protocols through which a lower layer uses an upper one, implemented above and wired by
`app.main` at start-up: `RunEvents` (waiting on a run, telling the runner work is queued) and
`Compute` (a map over the cluster)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.core.database import session_scope
from app.core.settings import Settings


class RunEvents(Protocol):
    """What submitting and waiting need of the job runner."""

    def queued(self) -> None:
        """New `queued` rows were committed: claim them."""

    async def wait(self, run_id: str, timeout: float) -> str | None:
        """Until the run is done or failed, at most `timeout` s; its status then (None: gone)."""


class Compute(Protocol):
    """A map over the cluster: `fn(item)` for every item, results in order."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, priority: int = 0) -> list[Any]: ...


def get_session(request: Request) -> Iterator[Session]:
    """A session for one request, committed when the handler returns and before the response is
    sent (`scope="function"`), so a client never outruns a write. A plain generator: FastAPI runs
    it, its commit and its close in the threadpool, never on the event loop."""
    with session_scope(request.app.state.sessionmaker) as session:
        yield session


async def get_db(request: Request) -> Engine:
    """The database itself, for the hot reads: a Core connection per read costs a fraction of an
    ORM session (the reads of a finished run's bytes need no more). Async, as it touches no
    database: handing it out takes no thread."""
    return request.app.state.db_engine  # type: ignore[no-any-return]


async def get_settings(request: Request) -> Settings:
    """Async, as it touches no database: a plain function would take a thread hop per request."""
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_run_events(request: Request) -> RunEvents:
    return request.app.state.run_events  # type: ignore[no-any-return]


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
DbDep = Annotated[Engine, Depends(get_db)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
RunEventsDep = Annotated[RunEvents, Depends(get_run_events)]
