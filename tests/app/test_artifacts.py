"""A finished run is immutable bytes: its page rendered once and stored with it, its answers the
same for every viewer, served from the LRU while the run exists; unlisted runs stay unlisted."""

from __future__ import annotations

import time
from typing import Any
from xml.etree import ElementTree

from sqlalchemy import update

from app.core.database import session_scope
from app.core.models import Run
from app.core.web import fmt_num, render_version
from app.runs.schemas import RunRead
from app.runs.service import DELETES_SEEN_WITHIN_S, Artifacts
from tests.app.factories import done_run, small_config


def _row(app: Any, run_id: str) -> Run:
    with session_scope(app.state.sessionmaker) as session:
        run = session.get(Run, run_id)
        assert run is not None
        session.expunge(run)
        return run


def _set(app: Any, run_id: str, **values: Any) -> None:
    with session_scope(app.state.sessionmaker) as session:
        session.execute(update(Run).where(Run.id == run_id).values(**values))
    app.state.artifacts.discard(run_id)


def test_get_run_validates_against_its_response_model(app_client: Any) -> None:
    run_id, _ = done_run(app_client.app, title="model")
    body = app_client.get(f"/api/runs/{run_id}").json()
    run = RunRead.model_validate(body)
    assert run.status == "done" and run.result is not None and run.url == f"/runs/{run_id}"


def test_the_page_is_stored_when_the_run_finishes_and_served_as_stored(app_client: Any) -> None:
    app = app_client.app
    run_id, _ = done_run(app, title="stored page")
    row = _row(app, run_id)
    assert row.page is not None and row.page_version == render_version()
    assert app_client.get(f"/runs/{run_id}").content == row.page
    # What is served is the stored bytes, not a new rendering.
    _set(app, run_id, page=row.page + b"<!-- as stored -->")
    assert app_client.get(f"/runs/{run_id}").content.endswith(b"<!-- as stored -->")


def test_a_page_of_another_render_version_is_rendered_again_and_not_written(app_client: Any) -> None:
    app = app_client.app
    run_id, _ = done_run(app, title="old page")
    _set(app, run_id, page=b"<p>links a plotly bundle that is gone</p>", page_version="0-old")
    r = app_client.get(f"/runs/{run_id}")
    assert r.status_code == 200 and b"old page" in r.content and b"is gone" not in r.content
    assert _row(app, run_id).page_version == "0-old"  # GET never writes


def test_a_template_error_does_not_stop_a_run_finishing(app_client: Any, monkeypatch: Any) -> None:
    import app.runs.service as artifacts

    def broken(view: Any) -> bytes:
        raise RuntimeError("template bug")

    monkeypatch.setattr(artifacts, "render_page", broken)
    run_id, _ = done_run(app_client.app, title="no page")
    monkeypatch.undo()
    row = _row(app_client.app, run_id)
    assert row.status == "done" and row.result and row.page is None
    assert b"no page" in app_client.get(f"/runs/{run_id}").content  # rendered when asked for


def test_answers_hold_nothing_per_request(app_client: Any) -> None:
    original, _ = done_run(app_client.app, small_config(seed=404), title="original")
    first = app_client.post("/api/runs", json={"config": small_config(seed=404)}).json()
    assert first["reused_from"] == original and first["url"].endswith(f"/runs/{first['id']}")
    assert app_client.get(f"/api/runs/{first['id']}").json()["url"] == f"/runs/{first['id']}"
    for path in (f"/api/runs/{first['id']}", f"/runs/{first['id']}"):
        a = app_client.get(path)
        b = app_client.get(path, headers={"Host": "localhost:9"})
        assert a.content == b.content and a.headers["etag"] == b.headers["etag"]
        assert b"localhost" not in a.content and b"http://127.0.0.1" not in a.content
    page = app_client.get(f"/runs/{first['id']}").text
    # The compare-with candidates are fetched by the page's script, not baked in.
    assert 'data-runs-url="/api/runs?status=done&amp;limit=20"' in page and "<option" not in page


def test_etag_answers_304(app_client: Any) -> None:
    run_id, _ = done_run(app_client.app)
    for path in (f"/api/runs/{run_id}", f"/runs/{run_id}"):
        etag = app_client.get(path).headers["etag"]
        again = app_client.get(path, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""


def test_a_run_deleted_behind_the_apis_back_is_404_within_a_second_though_cached(app_client: Any) -> None:
    run_id, _ = done_run(app_client.app)
    assert app_client.get(f"/api/runs/{run_id}").status_code == 200  # now in the LRU
    assert app_client.get(f"/runs/{run_id}").status_code == 200
    with session_scope(app_client.app.state.sessionmaker) as session:  # deleted behind the API's back
        session.execute(Run.__table__.delete().where(Run.id == run_id))
    time.sleep(DELETES_SEEN_WITHIN_S + 0.2)
    assert app_client.get(f"/api/runs/{run_id}").status_code == 404
    assert app_client.get(f"/runs/{run_id}").status_code == 404


def test_the_lru_drops_least_recently_used_past_its_size() -> None:
    lru = Artifacts(max_bytes=10)
    lru.put("a", "api", b"12345")
    lru.put("b", "api", b"12345")
    assert lru.get("a", "api") is not None  # a is now the most recent
    lru.put("c", "api", b"123")
    assert lru.get("b", "api") is None and lru.get("a", "api") and lru.get("c", "api")
    lru.put("d", "page", b"x" * 11)  # larger than the whole cache: not kept
    assert lru.get("d", "page") is None


def test_unlisted_runs_are_found_only_by_their_link(app_client: Any) -> None:
    from engine.scenarios import SCENARIOS

    app = app_client.app
    secret, _ = done_run(app, small_config(seed=777), unlisted=True, title="secret")
    copy = app_client.post("/api/runs", json={"config": small_config(seed=777)}).json()
    assert copy["status"] == "done" and copy["reused_from"] is None  # the result is reused, not named
    assert app_client.get(f"/api/runs/{copy['id']}").json()["reused_from"] is None
    # A scenario's latest runs do not include an unlisted one.
    scenario = SCENARIOS["rfc-review-irqs-off"]
    role, config = scenario.configs()[0]
    unlisted, _ = done_run(app, config.model_dump(mode="json"), unlisted=True)
    detail = app_client.get(f"/api/scenarios/{scenario.name}").json()
    assert unlisted not in {r["id"] for r in detail["runs"]}
    assert unlisted not in app_client.get(f"/scenarios/{scenario.name}").text
    assert secret not in app_client.get("/api/runs", params={"limit": 200}).text
    assert app_client.get(f"/api/runs/{secret}").status_code == 200


def test_the_run_page_shows_the_hardware_view_beside_the_os_view(app_client: Any) -> None:
    run_id, _ = done_run(app_client.app, title="hardware")
    html = app_client.get(f"/runs/{run_id}").text
    result = app_client.get(f"/api/runs/{run_id}").json()["result"]
    tree = ElementTree.fromstring(_table(html, "hardware-stats"))
    header = [th.text.strip() for th in tree.iter("th") if th.text and th.text.strip()]
    assert header == list(result["hardware"]["system"]["turbostat"])
    rows = [[td.text for td in tr.iter("td")] for tr in tree.iter("tr") if list(tr.iter("td"))]
    sockets = [f"socket {s['socket']}" for s in result["hardware"]["sockets"]]
    assert [r[0] for r in rows] == [*sockets, "system"]
    c6 = header.index("CPU%c6") + 1
    assert rows[-1][c6] == f"{fmt_num(result['hardware']['system']['turbostat']['CPU%c6'])}%"
    assert 'data-chart-name="hardware"' in html  # and its chart


def _table(html: str, css_class: str) -> str:
    start = html.index(f'<table class="{css_class}">')
    return html[start : html.index("</table>", start) + len("</table>")]


def test_a_waiting_run_says_the_engine_compiles_while_it_does(app_client: Any, monkeypatch: Any) -> None:
    from app.runs import service as artifacts

    run_id, _ = done_run(app_client.app, title="waits")
    _set(app_client.app, run_id, status="queued", result=None, page=None, page_version=None)
    monkeypatch.setattr(artifacts, "cache_is_warm", lambda: False)
    page = app_client.get(f"/runs/{run_id}").text
    assert "compiling the engine, first run after install (~20 s)" in page
    monkeypatch.setattr(artifacts, "cache_is_warm", lambda: True)
    app_client.app.state.artifacts.discard(run_id)
    assert "compiling the engine" not in app_client.get(f"/runs/{run_id}").text


def test_pages_of_another_render_version_are_stored_again_in_the_background(app_client: Any) -> None:
    import threading

    from app.runs import lifecycle

    app = app_client.app
    run_id, _ = done_run(app, title="old page, new page")
    _set(app, run_id, page=b"<p>old</p>", page_version="0-old")
    assert lifecycle.rerender_stale_pages(app.state.sessionmaker, threading.Event(), pause_s=0) == 1
    row = _row(app, run_id)
    assert row.page_version == render_version() and b"old page, new page" in row.page
    assert lifecycle.rerender_stale_pages(app.state.sessionmaker, threading.Event(), pause_s=0) == 0


def test_a_finished_runs_charts_come_from_memory_until_it_is_deleted(app_client: Any) -> None:
    from sqlalchemy import event

    run_id, token = done_run(app_client.app)
    path = f"/api/runs/{run_id}/charts/residency"
    first = app_client.get(path)
    assert first.status_code == 200 and first.json()["data"]
    seen: list[str] = []
    engine = app_client.app.state.db_engine

    def record(*args: Any) -> None:
        seen.append(args[2])

    event.listen(engine, "before_cursor_execute", record)
    try:
        deadline = time.monotonic() + 5
        while not app_client.app.state.artifacts.fresh and time.monotonic() < deadline:
            time.sleep(0.05)  # the delete watch's first look
        seen.clear()
        again = app_client.get(path)
        # Neither the row nor an existence check (the delete watch's own reads may run meanwhile).
        reads = [s for s in seen if "runs.result" in s or "WHERE runs.id = ?" in s]
        assert again.content == first.content and not reads, reads
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert app_client.delete(f"/api/runs/{run_id}", headers={"X-Delete-Token": token}).status_code == 204
    assert app_client.get(path).status_code == 404  # at once: the delete dropped it


def test_a_cached_chart_of_a_run_deleted_elsewhere_is_404_within_a_second(app_client: Any) -> None:
    run_id, _ = done_run(app_client.app)
    path = f"/api/runs/{run_id}/charts/latency_cdf"
    assert app_client.get(path).status_code == 200  # now in the LRU
    with session_scope(app_client.app.state.sessionmaker) as session:  # deleted behind the API's back
        session.execute(Run.__table__.delete().where(Run.id == run_id))
    time.sleep(DELETES_SEEN_WITHIN_S + 0.2)
    assert app_client.get(path).status_code == 404


def test_a_chart_of_a_run_without_a_result_says_so_and_is_not_kept(app_client: Any) -> None:
    from app.runs import lifecycle
    from engine import SimConfig

    with session_scope(app_client.app.state.sessionmaker) as session:
        spec = lifecycle.RunSpec(SimConfig.model_validate(small_config()))
        run_id = lifecycle.add(session, spec).id
    r = app_client.get(f"/api/runs/{run_id}/charts/residency")
    assert r.status_code == 404 and "no result yet" in r.text
    assert app_client.get(f"/api/runs/{run_id}/charts/nope").status_code == 404
    assert app_client.app.state.artifacts.get(run_id, "chart:residency") is None
