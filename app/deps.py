"""FastAPI dependencies every handler declares: the request's session, the job runner, the settings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.config import Settings
from app.db import session_scope
from app.jobs import JobRunner


def get_session(request: Request) -> Iterator[Session]:
    """A session for one request, committed when the handler returns and before the response is
    sent (`scope="function"`), so a client never outruns a write."""
    with session_scope(request.app.state.sessionmaker) as session:
        yield session


def get_runner(request: Request) -> JobRunner:
    return request.app.state.runner  # type: ignore[no-any-return]


def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
RunnerDep = Annotated[JobRunner, Depends(get_runner)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
