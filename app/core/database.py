"""Database engine and sessions: one helper opens each unit of work and commits or rolls back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 10_000


def make_db_engine(url: str, **kwargs: Any) -> Engine:
    """A SQLAlchemy engine; SQLite gets WAL, foreign keys and a busy timeout on every connection."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        connect_args = kwargs.pop("connect_args", {})
        # Connections move between the request threadpool and the job runner's threads.
        connect_args.setdefault("check_same_thread", False)
        connect_args.setdefault("timeout", SQLITE_BUSY_TIMEOUT_MS / 1000)
        db_engine = create_engine(url, connect_args=connect_args, **kwargs)

        @event.listens_for(db_engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            if parsed.database not in (None, "", ":memory:"):
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return db_engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def make_sessionmaker(db_engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=db_engine, expire_on_commit=False, autoflush=True)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One transaction: commit if the block ends normally, roll back if it raises."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str | None = None) -> Any:
    """Alembic's Config built in code from the repo root, so migrations run from any directory."""
    from alembic.config import Config

    from app.core.settings import REPO_ROOT

    cfg = Config(toml_file=str(REPO_ROOT / "pyproject.toml"))
    cfg.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    if url is not None:
        cfg.attributes["db_url"] = url
    return cfg


def upgrade_db(url: str, revision: str = "head") -> None:
    """Apply migrations up to `revision` (the app does this on start; so does `idlelab db upgrade`)."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def downgrade_db(url: str, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)
