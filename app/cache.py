"""In-memory cache of read answers (serialized bytes), and the cheap checks that keep it fresh.

Two kinds of entries:

- Run-keyed (`run_entry`): the answer about one finished run (`done` or `failed`: nothing in it
  changes). It stays valid while the run's `(status, reused_from)` does: a primary-key read of two
  small columns per request, skipped when the database has not changed at all since the last check.
  A deleted run reads as `None`, so its entries are never served again, whoever deleted it
  (this server, another process, another web worker); `reused_from` changes when the original
  of a copied result is deleted.
- Version-keyed (`versioned_entry`): answers over many runs (a list page). Valid only while nothing
  in the database changed; without a change counter (not SQLite) they are never cached.

Queued and running runs are never cached: their progress changes.

The change counter is SQLite's `PRAGMA data_version`, read on a connection of its own that never
writes: it changes whenever any other connection, in this process or any other, commits.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from sqlalchemy import Engine, Select
from starlette.types import ASGIApp, Receive, Scope, Send

from app import store

FINISHED = ("done", "failed")
Stamp = tuple[str, str | None]


def stamp_of(run: Mapping[str, Any]) -> Stamp:
    """What can still change about a finished run, deleting it aside (`store.RUN_STAMP`'s columns)."""
    return (run["status"], run["reused_from"])


def etag_of(*parts: bytes) -> str:
    """A validator for one URL's answers: CRC-32 and length (a few us for a 50 kB page, a tenth of
    a cryptographic hash; an accidental match needs the same URL's new answer to collide)."""
    crc, size = 0, 0
    for part in parts:
        crc = zlib.crc32(part, crc)
        size += len(part)
    return f'"{crc:08x}{size:x}"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """`If-None-Match` (a list of tags, weak or strong, or `*`) names `etag`."""
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


@dataclass(frozen=True)
class Entry:
    value: Any
    size: int
    stamp: Stamp | None = None  # run-keyed: the run's stamp when cached
    version: int | None = None  # the change counter when last known valid


@dataclass(frozen=True)
class _Compiled:
    stmt: Select[Any]
    sql: str
    params: list[str]
    keys: list[str]
    processors: list[Callable[[Any], Any] | None]


class ReadConnection:
    """A dedicated connection to one SQLite database for the hot reads, never used to write: the
    change counter (`PRAGMA data_version`) and one-row reads of SQLAlchemy statements compiled
    once, their columns converted by the columns' own types, with no pool checkout or result
    machinery (several times cheaper)."""

    def __init__(self, connect: Any, dialect: Any) -> None:
        self._connect = connect
        self._dialect = dialect
        self._conn: sqlite3.Connection | None = None
        self._compiled: dict[int, _Compiled] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_engine(cls, db_engine: Engine) -> ReadConnection | None:
        """One for a SQLite file database; `None` otherwise (an in-memory database is per connection)."""
        url = db_engine.url
        if url.get_backend_name() != "sqlite" or db_engine.dialect.driver != "pysqlite":
            return None
        if url.database in (None, "", ":memory:") or "mode=memory" in str(url):
            return None
        cargs, cparams = db_engine.dialect.create_connect_args(url)
        params = {**cparams, "check_same_thread": False, "isolation_level": None}
        return cls(lambda: sqlite3.connect(*cargs, **params), db_engine.dialect)

    def data_version(self) -> int:
        with self._lock:
            return int(self._connection().execute("PRAGMA data_version").fetchone()[0])

    def first(self, stmt: Select[Any], params: dict[str, Any]) -> dict[str, Any] | None:
        c = self._compile(stmt)
        with self._lock:
            # fetchall: the statement runs to its end, so no read transaction stays open.
            rows = self._connection().execute(c.sql, [params[n] for n in c.params]).fetchall()
        if not rows:
            return None
        return {k: v if p is None else p(v) for k, p, v in zip(c.keys, c.processors, rows[0], strict=True)}

    def _compile(self, stmt: Select[Any]) -> _Compiled:
        # By identity (a statement's == builds SQL); the entry holds the statement, so its id stays its own.
        known = self._compiled.get(id(stmt))
        if known is None:
            compiled = stmt.compile(dialect=self._dialect)
            columns = list(stmt.selected_columns)
            known = self._compiled[id(stmt)] = _Compiled(
                stmt,
                str(compiled),
                list(compiled.positiontup or []),
                [col.key for col in columns],
                [
                    col.type.dialect_impl(self._dialect).result_processor(self._dialect, None)
                    for col in columns
                ],
            )
        return known

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class ReadCache:
    """Least recently used entries dropped first once their sizes add up to over `max_bytes`."""

    def __init__(self, db_engine: Engine, max_bytes: int) -> None:
        self.db_engine = db_engine
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._reads = ReadConnection.for_engine(db_engine)

    def version(self) -> int | None:
        """The database's change counter now (read it before loading what you will cache)."""
        return None if self._reads is None else self._reads.data_version()

    def first(self, stmt: Select[Any], **params: Any) -> dict[str, Any] | None:
        """The first row of `stmt` (a module-level constant) by column key, as SQLAlchemy reads it."""
        if self._reads is not None:
            return self._reads.first(stmt, params)
        with self.db_engine.connect() as conn:
            row = conn.execute(stmt, params).first()
        return None if row is None else dict(row._mapping)

    def run_stamp(self, run_id: str) -> Stamp | None:
        row = self.first(store.RUN_STAMP, run_id=run_id)
        return None if row is None else stamp_of(row)

    def run_entry(self, key: Hashable, run_id: str) -> Entry | None:
        """The entry under `key` for run `run_id`, if the run is still as it was when cached."""
        entry = self._get(key)
        if entry is None:
            return None
        version = self.version()
        if version is not None and version == entry.version:
            return entry
        if self.run_stamp(run_id) != entry.stamp:
            self._discard(key)
            return None
        self._put(key, replace(entry, version=version))
        return entry

    def versioned_entry(self, key: Hashable) -> Entry | None:
        """The entry under `key` if the database has not changed since it was built."""
        entry = self._get(key)
        if entry is None:
            return None
        version = self.version()
        if version is None or version != entry.version:
            self._discard(key)
            return None
        return entry

    def put(self, key: Hashable, entry: Entry) -> Entry:
        """Store `entry` (too large for the whole cache: not stored). Returns it."""
        if entry.size <= self.max_bytes:
            self._put(key, entry)
        return entry

    def discard_run(self, run_id: str) -> None:
        """Forget every run-keyed entry of `run_id` (keys are `("run", run_id, ...)`)."""
        with self._lock:
            for key in [k for k in self._entries if isinstance(k, tuple) and k[:2] == ("run", run_id)]:
                self._bytes -= self._entries.pop(key).size

    def close(self) -> None:
        if self._reads is not None:
            self._reads.close()

    def _get(self, key: Hashable) -> Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def _put(self, key: Hashable, entry: Entry) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._entries[key] = entry
            self._bytes += entry.size
            while self._bytes > self.max_bytes and self._entries:
                self._bytes -= self._entries.popitem(last=False)[1].size

    def _discard(self, key: Hashable) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size


@dataclass(frozen=True)
class Answer:
    """A read's answer as bytes, with its ETag. `no-cache`: clients revalidate every time (a 304
    costs them nothing), so a deleted run is a 404 at once."""

    body: bytes
    etag: str
    media_type: str
    headers: tuple[tuple[str, str], ...] = ()

    @cached_property
    def _not_modified_headers(self) -> list[tuple[bytes, bytes]]:
        extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers]
        return [(b"etag", self.etag.encode("latin-1")), (b"cache-control", b"no-cache"), *extra]

    @cached_property
    def _ok_headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"content-type", self.media_type.encode("latin-1")),
            (b"content-length", str(len(self.body)).encode("latin-1")),
            *self._not_modified_headers,
        ]

    def _status_headers_body(self, if_none_match: str | None) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        if etag_matches(if_none_match, self.etag):
            return 304, self._not_modified_headers, b""
        return 200, self._ok_headers, self.body

    def response(self, request: Request) -> Response:
        """For a handler to return."""
        status, headers, body = self._status_headers_body(request.headers.get("if-none-match"))
        response = Response(body, status_code=status)
        response.raw_headers = list(headers)
        return response

    async def send(self, scope: Scope, send: Send) -> None:
        """Straight to the server, no Response object (the hot path)."""
        if_none_match = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == b"if-none-match"), None
        )
        status, headers, body = self._status_headers_body(if_none_match)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


Lookup = Callable[..., Answer | None]


class CachedReads:
    """Serves hot reads before FastAPI's routing, middleware and parameter parsing, which cost
    several times a cached answer's lookup. Each route module registers `(path pattern, lookup)`
    pairs (`register`); a lookup gets the request and the pattern's named groups and returns the
    answer, or None to let the app handle the request as usual (its handlers answer errors, and
    build what the lookup would not, filling the cache)."""

    def __init__(self, app: ASGIApp, routes: list[tuple[re.Pattern[str], Lookup]]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            for pattern, lookup in self.routes:
                match = pattern.fullmatch(scope["path"])
                if match is not None:
                    request = Request(scope)
                    answer = lookup(request, **match.groupdict())
                    if answer is not None:
                        await answer.send(scope, send)
                        return
                    break
        await self.app(scope, receive, send)


def register(app: Any, path_pattern: str, lookup: Lookup) -> None:
    """Add a cached read to the app's `CachedReads` (call from a route module's `install(app)`)."""
    app.state.cached_reads.append((re.compile(path_pattern), lookup))
