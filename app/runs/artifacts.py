"""A finished run is immutable bytes: its API answer and its page are rendered once and served
from an LRU of `run_id -> (etag, bytes)`, checked against the database only for existence.

`finish_run` is the one path that marks a run done (workers, result reuse, `idlelab run --save`):
it renders the page before the write transaction (a template error stores no page, and the run
still finishes), then writes result, summary columns and page in the transaction that marks the
run done. Nothing per-request is inside: links are paths, the "compare with" list is fetched by
the page's script, `reused_from` is plain text.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import orjson
from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from app import charts, web
from app.db import session_scope
from app.errors import NotFound
from app.models import result_summary, utcnow
from app.runs import store
from app.runs.views import COMPILING_NOTE, RunView, run_view
from engine.jit import cache_is_warm

log = logging.getLogger("idlelab")

# A result or page over these sizes is not kept: the run fails with the reason instead (a small
# request must not build a huge answer).
MAX_RESULT_BYTES = 2 * 1024 * 1024
MAX_PAGE_BYTES = 4 * 1024 * 1024


class ResultTooLarge(Exception):
    pass


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'


class Artifacts:
    """The whole cache: `(run_id, kind) -> (etag, bytes)` of finished runs, least recently used
    dropped first once over `max_bytes`. Callers check the run still exists before serving."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], tuple[str, bytes]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, run_id: str, kind: str) -> tuple[str, bytes] | None:
        with self._lock:
            entry = self._entries.get((run_id, kind))
            if entry is not None:
                self._entries.move_to_end((run_id, kind))
            return entry

    def put(self, run_id: str, kind: str, body: bytes) -> tuple[str, bytes]:
        entry = (etag_of(body), body)
        if len(body) > self.max_bytes:
            return entry
        with self._lock:
            old = self._entries.pop((run_id, kind), None)
            self._size += len(body) - (len(old[1]) if old else 0)
            self._entries[(run_id, kind)] = entry
            while self._size > self.max_bytes:
                self._size -= len(self._entries.popitem(last=False)[1][1])
        return entry

    def discard(self, run_id: str) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == run_id]:
                self._size -= len(self._entries.pop(key)[1])


def render_page(view: RunView) -> bytes:
    """A run's page. Its charts are most of the cost: a finished run's is rendered once."""
    result = view.result
    html = web.render_html(
        "run.html",
        {
            "run": {**view.summary, "config": view.config},
            "result": result,
            "config_json": orjson.dumps(
                view.config, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
            ).decode(),
            "charts": charts.run_charts(result) if result is not None else {},
            "figures": charts.summary_figures(result) if result is not None else [],
            "sender_rows": charts.sender_cost_rows(result) if result is not None else [],
            "sender_note": charts.sender_cost_note(result) if result is not None else "",
            # Only a waiting run's page says so (it is rendered per request; a finished one never).
            "engine_compiling": view.status in ("queued", "running") and not cache_is_warm(),
            "compiling_note": COMPILING_NOTE,
        },
    )
    return html.encode()


def finished_fields(
    row: Mapping[str, Any],
    result_json: bytes,
    *,
    engine_version: str,
    wall_s: float,
    compile_s: float,
    reused_from: str | None = None,
) -> dict[str, Any]:
    """Every column a run gets when it finishes, its page included (rendered from the run as it
    will read once done; `None` if rendering failed: the page is then rendered when asked for).
    A sweep's points are not prerendered: hundreds of pages few will open."""
    if len(result_json) > MAX_RESULT_BYTES:
        raise ResultTooLarge(f"result of {len(result_json)} bytes over the limit of {MAX_RESULT_BYTES}")
    fields: dict[str, Any] = {
        "status": "done",
        "progress": 1.0,
        "error": None,
        "engine_version": engine_version,
        "finished_at": utcnow(),
        "wall_s": wall_s,
        "compile_s": compile_s,
        "reused_from": reused_from,
        **result_summary(orjson.loads(result_json)),
        "result": result_json,
    }
    try:
        page = None if row.get("sweep_id") else render_page(run_view({**row, **fields}))
    except Exception:  # noqa: BLE001 - a template error must not stop a run finishing
        log.exception("rendering the page of run %s failed", row["id"])
        page = None
    if page is not None and len(page) > MAX_PAGE_BYTES:
        raise ResultTooLarge(f"page of {len(page)} bytes over the limit of {MAX_PAGE_BYTES}")
    return {**fields, "page": page, "page_version": web.RENDER_VERSION if page else None}


def finish_run(
    factory: sessionmaker[Session],
    run_id: str,
    result_json: bytes,
    *,
    engine_version: str,
    wall_s: float,
    compile_s: float,
    reused_from: str | None = None,
    claim: str | None = None,
) -> bool:
    """Record a running run as done (False if it is no longer running, or no longer under `claim`:
    deleted, finished, or requeued)."""
    with session_scope(factory) as session:
        row = store.get_row(session, run_id)
    if row is None:
        return False
    fields = finished_fields(
        row._mapping,
        result_json,
        engine_version=engine_version,
        wall_s=wall_s,
        compile_s=compile_s,
        reused_from=reused_from,
    )
    with session_scope(factory) as session:
        return store.record_result(session, run_id, fields, claim=claim)


def _api_answer(conn: Connection, run_id: str) -> tuple[str, bytes | RunView] | None:
    row = store.get_row(conn, run_id)
    return None if row is None else (row.status, run_view(row._mapping).to_json())


def _page_answer(conn: Connection, run_id: str) -> tuple[str, bytes | RunView] | None:
    """The stored page if it is of this render version, else the run to render (not stored: GET
    never writes; the LRU keeps it)."""
    stored = store.get_page(conn, run_id)
    if stored is None:
        return None
    if stored.page is not None and stored.page_version == web.RENDER_VERSION:
        return stored.status, bytes(stored.page)
    row = store.get_row(conn, run_id)
    return None if row is None else (row.status, run_view(row._mapping))


ANSWERS = {"api": (_api_answer, "application/json"), "page": (_page_answer, "text/html; charset=utf-8")}


async def serve(request: Request, db: Engine, artifacts: Artifacts, run_id: str, kind: str) -> Response:
    """A run's API answer (`kind="api"`) or page (`"page"`): a finished run's from the LRU while
    the run exists, else read from its row (and kept if finished). On the event loop: two
    primary-key reads at most (SQLite in WAL mode never blocks a reader on a writer); a page to
    render goes to the threadpool. ETag and 304 for revalidation; `no-cache`, so a deleted run is a
    404 at once."""
    answer, media_type = ANSWERS[kind]
    entry = artifacts.get(run_id, kind)
    with db.connect() as conn:
        cached = entry is not None and store.exists(conn, run_id)
        made = None if cached else answer(conn, run_id)
    if not cached:
        if made is None:
            raise NotFound(f"run {run_id!r} not found")
        status, body = made
        if isinstance(body, RunView):
            body = await run_in_threadpool(render_page, body)
        entry = artifacts.put(run_id, kind, body) if status in store.FINISHED else (etag_of(body), body)
    etag, body = entry
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)
