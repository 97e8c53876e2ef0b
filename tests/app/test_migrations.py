"""Alembic: one head, upgrade to head and down to base, and models that match the migrations."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from app.core.database import alembic_config, downgrade_db, make_db_engine, upgrade_db
from app.core.models import Base
from tests.conftest import sqlite_url


def test_exactly_one_head() -> None:
    assert len(ScriptDirectory.from_config(alembic_config()).get_heads()) == 1


def test_upgrade_to_head_and_down_to_base(db_url: str) -> None:
    url = db_url
    upgrade_db(url)
    db_engine = make_db_engine(url)
    try:
        with db_engine.connect() as conn:
            assert {"runs", "custom_platforms", "alembic_version"} <= set(inspect(conn).get_table_names())
        downgrade_db(url, "base")
        with db_engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) <= {"alembic_version"}
        upgrade_db(url)
        with db_engine.connect() as conn:
            assert "runs" in inspect(conn).get_table_names()
    finally:
        db_engine.dispose()


def test_models_match_migrations(db_url: str) -> None:
    url = db_url
    upgrade_db(url)
    db_engine = make_db_engine(url)
    try:
        with db_engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
            )
    finally:
        db_engine.dispose()
    assert diff == []


def test_sqlite_pragmas(tmp_path: Path) -> None:
    db_engine = make_db_engine(sqlite_url(tmp_path / "p.db"))
    try:
        with db_engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() > 0
    finally:
        db_engine.dispose()


def test_ipi_counts_recounted_both_ways(tmp_path: Path) -> None:
    """0004 makes `ipis_sent`/`ipis_avoided` count calls and scheduler wake-ups together (from the
    stored result), and its downgrade puts back the calls alone."""
    import orjson
    from sqlalchemy import select, update

    from app.core.database import make_sessionmaker, session_scope
    from app.core.models import Run
    from app.runs import lifecycle
    from app.runs.lifecycle import RunSpec
    from engine import SimConfig

    url = sqlite_url(tmp_path / "m.db")
    upgrade_db(url)
    db_engine = make_db_engine(url)
    ipi = {"ipis_sent": 3, "ipis_avoided": 40, "sched_ipis_sent": 5, "sched_ipis_avoided": 70}
    try:
        with session_scope(make_sessionmaker(db_engine)) as session:
            run_id = lifecycle.add(session, RunSpec(SimConfig())).id
            session.execute(update(Run).where(Run.id == run_id).values(result=orjson.dumps({"ipi": ipi})))

        def counts() -> tuple[int, int]:
            with db_engine.connect() as conn:
                row = conn.execute(select(Run.ipis_sent, Run.ipis_avoided).where(Run.id == run_id)).one()
            return row[0], row[1]

        downgrade_db(url, "0003")
        assert counts() == (3, 40)
        upgrade_db(url)
        assert counts() == (8, 110)
    finally:
        db_engine.dispose()
