"""No database work on the event loop: with every request thread and every pooled connection
held, a static file still answers at once, and a database read answers 503 (`Retry-After`)
within the pool's time-out, instead of the server freezing."""

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

from app.core.settings import Settings
from app.jobs.runner import DB_THREADS
from app.main import POOL_TIMEOUT_S, create_app
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


def test_a_static_file_answers_while_every_thread_and_connection_is_held(server: Any) -> None:
    url, app, loop = server
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/static/css/app.css").status_code == 200  # warm
        assert client.get("/api/runs").status_code == 200

        # Every connection of the pool, held by this thread.
        db_engine = app.state.db_engine
        held = [db_engine.connect() for _ in range(db_engine.pool.size())]
        try:
            # Every thread token of the server's limiter, held on its loop.
            async def take_all() -> list[object]:
                limiter = anyio.to_thread.current_default_thread_limiter()
                owners = [object() for _ in range(int(limiter.total_tokens))]
                for owner in owners:
                    await limiter.acquire_on_behalf_of(owner)
                return owners

            async def give_back(owners: list[object]) -> None:
                limiter = anyio.to_thread.current_default_thread_limiter()
                for owner in owners:
                    limiter.release_on_behalf_of(owner)

            owners = asyncio.run_coroutine_threadsafe(take_all(), loop).result(10)
            t0 = time.monotonic()
            r = client.get("/static/css/app.css")
            assert r.status_code == 200 and b"{" in r.content
            assert time.monotonic() - t0 < 0.1
            asyncio.run_coroutine_threadsafe(give_back(owners), loop).result(10)

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
