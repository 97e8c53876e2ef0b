"""The runs list's queries are index walks on SQLite for every sort key and direction: no scan of
the table and no sort of every row (that cost ~15 ms a list read at 6,000 runs, under a write
rate that leaves the list cache cold); the queue caps' sums read only their covering index."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine

from app.core.database import make_db_engine, upgrade_db
from app.core.models import SORTABLE_COLUMNS, Run
from app.runs import store
from app.runs.lifecycle import ACTIVE_EVENTS
from tests.conftest import sqlite_url


@pytest.fixture(scope="module")
def db_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    url = sqlite_url(tmp_path_factory.mktemp("plans") / "plans.db")
    upgrade_db(url)
    engine = make_db_engine(url)
    yield engine
    engine.dispose()


def _plan(db_engine: Engine, statement: Any, params: dict[str, object] | None = None) -> list[str]:
    """SQLite's plan steps for `statement` with `params` (None: its own values, inlined)."""
    if params is None:
        compiled = statement.compile(dialect=db_engine.dialect, compile_kwargs={"literal_binds": True})
        positional: tuple[object, ...] = ()
    else:
        compiled = statement.compile(dialect=db_engine.dialect)
        values = compiled.construct_params(params)
        positional = tuple(values[name] for name in compiled.positiontup)
    with db_engine.connect() as conn:
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", positional).all()
    return [row[-1] for row in rows]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("sort", SORTABLE_COLUMNS)
def test_every_sort_walks_its_index(db_engine: Engine, sort: str, descending: bool) -> None:
    page, count = store._list_statements(sort, descending, ())
    plan = _plan(db_engine, page, {"limit": 50, "offset": 100})
    assert any(f"INDEX ix_runs_listed_{sort} " in step for step in plan), plan
    # The id tie-break may be sorted within equal keys ("RIGHT PART"), never the whole list.
    assert not any(step.startswith("SCAN") or step == "USE TEMP B-TREE FOR ORDER BY" for step in plan), plan
    counted = _plan(db_engine, count, {})
    assert any("COVERING INDEX" in step for step in counted), counted


def test_queue_caps_sums_read_only_their_index(db_engine: Engine) -> None:
    for statement in (ACTIVE_EVENTS, ACTIVE_EVENTS.where(Run.client == "127.0.0.1")):
        plan = _plan(db_engine, statement)
        assert any("COVERING INDEX ix_runs_active_client_expected_events" in step for step in plan), plan


def test_the_reuse_lookup_reads_by_config_hash(db_engine: Engine) -> None:
    """`status = 'done'` must not send it to an index on the status (the caps' is partial)."""
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append((statement, parameters))

    event.listen(db_engine, "before_cursor_execute", record)
    try:
        with Session(db_engine) as session:
            assert store.find_reusable(session, "0" * 64, "an-engine") is None
    finally:
        event.remove(db_engine, "before_cursor_execute", record)
    statement, parameters = next((s, p) for s, p in seen if "config_hash" in s)
    with db_engine.connect() as conn:
        plan = [r[-1] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)]
    assert any("INDEX ix_runs_config_hash_engine_version" in step for step in plan), plan
