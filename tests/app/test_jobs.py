"""The job runner through a real server: failures are stored, restarts recover interrupted runs;
claims: a result is recorded once, under the claim it was computed for."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from app.core import models
from app.core.database import make_db_engine, make_sessionmaker, session_scope, upgrade_db
from app.core.models import Run
from app.jobs.runner import JobRunner
from app.jobs.worker import WORKER_NICENESS
from app.runs import lifecycle, store
from app.runs.lifecycle import RunSpec
from engine import SimConfig
from tests.app.factories import POLL_TIMEOUT_S, small_config, submit, wait_finished

# About 4 million events: long enough to be caught mid-run, short enough for CI.
LONG_CONFIG: dict[str, Any] = {"duration_ms": 60000, "title": "long"}
# HZ 250 keeps the minute-long runs under the expected-events limit (the default HZ is 1000).
TICK_250 = {"tick": {"hz": 250}}


def _snapshot(db_url: str) -> dict[str, dict[str, Any]]:
    db_engine = make_db_engine(db_url)
    try:
        with session_scope(make_sessionmaker(db_engine)) as session:
            rows = session.scalars(select(Run)).all()
            return {r.id: {c.key: getattr(r, c.key) for c in Run.__table__.columns} for r in rows}
    finally:
        db_engine.dispose()


@pytest.mark.slow
def test_a_failing_run_stores_its_error_and_the_server_stays_up(server_factory: Any, db_url: str) -> None:
    server = server_factory().start()
    # A run whose stored config the engine cannot read: inserted behind the API's back.
    db_engine = make_db_engine(db_url)
    try:
        with session_scope(make_sessionmaker(db_engine)) as session:
            bad_id = lifecycle.add(session, RunSpec(SimConfig(), title="broken")).id
            session.get(Run, bad_id).stored_config = '{"duration_ms": "soon"}'  # type: ignore[union-attr]
    finally:
        db_engine.dispose()
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        run = wait_finished(client, bad_id)
        assert run["status"] == "failed"
        assert "duration_ms" in run["error"] and "\n" not in run["error"]
        # The worker and the server carry on.
        ok = client.post("/api/runs?wait=true", json={"config": small_config()}).json()
        assert ok["status"] == "done"


@pytest.mark.slow
def test_restart_requeues_and_finishes_an_interrupted_run(server_factory: Any, db_url: str) -> None:
    server = server_factory().start()
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        done = client.post("/api/runs?wait=true", json={"config": small_config(), "title": "before"}).json()
        assert done["status"] == "done"
        long = submit(client, {"duration_ms": LONG_CONFIG["duration_ms"], "wakeups": TICK_250}, title="long")
        wait_finished(client, long["id"], statuses=("running",))
    server.kill()  # a crash mid-run: no shutdown hook runs

    before = _snapshot(db_url)
    assert before[long["id"]]["status"] == "running"

    server = server_factory().start()
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        finished = wait_finished(client, long["id"])
        assert finished["status"] == "done", finished["error"]
        assert finished["title"] == "long"
        assert finished["result"]["duration_ns"] == 60000 * 1_000_000
    after = _snapshot(db_url)
    assert set(after) == set(before)
    assert after[done["id"]] == before[done["id"]]
    changed = {k for k in after[long["id"]] if after[long["id"]][k] != before[long["id"]][k]}
    summary_cols = set(models.RESULT_SUMMARY_COLUMNS)
    allowed = {
        "status",
        "progress",
        "result",
        "engine_version",
        "started_at",
        "finished_at",
        "wall_s",
        "compile_s",
        "page",
        "page_version",
        "claim",
        "claimed_by",
        "repeats",
        "summary_stats",
    }
    assert changed <= allowed | summary_cols


def test_requeue_interrupted_touches_only_running_runs(db_url: str) -> None:
    url = db_url
    upgrade_db(url)
    db_engine = make_db_engine(url)
    factory = make_sessionmaker(db_engine)
    try:
        with session_scope(factory) as session:
            ids = [lifecycle.add(session, RunSpec(SimConfig(), title=s)).id for s in ("a", "b", "c")]
            session.get(Run, ids[1]).status = "running"
            session.get(Run, ids[2]).status = "failed"
        with session_scope(factory) as session:
            assert lifecycle.requeue(session) == 1
        with session_scope(factory) as session:
            assert [session.get(Run, i).status for i in ids] == ["queued", "queued", "failed"]
    finally:
        db_engine.dispose()


@pytest.mark.slow
def test_progress_is_recorded_while_running(server_factory: Any) -> None:
    server = server_factory().start()
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        # ~1 s of work for the engine: long enough to be seen running, many times over.
        topology = {"sockets": 2, "cores_per_socket": 48, "threads_per_core": 1}
        config = {"duration_ms": 60000, "topology": topology, "wakeups": TICK_250}
        run = submit(client, config, title="progress")
        seen: set[float] = set()
        deadline = time.monotonic() + POLL_TIMEOUT_S
        while True:
            r = client.get(f"/api/runs/{run['id']}").json()
            if r["status"] == "running":
                seen.add(r["progress"])
            if r["status"] in ("done", "failed"):
                break
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert r["status"] == "done"
        assert any(0 < p < 1 for p in seen), seen


def test_workers_yield_the_cpu_to_the_web_process(db_url: str) -> None:
    url = db_url
    upgrade_db(url)
    db_engine = make_db_engine(url)
    runner = JobRunner(make_sessionmaker(db_engine), workers=1)
    runner.start()
    try:
        deadline = time.monotonic() + POLL_TIMEOUT_S  # the client is built in the background
        while runner._slots == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pids = list(runner._client.run(os.getpid).values())
        own = os.getpriority(os.PRIO_PROCESS, 0)
        assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in pids] == [min(19, own + WORKER_NICENESS)]
    finally:
        runner.stop()
        db_engine.dispose()


@pytest.fixture
def running_run(db_url: str) -> Iterator[tuple[Any, Any, str]]:
    """(a runner without workers, its sessionmaker, a run left running) on a migrated database."""
    upgrade_db(db_url)
    db_engine = make_db_engine(db_url)
    factory = make_sessionmaker(db_engine)
    with session_scope(factory) as session:
        run_id = lifecycle.add(session, RunSpec(SimConfig(duration_ms=1)), status="running").id
    yield JobRunner(factory, workers=0), factory, run_id
    db_engine.dispose()


def test_a_result_that_cannot_be_written_fails_the_run_with_the_reason(
    running_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.jobs.runner
    import app.runs.lifecycle

    runner, factory, run_id = running_run
    attempts = []

    def disk_full(*args: Any, **kwargs: Any) -> bool:
        attempts.append(1)
        raise OperationalError("UPDATE runs ...", {}, Exception("database or disk is full"))

    monkeypatch.setattr(app.runs.lifecycle, "finish", disk_full)
    monkeypatch.setattr(app.jobs.runner.time, "sleep", lambda s: None)
    runner._record(run_id, b"{}", "v", 0.5, 0.0)
    assert len(attempts) == 5  # retried first
    with session_scope(factory) as session:
        run = session.get(Run, run_id)
        assert run.status == "failed" and "database or disk is full" in run.error


def test_a_full_disk_is_logged_once_per_episode_not_per_heartbeat(
    running_run: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import app.jobs.runner

    runner, _, _ = running_run
    real_transaction = app.jobs.runner._in_transaction
    full = True

    def transaction(*args: Any) -> Any:
        if full:
            raise OperationalError("UPDATE runners ...", {}, Exception("database or disk is full"))
        return real_transaction(*args)

    monkeypatch.setattr(app.jobs.runner, "_in_transaction", transaction)
    monkeypatch.setattr(app.jobs.runner.time, "sleep", lambda s: None)

    def heartbeats(n: int) -> None:  # what the supervisor writes every beat
        for _ in range(n):
            runner._write(lambda s: store.heartbeat(s, runner.id, datetime.now(UTC)))
            runner.recover(unclaimed=False)

    caplog.set_level(logging.INFO, logger="idlelab.jobs")
    heartbeats(10)
    failed = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(failed) == 1 and failed[0].exc_info is not None
    assert "database or disk is full" in failed[0].getMessage()

    caplog.clear()
    full = False  # space freed
    heartbeats(3)
    assert [r.getMessage() for r in caplog.records] == ["database writes work again, after 20 failed"]

    caplog.clear()
    full = True  # a new episode is said again, once
    heartbeats(5)
    assert len([r for r in caplog.records if r.exc_info is not None]) == 1


def test_a_result_over_the_size_limit_fails_the_run_at_once(running_run: Any) -> None:
    from app.runs.lifecycle import MAX_RESULT_BYTES

    runner, factory, run_id = running_run
    runner._record(run_id, b" " * (MAX_RESULT_BYTES + 1), "v", 0.5, 0.0)
    with session_scope(factory) as session:
        run = session.get(Run, run_id)
        assert run.status == "failed" and "over the limit" in run.error and run.result is None


def test_runs_running_with_no_live_job_are_reaped(running_run: Any) -> None:
    runner, factory, run_id = running_run
    assert runner.reap(grace_s=60) == 0  # just started: maybe in flight
    assert runner.reap(grace_s=0) == 1
    with session_scope(factory) as session:
        run = session.get(Run, run_id)
        assert run.status == "failed" and "no job" in run.error


def test_a_result_is_recorded_only_under_its_claim(running_run: Any) -> None:
    from datetime import UTC, datetime

    runner, factory, _ = running_run
    with session_scope(factory) as session:
        run_id = lifecycle.add(session, RunSpec(SimConfig(duration_ms=1))).id
    with session_scope(factory) as session:
        assert lifecycle.claim(session, run_id, datetime.now(UTC), claim="new", runner="r") is not None
    result = b'{"busy_share": 0.5}'
    runner._record(run_id, result, "v", 0.5, 0.0, claim="old")  # an earlier attempt's answer
    with session_scope(factory) as session:
        assert store.run_status(session, run_id) == "running"
    runner._record(run_id, result, "v", 0.5, 0.0, claim="new")
    runner._record(run_id, b'{"busy_share": 0.9}', "v", 0.5, 0.0, claim="new")  # a second completion
    with session_scope(factory) as session:
        run = session.get(Run, run_id)
        assert run.status == "done" and run.busy_share == 0.5


def test_recover_leaves_the_runs_of_a_live_runner_alone(running_run: Any) -> None:
    from datetime import UTC, datetime, timedelta

    runner, factory, _ = running_run
    now = datetime.now(UTC)
    with session_scope(factory) as session:
        ids = [lifecycle.add(session, RunSpec(SimConfig(duration_ms=1))).id for _ in range(2)]
        store.heartbeat(session, "alive", now)
        store.heartbeat(session, "gone", now - timedelta(hours=1))
    with session_scope(factory) as session:
        for run_id, holder in zip(ids, ("alive", "gone"), strict=True):
            lifecycle.claim(session, run_id, now, claim=holder, runner=holder)
    runner.recover(unclaimed=False)
    with session_scope(factory) as session:
        assert [store.run_status(session, i) for i in ids] == ["running", "queued"]
