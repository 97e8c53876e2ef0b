"""The read cache: ETags and 304s, and never a stale or deleted run (app/cache.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, update

from app import store
from app.cache import Entry, ReadCache
from app.db import make_db_engine, session_scope
from app.models import RenderedPage, Run, utcnow
from app.routes import pages
from engine import SimConfig, simulate
from tests.app.factories import small_config, submit
from tests.conftest import _testclient, sqlite_url


@pytest.fixture(scope="module")
def client(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=120.0) as c:
        yield c


def finished(client: httpx.Client, **config: Any) -> dict[str, Any]:
    run = client.post("/api/runs?wait=true", json={"config": small_config(**config)}).json()
    assert run["status"] == "done", run
    return run  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", ["/api/runs/{id}", "/runs/{id}", "/api/runs?limit=5"])
def test_etag_answers_304_and_the_same_body_otherwise(client: httpx.Client, path: str) -> None:
    run = finished(client, seed=101)
    url = path.format(id=run["id"])
    first = client.get(url)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert client.get(url, headers={"If-None-Match": '"other"'}).content == first.content


def test_deleted_run_is_404_at_once(client: httpx.Client) -> None:
    run = finished(client, seed=102)
    etags = {}
    for url in (f"/api/runs/{run['id']}", f"/runs/{run['id']}"):
        for _ in range(2):  # cached by now
            r = client.get(url)
            assert r.status_code == 200
        etags[url] = r.headers["etag"]
    r = client.delete(f"/api/runs/{run['id']}", headers={"X-Delete-Token": run["delete_token"]})
    assert r.status_code == 204
    for url, etag in etags.items():
        assert client.get(url).status_code == 404
        assert client.get(url, headers={"If-None-Match": etag}).status_code == 404


def test_copy_no_longer_names_its_deleted_original(client: httpx.Client) -> None:
    first = finished(client, seed=103)
    copy = finished(client, seed=103)
    assert copy["reused_from"] == first["id"]
    assert client.get(f"/api/runs/{copy['id']}").json()["reused_from"] == first["id"]  # cached
    client.delete(f"/api/runs/{first['id']}", headers={"X-Delete-Token": first["delete_token"]})
    assert client.get(f"/api/runs/{copy['id']}").json()["reused_from"] is None


def test_cached_run_page_offers_runs_finished_after_it(client: httpx.Client) -> None:
    a = finished(client, seed=104)
    page = client.get(f"/runs/{a['id']}")
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    b = finished(client, seed=105)
    again = client.get(f"/runs/{a['id']}", headers={"If-None-Match": page.headers["etag"]})
    assert again.status_code == 200
    assert f'<option value="{b["id"]}">' in again.text
    assert f'<option value="{a["id"]}">' not in again.text  # not offered to compare with itself


def _finish_outside_the_runner(app: Any, result_json: bytes = b'{"fake": true}') -> str:
    with session_scope(app.state.sessionmaker) as session:
        new = store.create_run(session, SimConfig.model_validate(small_config()), title="done elsewhere")
        store.mark_done(
            new.run,
            result_json=result_json,
            summary={},
            engine_version="test",
            wall_s=0.0,
            compile_s=0.0,
            started_at=utcnow(),
        )
        return new.run.id


def test_run_deleted_by_another_process_is_404_at_once(app_client: Any) -> None:
    run_id = _finish_outside_the_runner(app_client.app)
    for _ in range(2):
        assert app_client.get(f"/api/runs/{run_id}").json()["result"] == {"fake": True}
    other = make_db_engine(app_client.app.state.settings.database_url)  # not the app's connections
    try:
        with other.begin() as conn:
            conn.execute(delete(Run).where(Run.id == run_id))
    finally:
        other.dispose()
    assert app_client.get(f"/api/runs/{run_id}").status_code == 404


def test_queued_and_running_runs_are_never_stale(app_client: Any) -> None:
    run_id = submit(app_client)["id"]  # no workers: it stays queued until this test moves it
    assert app_client.get(f"/api/runs/{run_id}").json()["status"] == "queued"
    app = app_client.app
    with session_scope(app.state.sessionmaker) as session:
        assert store.claim_run(session, run_id, utcnow()) is not None
    for progress in (0.25, 0.5):
        with session_scope(app.state.sessionmaker) as session:
            store.set_progress(session, {run_id: progress})
        run = app_client.get(f"/api/runs/{run_id}").json()
        assert (run["status"], run["progress"]) == ("running", progress)
        assert f"Running: {int(progress * 100)}% simulated" in app_client.get(f"/runs/{run_id}").text
    with session_scope(app.state.sessionmaker) as session:
        store.finish_run(
            session,
            run_id,
            result_json=b'{"fake": true}',
            summary={},
            engine_version="test",
            wall_s=0.0,
            compile_s=0.0,
        )
    run = app_client.get(f"/api/runs/{run_id}").json()
    assert (run["status"], run["result"]) == ("done", {"fake": True})


def test_list_follows_every_write(app_client: Any) -> None:
    app = app_client.app
    before = app_client.get("/api/runs", params={"q": "listed-later"}).json()
    assert before["total"] == 0
    run_id = submit(app_client, title="listed-later")["id"]
    assert app_client.get("/api/runs", params={"q": "listed-later"}).json()["total"] == 1
    other = make_db_engine(app.state.settings.database_url)
    try:
        with other.begin() as conn:
            conn.execute(update(Run).where(Run.id == run_id).values(title="renamed elsewhere"))
    finally:
        other.dispose()
    assert app_client.get("/api/runs", params={"q": "listed-later"}).json()["total"] == 0


def test_cache_drops_least_recently_used_past_its_size(tmp_path: Path) -> None:
    db_engine = make_db_engine(f"sqlite:///{tmp_path / 'cache.db'}")
    try:
        cache = ReadCache(db_engine, max_bytes=100)
        version = cache.version()
        cache.put(("list", "a"), Entry("a", 60, version=version))
        cache.put(("list", "b"), Entry("b", 30, version=version))
        assert cache.versioned_entry(("list", "a")) is not None  # now the most recently used
        cache.put(("list", "c"), Entry("c", 30, version=version))
        assert cache.versioned_entry(("list", "b")) is None
        assert cache.versioned_entry(("list", "a")) is not None
        cache.put(("list", "huge"), Entry("huge", 101, version=version))
        assert cache.versioned_entry(("list", "huge")) is None
        assert cache.versioned_entry(("list", "c")) is not None
        cache.close()
    finally:
        db_engine.dispose()


def _wait_for_entry(cache: ReadCache, key: tuple[str, ...], run_id: str) -> None:
    """The after-finish hooks run on a thread of their own: wait for the entry they make."""
    deadline = time.monotonic() + 30
    while cache.run_entry(key, run_id) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cache.run_entry(key, run_id) is not None


def test_finished_run_page_is_rendered_before_anyone_asks(app_client: Any) -> None:
    app = app_client.app
    config = SimConfig.model_validate(small_config(seed=106))
    result_json = simulate(config).model_dump_json().encode()
    run_id = _finish_outside_the_runner(app, result_json)
    key = ("run", run_id, "page")
    cache: ReadCache = app.state.read_cache
    assert cache.run_entry(key, run_id) is None
    app.state.runner.on_finished(run_id)  # what the job collector calls once a run is stored as done
    _wait_for_entry(cache, key, run_id)
    _wait_for_stored_page(app, run_id)
    served = app_client.get(f"/runs/{run_id}")
    # Rendered again on request (neither cached nor stored), the page is the same bytes.
    cache.discard_run(run_id)
    with session_scope(app.state.sessionmaker) as session:
        session.execute(delete(RenderedPage).where(RenderedPage.run_id == run_id))
    fresh = app_client.get(f"/runs/{run_id}")
    assert served.status_code == fresh.status_code == 200
    assert served.content == fresh.content and served.headers["etag"] == fresh.headers["etag"]


def test_finished_run_answer_is_ready_for_any_base_url(app_client: Any) -> None:
    app = app_client.app
    run_id = _finish_outside_the_runner(app)
    cache: ReadCache = app.state.read_cache
    template = ("run", run_id, "api-template")
    app.state.runner.on_finished(run_id)
    _wait_for_entry(cache, template, run_id)
    # A finished result never changes; change it behind the app's back to see where answers come
    # from: the first read is the template's, with no read of the stored result.
    with session_scope(app.state.sessionmaker) as session:
        session.execute(update(Run).where(Run.id == run_id).values(result=b'{"edited": true}'))
    assert app_client.get(f"/api/runs/{run_id}").json()["result"] == {"fake": True}
    with session_scope(app.state.sessionmaker) as session:
        session.execute(update(Run).where(Run.id == run_id).values(result=b'{"fake": true}'))
    for host in ("testserver", "idlelab.example:8443"):
        app.state.runner.on_finished(run_id)
        _wait_for_entry(cache, template, run_id)
        served = app_client.get(f"/api/runs/{run_id}", headers={"Host": host})
        assert served.json()["url"] == f"http://{host}/runs/{run_id}"
        assert served.json()["result"] == {"fake": True}
        # The same bytes as an answer built from the database.
        cache.discard_run(run_id)
        fresh = app_client.get(f"/api/runs/{run_id}", headers={"Host": host})
        assert served.content == fresh.content and served.headers["etag"] == fresh.headers["etag"]


def _stored_renderer(app: Any, run_id: str) -> str | None:
    with session_scope(app.state.sessionmaker) as session:
        page = session.get(RenderedPage, run_id)
        return None if page is None else page.renderer


def _wait_for_stored_page(app: Any, run_id: str) -> None:
    """Pages are stored on the background thread: wait until this app's renderer stored one."""
    deadline = time.monotonic() + 30
    while _stored_renderer(app, run_id) != pages.page_renderer() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stored_renderer(app, run_id) == pages.page_renderer()


def test_restarted_server_serves_the_stored_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.config import Settings
    from app.main import create_app

    settings = Settings(database_url=sqlite_url(tmp_path / "restart.db"), workers=0)
    result_json = simulate(SimConfig.model_validate(small_config(seed=107))).model_dump_json().encode()
    with _testclient()(create_app(settings)) as client:
        run_id = _finish_outside_the_runner(client.app, result_json)
        client.app.state.runner.on_finished(run_id)
        _wait_for_stored_page(client.app, run_id)
        before = client.get(f"/runs/{run_id}")
    assert before.status_code == 200

    def no_rendering(*_args: Any) -> str:
        raise AssertionError("a stored page was rendered again")

    with _testclient()(create_app(settings)) as client:
        with monkeypatch.context() as m:
            m.setattr(pages, "_render_run_page", no_rendering)
            after = client.get(f"/runs/{run_id}")
        assert after.content == before.content and after.headers["etag"] == before.headers["etag"]
        # Rendered by another version of the app: not served; rendered again and replaced.
        with session_scope(client.app.state.sessionmaker) as session:
            session.execute(update(RenderedPage).values(renderer="another version"))
        client.app.state.read_cache.discard_run(run_id)
        with monkeypatch.context() as m:
            m.setattr(pages, "_render_run_page", no_rendering)
            with pytest.raises(AssertionError, match="rendered again"):
                client.get(f"/runs/{run_id}")
        assert client.get(f"/runs/{run_id}").content == before.content
        _wait_for_stored_page(client.app, run_id)


def test_stored_page_is_valid_only_while_its_run_is_unchanged(app_client: Any) -> None:
    app = app_client.app
    result_json = simulate(SimConfig.model_validate(small_config(seed=108))).model_dump_json().encode()
    original = _finish_outside_the_runner(app, result_json)
    copy = _finish_outside_the_runner(app, result_json)
    with session_scope(app.state.sessionmaker) as session:
        session.execute(update(Run).where(Run.id == copy).values(reused_from=original))
    app.state.runner.on_finished(copy)
    _wait_for_stored_page(app, copy)

    def stored(run_id: str) -> Any:
        return app.state.read_cache.first(store.RENDERED_PAGE, run_id=run_id, renderer=pages.page_renderer())

    page = stored(copy)
    assert page["reused_from"] == original
    assert original.encode() in page["head"] + page["tail"]
    with session_scope(app.state.sessionmaker) as session:
        store.delete_run(session, original)
    assert stored(copy) is None  # the page names a run that is gone
    page = app_client.get(f"/runs/{copy}")
    assert page.status_code == 200 and original not in page.text
    with session_scope(app.state.sessionmaker) as session:
        store.delete_run(session, copy)
    assert _stored_renderer(app, copy) is None  # gone with its run


def test_hot_reads_give_what_sqlalchemy_gives(app_client: Any) -> None:
    """`ReadCache.first` reads on its own SQLite connection: every column is converted by its type
    (time zone-aware datetimes, booleans) exactly as a SQLAlchemy connection converts it."""
    app = app_client.app
    run_id = _finish_outside_the_runner(app)
    raw = app.state.read_cache.first(store.RUN_ROW, run_id=run_id)
    with app.state.db_engine.connect() as conn:
        row = store.get_run_row(conn, run_id)
    assert row is not None and raw == dict(row._mapping)
    assert raw["finished_at"].tzinfo is not None and raw["unlisted"] is False
    assert app.state.read_cache.first(store.RUN_ROW, run_id="no-such-run") is None


def test_saving_a_page_replaces_it_and_skips_a_deleted_run(app_client: Any) -> None:
    app = app_client.app
    run_id = _finish_outside_the_runner(app)

    def page(renderer: str, rid: str = run_id) -> RenderedPage:
        return RenderedPage(
            run_id=rid, renderer=renderer, status="done", reused_from=None, head=b"<h", tail=b"t>"
        )

    for renderer in ("first", "second"):
        with session_scope(app.state.sessionmaker) as session:
            assert store.save_rendered_page(session, page(renderer))
    assert _stored_renderer(app, run_id) == "second"  # one row per run, the newest
    with session_scope(app.state.sessionmaker) as session:
        store.delete_run(session, run_id)
    with session_scope(app.state.sessionmaker) as session:  # rendered before the delete, saved after
        assert not store.save_rendered_page(session, page("late"))
    assert _stored_renderer(app, run_id) is None
