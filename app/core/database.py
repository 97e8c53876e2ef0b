"""Database engine and sessions: one helper opens each unit of work and commits or rolls back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

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


class DatabaseNotUTF8(RuntimeError):
    """A PostgreSQL database whose encoding is not UTF-8: it cannot hold every title and name
    (SQL_ASCII even hands text back as bytes), so nothing is written to it."""


def require_utf8(url: str) -> None:
    """Refuse a PostgreSQL database that is not encoded in UTF-8, saying how to create one that is
    (other databases store Unicode whatever their settings)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return
    # The driver's own connection: SQLAlchemy's first connect already fails on SQL_ASCII (the
    # server's version string comes back as bytes).
    dialect = create_engine(url, poolclass=NullPool).dialect
    cargs, cparams = dialect.create_connect_args(parsed)
    conn = dialect.loaded_dbapi.connect(*cargs, **cparams)
    try:
        cursor = conn.cursor()
        cursor.execute("SHOW server_encoding")
        value = cursor.fetchone()[0]
    finally:
        conn.close()
    encoding = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
    if encoding.upper() not in ("UTF8", "UTF-8"):
        name = '"' + (parsed.database or "idlelab").replace('"', '""') + '_utf8"'
        raise DatabaseNotUTF8(
            f"database {parsed.database!r} is encoded {encoding}, not UTF8, and cannot store every "
            f"title and name: create one that is, CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE "
            "template0, and point IDLELAB_DATABASE_URL at it"
        )


def upgrade_db(url: str, revision: str = "head") -> None:
    """Apply migrations up to `revision` (the app does this on start; so does `idlelab db
    upgrade`), once the database is known to hold Unicode (`require_utf8`)."""
    from alembic import command

    require_utf8(url)
    command.upgrade(alembic_config(url), revision)


def downgrade_db(url: str, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)
