"""Resolved tables stored once by hash (issue 23, hole 2): runs and sweep points of one custom
platform share one `platform_tables` row; a run's answer still carries its config's
`platform_table` inline, the same bytes as before; migration 0009 moves existing runs' tables
there and back, on both databases."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import func, select

from app.core.database import downgrade_db, make_db_engine, make_sessionmaker, session_scope, upgrade_db
from app.core.models import NO_TABLE, PlatformTable, Run
from app.runs import lifecycle
from engine import SimConfig, load_platform
from tests.app.factories import done_run, small_config

STATES = [
    {"name": "C1", "desc": "MWAIT 0x00", "flags": [], "exit_latency_us": 2, "target_residency_us": 2},
    {"name": "C6", "desc": "MWAIT 0x20", "flags": [], "exit_latency_us": 100, "target_residency_us": 400},
]


def rows(session_factory: Any) -> list[Any]:
    with session_scope(session_factory) as session:
        return list(session.execute(select(Run.id, Run.stored_config, Run.platform_table_hash, Run.config)))


def table_count(session_factory: Any) -> int:
    with session_scope(session_factory) as session:
        return int(session.scalar(select(func.count()).select_from(PlatformTable)) or 0)


def test_runs_and_sweep_points_share_one_stored_table(app_client: Any) -> None:
    r = app_client.post("/api/platforms", json={"name": "mine", "based_on": "skx", "states": STATES})
    assert r.status_code == 201, r.text
    table = r.json()["table"]
    ids = [
        app_client.post("/api/runs", json={"config": small_config(platform="mine", seed=s)}).json()["id"]
        for s in (1, 2, 3)
    ]
    sweep = {"base": small_config(platform="mine"), "axes": [{"path": "seed", "values": [4, 5, 6, 7, 8]}]}
    assert app_client.post("/api/sweeps", json=sweep).status_code == 202
    done, _ = done_run(app_client.app, {**small_config(platform="mine", seed=9), "platform_table": table})
    ids.append(done)
    factory = app_client.app.state.sessionmaker
    stored = rows(factory)
    assert len(stored) == 9 and table_count(factory) == 1
    table_json = orjson.dumps(table).decode()
    for _, config, digest, _whole in stored:
        assert digest is not None and NO_TABLE in config and "MWAIT 0x20" not in config
    for run_id in ids:
        answer = app_client.get(f"/api/runs/{run_id}")
        assert answer.json()["config"]["platform_table"] == table
        assert answer.json()["config"]["platform"] == "mine"
    # The answer's config is the config as validated, byte for byte.
    whole = SimConfig.model_validate({**small_config(platform="mine", seed=1), "platform_table": table})
    assert next(w for i, _, _, w in stored if i == ids[0]) == whole.model_dump_json()
    assert orjson.loads(whole.model_dump_json())["platform_table"] == orjson.loads(table_json)
    # A built-in platform's run stores no table.
    builtin = app_client.post("/api/runs", json={"config": small_config()}).json()["id"]
    assert next(d for i, _, d, _ in rows(factory) if i == builtin) is None
    assert table_count(factory) == 1


def test_migration_0009_moves_tables_out_and_back(db_url: str) -> None:
    upgrade_db(db_url)
    db_engine = make_db_engine(db_url)
    factory = make_sessionmaker(db_engine)
    try:
        skx = load_platform("skx").model_dump()
        other = {**skx, "name": "other", "title": "another table"}
        mine = skx | {"name": "mine"}
        bodies = [small_config(seed=1, platform="mine", platform_table=mine),
                  small_config(seed=2, platform="mine", platform_table=mine),
                  small_config(platform="other", platform_table=other), small_config()]  # fmt: skip
        configs = [SimConfig.model_validate(b) for b in bodies]
        with session_scope(factory) as session:
            ids = [lifecycle.add(session, lifecycle.RunSpec(c)).id for c in configs]
        wholes = {i: c.model_dump_json() for i, c in zip(ids, configs, strict=True)}
        assert {i: w for i, _, _, w in rows(factory)} == wholes and table_count(factory) == 2

        downgrade_db(db_url, "0006")
        with db_engine.connect() as conn:
            inline = dict(conn.exec_driver_sql("SELECT id, config FROM runs").all())
        assert inline == wholes  # every table back inside its config, the same bytes

        upgrade_db(db_url)
        after = rows(factory)
        assert {i: w for i, _, _, w in after} == wholes and table_count(factory) == 2
        hashes = {i: d for i, _, d, _ in after}
        assert hashes[ids[0]] == hashes[ids[1]] != hashes[ids[2]] and hashes[ids[3]] is None
        assert all(NO_TABLE in c for i, c, _, _ in after)
    finally:
        db_engine.dispose()
