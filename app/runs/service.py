"""Loaders shared by every run page and its JSON twin (`/runs/{id}` and `/api/runs/{id}` both read
`run_view`), config resolution, and a finished run's immutable answers.

Loaders read through `app.runs.store`, raise `NotFound`/`InvalidInput`, and return plain data: no
ORM object leaves this module. Stored results are spliced into answers as bytes, and parsed (with
orjson) only when a page needs the numbers. A finished run's API answer and page are rendered once
and served from an LRU of `run_id -> (etag, bytes)` that learns of deletes (`watch_deletes`);
nothing per-request is inside (links are paths, the "compare with" list is fetched by
the page's script, `reused_from` is plain text).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Any

import orjson
from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import ValidationError
from sqlalchemy import Connection, Engine, bindparam, select
from sqlalchemy.orm import Session

from app import charts
from app.core import web
from app.core.errors import InvalidInput, NotFound
from app.core.models import ACTIVE, FINISHED, LIST_COLUMNS, SORTABLE_COLUMNS, Note, Run
from app.platforms import service as platforms
from app.runs import store
from engine import SimConfig, metrics
from engine.config import config_errors
from engine.jit import cache_is_warm

log = logging.getLogger("idlelab.runs")

CONFIG_LOC: tuple[str, ...] = ("body", "config")
# Said (page and stderr) while a run waits for the engine's first compilation.
COMPILING_NOTE = "compiling the engine, first run after install (~20 s); later runs start at once"


def run_path(run_id: str) -> str:
    """A run's share link, as a path (answers carry no host)."""
    return f"/runs/{run_id}"


def resolve_config(session: Session, data: Any, loc: Sequence[str | int] = CONFIG_LOC) -> SimConfig:
    """A config ready to run: a custom platform's table resolved into it, then checked against
    the table (`SimConfig.check_against`), once. `data` is a validated `SimConfig` (a request
    body FastAPI checked) or a JSON object (a sweep's point, a scenario's role...).

    Raises `InvalidInput` whose every error's `loc` starts with `loc` and names the field.
    """
    try:
        if isinstance(data, SimConfig):
            table = platforms.resolve_table(session, data.platform, data.platform_table, [*loc, "platform"])
            if table is not None:
                data = data.model_copy(update={"platform_table": table})
                data.check_against(table)
            return data
        if not isinstance(data, dict):
            raise InvalidInput.one(list(loc), "config must be a JSON object", "dict_type")
        table = platforms.resolve_table(
            session, data.get("platform"), data.get("platform_table"), [*loc, "platform"]
        )
        if table is not None:
            data = {**data, "platform_table": table.model_dump(mode="json")}
        return SimConfig.model_validate(data)
    except (ValidationError, ValueError) as exc:  # pydantic's, or `check_against`'s
        errors = config_errors(exc)
    raise InvalidInput([{**e, "loc": [*loc, *e["loc"]]} for e in errors])


# --- one run -----------------------------------------------------------------------------------


def _summary(row: Mapping[str, Any]) -> dict[str, Any]:
    data = {c: row[c] for c in LIST_COLUMNS}
    data["url"] = run_path(data["id"])
    return data


@dataclass
class RunView:
    """One run as pages and the API show it: `summary` (the list columns and `url`), the stored
    config and result texts, and lazily their parsed forms."""

    summary: dict[str, Any]
    config_json: str
    result_json: bytes | None
    repeats_json: str | None = None
    summary_stats_json: str | None = None

    @property
    def status(self) -> str:
        return str(self.summary["status"])

    @cached_property
    def config(self) -> dict[str, Any]:
        return orjson.loads(self.config_json)  # type: ignore[no-any-return]

    @cached_property
    def result(self) -> dict[str, Any] | None:
        return None if self.result_json is None else orjson.loads(self.result_json)

    @cached_property
    def repeats(self) -> list[dict[str, Any]] | None:
        """Every repeat's seed and summary figures; None until done (and for runs made before repeats)."""
        return None if self.repeats_json is None else orjson.loads(self.repeats_json)

    @cached_property
    def summary_stats(self) -> dict[str, dict[str, Any]] | None:
        return None if self.summary_stats_json is None else orjson.loads(self.summary_stats_json)

    def to_json(self) -> bytes:
        """The stored part of the `GET /api/runs/{id}` body: summary fields with the stored config,
        result, repeats and statistics inside (the note is put beside it per request)."""

        def stored(text: str | bytes | None) -> Any:
            return None if text is None else orjson.Fragment(text)

        return orjson.dumps(
            {
                **self.summary,
                "config": orjson.Fragment(self.config_json),
                "result": stored(self.result_json),
                "repeats": stored(self.repeats_json),
                "summary_stats": stored(self.summary_stats_json),
            }
        )


def run_view(row: Mapping[str, Any]) -> RunView:
    """A run from its `store.get_row` columns."""
    return RunView(_summary(row), row["config"], row["result"], row.get("repeats"), row.get("summary_stats"))


def load_run_view(session: Session, run_id: str) -> RunView:
    """A run by id (unlisted ones too: the link is the key). `NotFound` if there is none."""
    row = store.get_row(session, run_id)
    if row is None:
        raise NotFound(f"run {run_id!r} not found")
    return run_view(row._mapping)


# --- lists -------------------------------------------------------------------------------------


@dataclass
class RunListView:
    """A page of listed runs; `to_json()` is the `GET /api/runs` body (a `RunList`)."""

    runs: list[dict[str, Any]]
    total: int
    limit: int
    offset: int
    sort: str = "created_at"
    order: str = "desc"
    filters: dict[str, str | None] = field(default_factory=dict)

    def to_json(self) -> bytes:
        body = {"runs": self.runs, "total": self.total, "limit": self.limit, "offset": self.offset}
        return orjson.dumps(body, option=orjson.OPT_NAIVE_UTC)


# What `sort` takes: a sortable column, ascending, or with a leading minus, descending.
SORT_KEYS = [*SORTABLE_COLUMNS, *(f"-{c}" for c in SORTABLE_COLUMNS)]


def parse_sort(sort: str, order: str | None = None) -> tuple[str, bool]:
    """`sort=busy_share&order=asc`, or `sort=-busy_share` (leading minus: descending)."""
    descending = True
    if sort.startswith("-"):
        sort, descending = sort[1:], True
    elif order is None and sort != "created_at":
        descending = False
    if order is not None:
        if order not in ("asc", "desc"):
            raise InvalidInput.one(["query", "order"], "order must be 'asc' or 'desc'", "literal_error")
        descending = order == "desc"
    if sort not in SORTABLE_COLUMNS:
        raise InvalidInput.one(
            ["query", "sort"],
            f"cannot sort by {sort!r}; sortable: {', '.join(SORTABLE_COLUMNS)}",
            "literal_error",
        )
    return sort, descending


def list_runs_view(
    db: Session | Connection,
    *,
    sort: str = "created_at",
    order: str | None = None,
    limit: int = 50,
    offset: int = 0,
    **filters: str | None,
) -> RunListView:
    """Listed (not unlisted) runs, filtered (`platform`, `governor`, `mechanism`, `status`, `q`;
    a sweep's points only with `sweep`) and sorted, newest first by default."""
    column, descending = parse_sort(sort, order)
    f = store.RunFilter(**filters)
    rows, total = store.list_runs(db, f, sort=column, descending=descending, limit=limit, offset=offset)
    return RunListView(
        runs=[dict(zip(LIST_COLUMNS, r, strict=True), url=run_path(r.id)) for r in rows],
        total=total,
        limit=limit,
        offset=offset,
        sort=column,
        order="desc" if descending else "asc",
        filters=filters,
    )


class ListCache:
    """`GET /api/runs` answers as bytes, keyed by their normalised query and valid while the
    database's change count (`store.changes`, bumped by every write to runs, from any process) is
    the one they were made under: no per-request part inside, nothing spliced."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[Any, ...], tuple[int, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], changes: int) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != changes:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: tuple[Any, ...], changes: int, body: bytes) -> None:
        with self._lock:
            self._entries[key] = (changes, body)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)


def list_runs_json(
    conn: Connection,
    cache: ListCache,
    *,
    sort: str,
    order: str | None,
    limit: int,
    offset: int,
    **filters: str | None,
) -> bytes:
    """The `GET /api/runs` body: from the cache while no run changed, else read and kept. The count
    is read before the rows, so rows kept under a count are never older than it (a write between
    the two reads leaves newer rows under an older count: the next request misses and reads again)."""
    column, descending = parse_sort(sort, order)
    key = (column, descending, limit, offset, *sorted((k, v) for k, v in filters.items() if v))
    changes = store.changes(conn)
    body = cache.get(key, changes)
    if body is None:
        view = list_runs_view(
            conn, sort=column, order="desc" if descending else "asc", limit=limit, offset=offset, **filters
        )
        body = view.to_json()
        cache.put(key, changes, body)
    return body


# --- a finished run's immutable answers ------------------------------------------------------


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'


class Artifacts:
    """The whole cache: `(run_id, kind) -> (etag, bytes)` of finished runs, least recently used
    dropped first once over `max_bytes`.

    A finished run never changes; it can only be deleted. A delete in this process `discard`s at
    once; `watch_deletes` drops the runs another process deleted, once a second, and while its
    last look is that recent (`fresh`) a hit needs no database at all. Beside the bytes it keeps
    each cached run's note (it changes; the bytes never do): a note written here is dropped at
    once (`forget_note`), one written elsewhere when `watch_deletes` sees its version move."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], tuple[str, bytes]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        # Bumped by every drop of a deleted run: an answer read before it is not kept after it.
        self._drops = 0
        self._fresh_until = 0.0  # monotonic time up to which every entry's run is known to exist
        self._notes: dict[str, dict[str, Any] | None] = {}  # run id -> its note (None: it has none)

    def note(self, run_id: str) -> tuple[bool, dict[str, Any] | None]:
        """(known, the run's note): unknown until a read put it."""
        with self._lock:
            return run_id in self._notes, self._notes.get(run_id)

    def keep_note(self, run_id: str, note: dict[str, Any] | None) -> None:
        with self._lock:
            if (run_id, "api") in self._entries or (run_id, "page") in self._entries:
                self._notes[run_id] = note

    def forget_note(self, *run_ids: str) -> None:
        with self._lock:
            for run_id in run_ids:
                self._notes.pop(run_id, None)

    def note_versions(self) -> dict[str, int | None]:
        with self._lock:
            return {rid: None if n is None else n["version"] for rid, n in self._notes.items()}

    def get(self, run_id: str, kind: str) -> tuple[str, bytes] | None:
        with self._lock:
            entry = self._entries.get((run_id, kind))
            if entry is not None:
                self._entries.move_to_end((run_id, kind))
            return entry

    def drops(self) -> int:
        """Pass to `put` as `read_after`: taken before the read of what is to be kept."""
        return self._drops

    def put(
        self, run_id: str, kind: str, body: bytes, *, read_after: int | None = None, etag: str | None = None
    ) -> tuple[str, bytes]:
        """Keep a finished run's answer (unless a run was dropped since `read_after`: this one may
        have been deleted after it was read); its (etag, body) either way. `etag`: the body's
        `etag_of`, when the caller has it (hashing a page on the event loop delays every answer)."""
        entry = (etag_of(body) if etag is None else etag, body)
        if len(body) > self.max_bytes:
            return entry
        with self._lock:
            if read_after is not None and read_after != self._drops:
                return entry
            old = self._entries.pop((run_id, kind), None)
            self._size += len(body) - (len(old[1]) if old else 0)
            self._entries[(run_id, kind)] = entry
            while self._size > self.max_bytes:
                (old_id, _), (_, old_body) = self._entries.popitem(last=False)
                self._size -= len(old_body)
                self._notes.pop(old_id, None)
        return entry

    def discard(self, *run_ids: str) -> None:
        """Drop deleted runs' answers."""
        gone = set(run_ids)
        with self._lock:
            self._drops += 1
            for key in [k for k in self._entries if k[0] in gone]:
                self._size -= len(self._entries.pop(key)[1])
            for run_id in gone:
                self._notes.pop(run_id, None)

    def run_ids(self) -> set[str]:
        with self._lock:
            return {run_id for run_id, _ in self._entries}

    @property
    def fresh(self) -> bool:
        """Whether deletes are known up to less than a second ago: a hit needs no existence check."""
        return time.monotonic() < self._fresh_until

    def checked(self, at: float, valid_s: float) -> None:
        """Every run deleted before `at` (monotonic) has been dropped; the next look is due within
        `valid_s`."""
        self._fresh_until = at + valid_s


# Another process's delete is seen within this long: the change counter is polled twice as often,
# so the look that renews the LRU's freshness ends before the last one's lapses (with one look per
# period, every hit in the window between them, while a look ran, paid a database read).
DELETES_SEEN_WITHIN_S = 1.0
DELETES_LOOK_EVERY_S = DELETES_SEEN_WITHIN_S / 2


def watch_deletes(db: Engine, artifacts: Artifacts, stopping: threading.Event) -> None:
    """Drop the cached answers of runs deleted by any process, until `stopping`: twice a second the
    change counter is read (a primary-key read), and when it moved, which cached runs still exist
    and which cached notes changed (a run's note write moves the counter too).
    A look that fails leaves `artifacts` stale, so hits check the database until one succeeds."""
    seen: int | None = None
    failing = False
    while True:
        at = time.monotonic()
        try:
            with db.connect() as conn:
                count = store.changes(conn)
                if count != seen:
                    cached = artifacts.run_ids()
                    if gone := cached - store.existing(conn, cached):
                        artifacts.discard(*gone)
                    kept = artifacts.note_versions()
                    now = store.note_versions(conn, kept)
                    artifacts.forget_note(*(rid for rid, v in kept.items() if now.get(rid) != v))
                    seen = count
            artifacts.checked(at, DELETES_SEEN_WITHIN_S)
            failing = False
        except Exception:  # noqa: BLE001 - an unreachable database: hits check for themselves
            if not failing:  # once per episode, not a traceback a second
                log.warning("cannot read the runs' change counter; reads check the database", exc_info=True)
            failing = True
        if stopping.wait(max(0.0, at + DELETES_LOOK_EVERY_S - time.monotonic())):
            return


# How the run page shows a unit: latencies in us (as wult and intel_idle write them), shares in %.
_SHOWN_UNITS = {"ns": (1e-3, "us"), "share": (100.0, "%"), "count": (1.0, "")}


def repeat_rows(view: RunView) -> list[dict[str, Any]]:
    """A repeated run's statistics per compared metric, as the page shows them (none for one repeat)."""
    stats, result = view.summary_stats or {}, view.result
    if result is None or int(view.summary.get("repeat_count") or 1) < 2:
        return []
    rows = []
    for m in metrics.compared(s["name"] for s in result["states"]):
        s = stats.get(m.key)
        if s is None:
            continue
        scale, unit = _SHOWN_UNITS.get(m.unit, (1.0, m.unit))
        stddev = s["stddev"]
        rows.append(
            {
                "key": m.key,
                "label": m.label,
                "unit": unit,
                "mean": s["mean"] * scale,
                "stddev": None if stddev is None else stddev * scale,
                "stddev_pct": None if stddev is None or s["mean"] == 0 else 100.0 * stddev / abs(s["mean"]),
                "n": s["n"],
            }
        )
    return rows


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
            "engine_compiling": view.status in ACTIVE and not cache_is_warm(),
            "compiling_note": COMPILING_NOTE,
            "repeat_rows": repeat_rows(view),
            "seeds": [r["seed"] for r in view.repeats or []],
        },
    )
    return html.encode()


def _api_answer(conn: Connection, run_id: str) -> tuple[str, bytes | RunView] | None:
    row = store.get_row(conn, run_id)
    return None if row is None else (row.status, run_view(row._mapping).to_json())


def _page_answer(conn: Connection, run_id: str) -> tuple[str, bytes | RunView] | None:
    """The stored page if it is of this render version, else the run to render (not stored: GET
    never writes; the LRU keeps it)."""
    stored = store.get_page(conn, run_id)
    if stored is None:
        return None
    if stored.page is not None and stored.page_version == web.render_version():
        return stored.status, bytes(stored.page)
    row = store.get_row(conn, run_id)
    return None if row is None else (row.status, run_view(row._mapping))


ANSWERS = {"api": (_api_answer, "application/json"), "page": (_page_answer, "text/html; charset=utf-8")}
# A run's id and note in one primary-key read: whether it exists, and the note put beside its stored
# API answer (the note is its own resource: never in the bytes).
_ID_AND_NOTE = (
    select(Run.id, Note.text, Note.version, Note.updated_at)
    .outerjoin(Note, (Note.kind == "runs") & (Note.target_id == Run.id))
    .where(Run.id == bindparam("run_id"))
)


def _note_of_row(row: Any) -> dict[str, Any] | None:
    if row.note_text is None:
        return None
    return {"text": row.note_text, "version": row.note_version, "updated_at": row.note_updated_at.isoformat()}


def id_and_note(conn: Connection, run_id: str) -> tuple[bool, dict[str, Any] | None]:
    """(the run exists, its note as `GET /api/runs/{id}` shows it or None)."""
    row = conn.execute(_ID_AND_NOTE, {"run_id": run_id}).first()
    if row is None or row.text is None:
        return row is not None, None
    return True, {"text": row.text, "version": row.version, "updated_at": row.updated_at.isoformat()}


def _note_of(db: Engine, run_id: str) -> tuple[bool, dict[str, Any] | None]:
    with db.connect() as conn:
        return id_and_note(conn, run_id)


def beside_note(body: bytes, note: dict[str, Any] | None) -> bytes:
    """A stored API answer with `"note"` put beside its fields (a new object around the same bytes)."""
    return body[:-1] + b',"note":' + orjson.dumps(note) + b"}"


def note_etag(etag: str, note: dict[str, Any] | None) -> str:
    """The stored answer's ETag, covering the note's version too."""
    if note is None:
        return etag
    stamp = hashlib.blake2b(f"{note['version']}\0{note['updated_at']}".encode(), digest_size=6).hexdigest()
    return f'{etag[:-1]}-{stamp}"'


async def serve(request: Request, db: Engine, artifacts: Artifacts, run_id: str, kind: str) -> Response:
    """A run's API answer (`kind="api"`, its note put beside the stored bytes) or page (`"page"`):
    a finished run's from the LRU, on the event loop with no database call while `artifacts` is
    fresh (and knows the run's note), else read from its row (and kept if finished). Reads (one
    primary-key read for the answer and its note, two at most for a page) and a page to render run
    in the threadpool, never on the event loop. ETag (covering the note) and 304 for revalidation;
    `no-cache`, so a deleted run is a 404 as soon as the LRU knows."""
    answer, media_type = ANSWERS[kind]
    entry = artifacts.get(run_id, kind)
    if entry is None or not artifacts.fresh:
        read_after = artifacts.drops()

        def read() -> tuple[bool, tuple[str, bytes, str] | None, dict[str, Any] | None]:
            with db.connect() as conn:
                note = None
                if entry is not None:  # a hit while deletes are not known: exists? (and its note)
                    if kind == "api":
                        found, note = id_and_note(conn, run_id)
                    else:
                        found = store.exists(conn, run_id)
                    if found:
                        return True, None, note
                if kind == "api":  # the answer and its note in one read
                    row = store.get_row_and_note(conn, run_id)
                    if row is None:
                        return False, None, None
                    body = run_view(row._mapping).to_json()
                    return False, (row.status, body, etag_of(body)), _note_of_row(row)
                made = answer(conn, run_id)
            if made is None:
                return False, None, None
            status, stored = made
            body = render_page(stored) if isinstance(stored, RunView) else stored
            return False, (status, body, etag_of(body)), note

        cached, made, note = await run_in_threadpool(read)
        if not cached:
            if made is None:
                raise NotFound(f"run {run_id!r} not found")
            status, body, etag = made
            if status in FINISHED:
                entry = artifacts.put(run_id, kind, body, read_after=read_after, etag=etag)
            else:
                entry = (etag, body)
        if kind == "api":
            artifacts.keep_note(run_id, note)
    elif kind == "api":
        known, note = artifacts.note(run_id)
        if not known:  # kept by a page read, or dropped on a change: one primary-key read
            found, note = await run_in_threadpool(_note_of, db, run_id)
            if not found:
                raise NotFound(f"run {run_id!r} not found")
            artifacts.keep_note(run_id, note)
    assert entry is not None
    etag, body = entry
    if kind == "api":
        etag, body = note_etag(etag, note), beside_note(body, note)
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)


def _chart_answer(conn: Connection, run_id: str, name: str) -> tuple[str, bytes] | None:
    """(status, the chart's JSON) of a run with a result; None if there is no such run."""
    row = store.get_row(conn, run_id)
    if row is None:
        return None
    view = run_view(row._mapping)
    if view.result is None:
        raise NotFound(f"run {run_id!r} has no result yet (status {view.status!r})")
    return view.status, bytes(web.json_response(charts.run_chart(name, view.result)).body)


async def serve_chart(db: Engine, artifacts: Artifacts, run_id: str, name: str) -> Response:
    """A run's chart `name` (a known one) as Plotly JSON: a finished run's from the LRU like its
    other answers (no database call on a hit while `artifacts` is fresh; a delete drops it), else
    built from its row in the threadpool (the read, the result's parse and the figure)."""
    kind = f"chart:{name}"
    entry = artifacts.get(run_id, kind)
    if entry is None or not artifacts.fresh:
        read_after = artifacts.drops()

        def read() -> tuple[str, bytes] | None:
            with db.connect() as conn:
                if entry is not None:  # a hit while deletes are not known: is it still there?
                    return entry if store.exists(conn, run_id) else None
                made = _chart_answer(conn, run_id, name)
            if made is None:
                return None
            status, body = made
            if status in FINISHED:
                return artifacts.put(run_id, kind, body, read_after=read_after)
            return etag_of(body), body

        entry = await run_in_threadpool(read)
        if entry is None:
            raise NotFound(f"run {run_id!r} not found")
    return Response(entry[1], media_type="application/json")


async def get_artifacts(request: Request) -> Artifacts:
    return request.app.state.artifacts  # type: ignore[no-any-return]


async def get_list_cache(request: Request) -> ListCache:
    return request.app.state.run_lists  # type: ignore[no-any-return]


ArtifactsDep = Annotated[Artifacts, Depends(get_artifacts)]
ListCacheDep = Annotated[ListCache, Depends(get_list_cache)]
