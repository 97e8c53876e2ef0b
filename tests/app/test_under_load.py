"""No database work on the event loop: with every request thread and every pooled connection
held, a static file still answers at once, and a database read answers 503 (`Retry-After`)
within the pool's time-out, instead of the server freezing. A finished run's read: from memory
with no thread and no query, a miss one primary-key read; deletes seen at once here and within
a second from elsewhere; the change counter moved only by changed rows."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest
import uvicorn
from sqlalchemy import delete, event

from app.core.database import make_db_engine, make_sessionmaker, session_scope
from app.core.models import Note, Run, utcnow
from app.core.settings import Settings
from app.jobs.runner import DB_THREADS, JobRunner
from app.main import POOL_TIMEOUT_S, create_app
from app.runs import lifecycle, store
from app.runs.service import DELETES_SEEN_WITHIN_S, Artifacts
from engine import SimConfig
from tests.app.factories import done_run, small_config
from tests.conftest import free_port, sqlite_url


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Any, asyncio.AbstractEventLoop]]:
    """The app under uvicorn on its own event loop in a thread: (base URL, app, loop)."""
    app = create_app(Settings(database_url=sqlite_url(tmp_path / "load.db"), workers=0, threads=4))
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", app, loop
    server.should_exit = True
    thread.join(30)


def test_the_pool_is_sized_to_the_threads(server: Any) -> None:
    _, app, _ = server
    assert app.state.db_engine.pool.size() == app.state.settings.threads + DB_THREADS + 2
    assert app.state.db_engine.pool._max_overflow == 0


class HeldThreads:
    """Every thread token of the server's limiter, taken on its loop while the block runs: what
    needs a thread waits, what needs none answers."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.owners: list[object] = []

    def __enter__(self) -> HeldThreads:
        async def take_all() -> list[object]:
            limiter = anyio.to_thread.current_default_thread_limiter()
            owners = [object() for _ in range(int(limiter.total_tokens))]
            for owner in owners:
                await limiter.acquire_on_behalf_of(owner)
            return owners

        self.owners = asyncio.run_coroutine_threadsafe(take_all(), self.loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def give_back() -> None:
            limiter = anyio.to_thread.current_default_thread_limiter()
            for owner in self.owners:
                limiter.release_on_behalf_of(owner)

        asyncio.run_coroutine_threadsafe(give_back(), self.loop).result(10)


class Statements:
    """The SQL statements run on the database by request handlers (the app's own background
    threads, `idlelab-*`, not counted), while the block runs."""

    def __init__(self, db_engine: Any) -> None:
        self.db_engine = db_engine
        self.seen: list[str] = []

    def _record(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not threading.current_thread().name.startswith("idlelab-"):
            self.seen.append(statement)

    def __enter__(self) -> list[str]:
        event.listen(self.db_engine, "before_cursor_execute", self._record)
        return self.seen

    def __exit__(self, *exc: object) -> None:
        event.remove(self.db_engine, "before_cursor_execute", self._record)


def test_a_static_file_answers_while_every_thread_and_connection_is_held(server: Any) -> None:
    url, app, loop = server
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/static/css/app.css").status_code == 200  # warm
        assert client.get("/api/runs").status_code == 200

        # Every connection of the pool, held by this thread.
        db_engine = app.state.db_engine
        held = [db_engine.connect() for _ in range(db_engine.pool.size())]
        try:
            with HeldThreads(loop):
                t0 = time.monotonic()
                r = client.get("/static/css/app.css")
                assert r.status_code == 200 and b"{" in r.content
                assert time.monotonic() - t0 < 0.1

            # Threads free, connections not: a read waits the pool's time-out, then 503.
            t0 = time.monotonic()
            r = client.get("/api/runs")
            elapsed = time.monotonic() - t0
            assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
            assert set(r.json()) == {"detail"}
            assert elapsed < POOL_TIMEOUT_S + 1
        finally:
            for conn in held:
                conn.close()
        assert client.get("/api/runs").status_code == 200  # and it recovers


def test_a_finished_run_is_read_once_then_answered_from_memory_with_no_thread(server: Any) -> None:
    url, app, loop = server
    run_id, _ = done_run(app, title="cached")
    with httpx.Client(base_url=url, timeout=5) as client:
        with Statements(app.state.db_engine) as missed:
            first = client.get(f"/api/runs/{run_id}")
        assert first.status_code == 200 and first.json()["result"] is not None
        # A miss: one primary-key read, nothing else (no existence check, no session).
        assert len(missed) == 1 and "FROM runs" in missed[0] and "WHERE runs.id =" in missed[0], missed

        with Statements(app.state.db_engine) as hit, HeldThreads(loop):
            t0 = time.monotonic()
            again = client.get(f"/api/runs/{run_id}")
            elapsed = time.monotonic() - t0
        assert again.status_code == 200 and again.content == first.content
        assert again.headers["etag"] == first.headers["etag"]
        assert hit == [] and elapsed < 0.1  # no query, and no thread to wait for


def test_a_read_begun_before_a_delete_is_not_kept_after_it() -> None:
    lru = Artifacts(max_bytes=1000)
    read_after = lru.drops()  # a miss starts reading run "a"...
    lru.discard("a")  # ...which is deleted meanwhile
    lru.put("a", "api", b"{}", read_after=read_after)
    assert lru.get("a", "api") is None
    lru.put("a", "api", b"{}", read_after=lru.drops())
    assert lru.get("a", "api") is not None


def test_a_delete_here_is_a_404_at_once(app_client: Any) -> None:
    run_id, token = done_run(app_client.app)
    assert app_client.get(f"/api/runs/{run_id}").status_code == 200  # now in the LRU
    assert app_client.delete(f"/api/runs/{run_id}", headers={"X-Delete-Token": token}).status_code == 204
    assert app_client.get(f"/api/runs/{run_id}").status_code == 404


def test_another_process_delete_is_seen_within_a_second(app_client: Any) -> None:
    app = app_client.app
    run_id, _ = done_run(app)
    kept, _ = done_run(app, small_config(seed=11))
    for rid in (run_id, kept):
        assert app_client.get(f"/api/runs/{rid}").status_code == 200  # now in the LRU
    with Statements(app.state.db_engine) as seen:
        assert app_client.get(f"/api/runs/{run_id}").status_code == 200
    assert seen == []  # answered from memory

    other = make_db_engine(str(app.state.db_engine.url.render_as_string(hide_password=False)))
    try:
        with session_scope(make_sessionmaker(other)) as session:  # another process's delete
            session.execute(delete(Run).where(Run.id == run_id))
    finally:
        other.dispose()
    deleted_at = time.monotonic()
    while (status := app_client.get(f"/api/runs/{run_id}").status_code) == 200:
        time.sleep(0.01)
    assert status == 404
    assert time.monotonic() - deleted_at < DELETES_SEEN_WITHIN_S + 0.2
    assert app_client.get(f"/api/runs/{kept}").status_code == 200  # the others stay cached
    assert kept in app.state.artifacts.run_ids()


def test_a_note_written_by_another_process_is_seen_within_a_second(app_client: Any) -> None:
    app = app_client.app
    run_id, token = done_run(app)
    assert app_client.get(f"/api/runs/{run_id}").json()["note"] is None  # cached, with no note
    with Statements(app.state.db_engine) as seen:
        assert app_client.get(f"/api/runs/{run_id}").status_code == 200
    assert seen == []  # the note too is answered from memory

    other = make_db_engine(str(app.state.db_engine.url.render_as_string(hide_password=False)))
    try:
        with session_scope(make_sessionmaker(other)) as session:  # another process's note
            session.add(Note(kind="runs", target_id=run_id, text="seen?", version=1, updated_at=utcnow()))
    finally:
        other.dispose()
    written_at = time.monotonic()
    while (note := app_client.get(f"/api/runs/{run_id}").json()["note"]) is None:
        time.sleep(0.01)
    assert note["text"] == "seen?" and time.monotonic() - written_at < DELETES_SEEN_WITHIN_S + 0.2
    # A note written here is in the next answer at once.
    r = app_client.put(f"/api/runs/{run_id}/note", json={"text": "here"}, headers={"X-Delete-Token": token})
    assert r.status_code == 200
    assert app_client.get(f"/api/runs/{run_id}").json()["note"]["text"] == "here"


def test_the_change_counter_moves_only_when_runs_change(app_client: Any) -> None:
    app = app_client.app
    runner = JobRunner(app.state.sessionmaker, workers=0)

    def changes() -> int:
        with app.state.db_engine.connect() as conn:
            return store.changes(conn)

    before = changes()
    # The heartbeat's requeue, with nothing to requeue: an UPDATE matching no row.
    assert runner.recover(unclaimed=False) == 0
    assert runner.recover() == 0
    assert changes() == before

    # A run a dead runner left running: the requeue changes it, and the count.
    with session_scope(app.state.sessionmaker) as session:
        lost = lifecycle.add(session, lifecycle.RunSpec(SimConfig()), status="running").id
        session.get(Run, lost).claimed_by = "a-runner-long-gone"  # type: ignore[union-attr]
    added = changes()
    assert added > before
    assert runner.recover(unclaimed=False) == 1
    assert changes() > added


def test_the_lru_stays_fresh_between_looks_even_when_a_look_is_slow(tmp_path: Path, monkeypatch: Any) -> None:
    """The look that renews the freshness ends before the last one's lapses: hits never fall back
    to the database in the window while the change counter is read (here a 100 ms read)."""
    from app.core.database import upgrade_db
    from app.runs import service

    url = sqlite_url(tmp_path / "fresh.db")
    upgrade_db(url)
    db_engine = make_db_engine(url)
    changes = store.changes

    def slow_changes(conn: Any) -> int:
        time.sleep(0.1)
        return changes(conn)

    monkeypatch.setattr(store, "changes", slow_changes)
    lru, stopping = Artifacts(max_bytes=1000), threading.Event()
    watch = threading.Thread(target=service.watch_deletes, args=(db_engine, lru, stopping), daemon=True)
    watch.start()
    try:
        deadline = time.monotonic() + 5
        while not lru.fresh and time.monotonic() < deadline:
            time.sleep(0.005)
        assert lru.fresh
        stale = 0
        until = time.monotonic() + 3 * DELETES_SEEN_WITHIN_S
        while time.monotonic() < until:
            stale += not lru.fresh
            time.sleep(0.005)
        assert stale == 0
    finally:
        stopping.set()
        watch.join(5)
        db_engine.dispose()
