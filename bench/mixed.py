"""The mixed, open-loop load: what a busy team server sees, replayed against a real server.

    .venv/bin/python bench/api.py --mixed [--runs 1000] [--rounds 3] [--seconds 60]

A real server on a fresh SQLite file with `--runs` stored runs (20 ms configs, so that storing them
takes minutes, not hours). The mix: reads of runs, lists (with filters and sorts), run pages,
compares, charts and the stylesheet, and 10% `POST /api/runs` of a 20 ms config (each a fresh seed,
so the workers really simulate it). First the saturation rate S, closed-loop with 60 keep-alive
connections for `--saturation-requests` requests; then `--seconds` of open-loop Poisson arrivals
at 0.7 S with at most 60 requests in flight. A request's latency runs from its scheduled arrival
(so time spent waiting for a free connection counts: no coordinated omission) to its body's last
byte. `errors` counts every 5xx, 429, time-out (10 s) and connection error. With `--rounds` > 1 the
worst round's figures are printed (the largest p99, the smallest saturation rate).

Queued-work caps (when the server has them) are set far above this bench's write rate through the
environment, so that a 429 or 503 here is a fault, not a cap doing its job.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.api import HttpConnection

SMALL_CONFIG: dict[str, Any] = {"duration_ms": 20, "topology": {"sockets": 1, "cores_per_socket": 4}}
CONNECTIONS = 60
REQUEST_TIMEOUT_S = 10.0
# Environment for the server: caps above the write rate (see the module docstring).
CAPS_ENV = {
    "IDLELAB_CLIENT_QUEUED_EVENTS": str(10**15),
    "IDLELAB_QUEUED_EVENTS": str(10**16),
}


@dataclass
class Request:
    method: str
    path: str
    body: bytes = b""
    static: bool = False
    kind: str = ""  # what it asks for, for the per-kind p99 of each round


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    static_ms: list[float] = field(default_factory=list)
    errors: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    by_kind: dict[str, list[float]] = field(default_factory=dict)


class Connection(HttpConnection):
    """bench/api.py's keep-alive connection, speaking just enough HTTP for GET and JSON POST and
    connecting on first use."""

    async def send(self, req: Request) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = f"{req.method} {req.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        if req.body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(req.body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + req.body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length, close = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        await self.reader.readexactly(length)
        if close:
            await self.close()
        return status


class Mix:
    """Draws the next request of the probe's mix over the stored runs."""

    def __init__(self, ids: list[str], charts: list[str], seed: int) -> None:
        self.ids, self.charts = ids, charts
        self.rng = random.Random(seed)
        self.posts = 0

    def next(self) -> Request:
        r, rid = self.rng.random(), self.rng.choice(self.ids)
        if r < 0.10:
            self.posts += 1
            config = {**SMALL_CONFIG, "seed": 1_000_000 + self.rng.randrange(10**12)}
            body = httpx.Request("POST", "/", json={"config": config, "title": "mixed load"}).read()
            return Request("POST", "/api/runs", body, kind="post_run")
        if r < 0.40:
            return Request("GET", f"/api/runs/{rid}", kind="get_run")
        if r < 0.55:
            sort = self.rng.choice(["-created_at", "wake_latency_p99_ns", "-busy_share", "title"])
            return Request(
                "GET", f"/api/runs?limit=50&sort={sort}&offset={self.rng.randrange(0, 200)}", kind="list"
            )
        if r < 0.70:
            return Request("GET", f"/runs/{rid}", kind="page")
        if r < 0.78:
            a, b = self.rng.sample(self.ids, 2)
            return Request("GET", f"/api/compare?ids={a},{b}", kind="compare")
        if r < 0.90:
            return Request(
                "GET", f"/api/runs/{rid}/charts/{self.rng.choice(self.charts)}", kind="chart"
            )
        return Request("GET", "/static/css/app.css", static=True, kind="static")


async def _timed(conn: Connection, req: Request, start: float, tally: Tally) -> None:
    try:
        status = await asyncio.wait_for(conn.send(req), REQUEST_TIMEOUT_S)
    except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, OSError):
        await conn.close()
        tally.errors += 1
        return
    ms = (time.perf_counter() - start) * 1000
    tally.by_status[status] = tally.by_status.get(status, 0) + 1
    if status >= 500 or status == 429:
        tally.errors += 1
    (tally.static_ms if req.static else tally.latencies_ms).append(ms)
    tally.by_kind.setdefault(req.kind, []).append(ms)


async def closed_loop(url: str, mix: Mix, requests: int) -> tuple[float, Tally]:
    """Requests per second with CONNECTIONS clients sending back to back."""
    u = httpx.URL(url)
    tally, left = Tally(), [requests]

    async def client() -> None:
        conn = Connection(u.host, u.port or 80)
        while left[0] > 0:
            left[0] -= 1
            await _timed(conn, mix.next(), time.perf_counter(), tally)
        await conn.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(CONNECTIONS)))
    return requests / (time.perf_counter() - t0), tally


async def open_loop(url: str, mix: Mix, rate: float, seconds: float, seed: int) -> Tally:
    """Poisson arrivals at `rate` for `seconds`; at most CONNECTIONS in flight, later arrivals
    wait for a connection with their clock already running."""
    u = httpx.URL(url)
    tally = Tally()
    free: asyncio.Queue[Connection] = asyncio.Queue()
    for _ in range(CONNECTIONS):
        free.put_nowait(Connection(u.host, u.port or 80))
    rng = random.Random(seed)
    tasks: list[asyncio.Task[None]] = []

    async def one(req: Request, start: float) -> None:
        conn = await free.get()
        try:
            await _timed(conn, req, start, tally)
        finally:
            free.put_nowait(conn)

    t0 = time.perf_counter()
    next_at = t0
    while next_at - t0 < seconds:
        next_at += rng.expovariate(rate)
        delay = next_at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(mix.next(), next_at)))
    await asyncio.gather(*tasks)
    while not free.empty():
        await free.get_nowait().close()
    return tally


def store_runs(client: httpx.Client, n: int) -> list[str]:
    ids = []
    for i in range(n):
        r = client.post(
            "/api/runs", json={"config": {**SMALL_CONFIG, "seed": 50_000 + i}, "title": f"run {i}"}
        )
        assert r.status_code == 202, r.text[:300]
        ids.append(r.json()["id"])
    while int(client.get("/api/runs", params={"status": "done", "limit": 1}).json()["total"]) < n:
        time.sleep(1)
    return ids


def run_mixed(args: Any, start_server: Any, stop_server: Any, pct: Any, run_async: Any) -> None:
    import tempfile

    os.environ.update(CAPS_ENV)
    worst: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        with open(Path(tmp) / "server.log", "wb") as log:
            proc, url = start_server(db, log)
            try:
                with httpx.Client(base_url=url, timeout=300) as client:
                    ids = store_runs(client, args.runs)
                    charts = client.get(f"/api/runs/{ids[0]}/charts").json()["charts"]
                for round_no in range(args.rounds):
                    mix = Mix(ids, charts, seed=round_no)
                    sat, _ = run_async(closed_loop(url, mix, args.saturation_requests))
                    offered = 0.7 * sat
                    tally = run_async(open_loop(url, mix, offered, args.seconds, seed=round_no))
                    figures = {
                        "saturation_rps": sat,
                        "offered_rps": offered,
                        "p50_ms": pct(tally.latencies_ms, 50),
                        "p99_ms": pct(tally.latencies_ms, 99),
                        "max_ms": max(tally.latencies_ms),
                        "static_p99_ms": pct(tally.static_ms, 99) if tally.static_ms else float("nan"),
                        "errors": float(tally.errors),
                    }
                    statuses = " ".join(f"{k}:{v}" for k, v in sorted(tally.by_status.items()))
                    rounds = ", ".join(f"{k} {v:.1f}" for k, v in figures.items())
                    print(f"round {round_no + 1}: {rounds}; statuses {statuses}", file=sys.stderr, flush=True)
                    kinds = ", ".join(f"{k} {pct(v, 99):.1f}" for k, v in sorted(tally.by_kind.items()))
                    print(f"round {round_no + 1}: p99 ms by kind: {kinds}", file=sys.stderr, flush=True)
                    for key, value in figures.items():
                        smaller_is_worse = key in ("saturation_rps", "offered_rps")
                        if key not in worst or (
                            value < worst[key] if smaller_is_worse else value > worst[key]
                        ):
                            worst[key] = value
            finally:
                stop_server(proc)
    for key in ("saturation_rps", "offered_rps", "p50_ms", "p99_ms", "max_ms", "static_p99_ms"):
        print(f"{key}: {worst[key]:.1f}")
    print(f"errors: {int(worst['errors'])}")
    print(f"load_average_1m: {os.getloadavg()[0]:.2f}")


WRK_SCRIPT = """
local ids = {}
for line in io.lines(os.getenv("BENCH_IDS")) do ids[#ids + 1] = line end
local prefix = os.getenv("BENCH_PREFIX")
math.randomseed(7)
request = function()
  return wrk.format("GET", prefix .. ids[math.random(#ids)])
end
"""


def _wrk(url: str, prefix: str, ids_file: Path, script: Path, seconds: int) -> tuple[float, float]:
    """(requests/s, p99 ms) of `wrk -t2 -c50 -dNs --latency` drawing run ids at random."""
    import subprocess

    env = {**os.environ, "BENCH_IDS": str(ids_file), "BENCH_PREFIX": prefix}
    out = subprocess.run(
        ["wrk", "-t2", "-c50", f"-d{seconds}s", "--latency", "-s", str(script), url],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = p99 = float("nan")
    for line in out.splitlines():
        words = line.split()
        if line.startswith("Requests/sec:"):
            rps = float(words[1])
        elif words[:1] == ["99%"]:
            value = words[1]
            scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
            unit = next(u for u in ("us", "ms", "s") if value.endswith(u))
            p99 = float(value[: -len(unit)]) * scale[unit]
        elif "Non-2xx" in line or "Socket errors" in line:
            print(f"wrk: {line.strip()}", file=sys.stderr)
    return rps, p99


def save_answers(client: httpx.Client, ids: list[str], path: Path) -> None:
    """The app's `GET /api/runs/{id}` answers, byte for byte, for the bare endpoint to serve."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE answers (id TEXT PRIMARY KEY, body BLOB NOT NULL)")
        rows = []
        for run_id in ids:
            r = client.get(f"/api/runs/{run_id}")
            assert r.status_code == 200, r.text[:300]
            rows.append((run_id, r.content))
        conn.executemany("INSERT INTO answers VALUES (?, ?)", rows)


def run_wrk(args: Any, start_server: Any, stop_server: Any) -> None:
    """`GET /api/runs/{id}` of the app against the bare endpoint serving the app's exact answers:
    interleaved blocks (app, bare) for `--rounds` rounds, both under uvicorn with the same options
    and the access log on; the worst round counts (the smallest ratio, the largest p99)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        ids_file, script = Path(tmp) / "ids.txt", Path(tmp) / "draw.lua"
        script.write_text(WRK_SCRIPT)
        with open(Path(tmp) / "server.log", "wb") as log:
            proc, url = start_server(db, log)
            try:
                with httpx.Client(base_url=url, timeout=300) as client:
                    ids = store_runs(client, args.runs)
                    (Path(tmp) / "list.json").write_bytes(client.get("/api/runs?limit=50").content)
                    save_answers(client, ids, Path(tmp) / "answers.db")
            finally:
                stop_server(proc)
            ids_file.write_text("\n".join(ids) + "\n")
            worst_ratio, worst_p99 = float("inf"), 0.0
            for round_no in range(args.rounds):
                proc, url = start_server(db, log, log_level="info", same_options=True)
                try:
                    app_rps, app_p99 = _wrk(url, "/api/runs/", ids_file, script, args.wrk_seconds)
                finally:
                    stop_server(proc)
                proc, url = start_server(db, log, bare=True, log_level="info")
                try:
                    bare_rps, bare_p99 = _wrk(url, "/bare/answer/", ids_file, script, args.wrk_seconds)
                finally:
                    stop_server(proc)
                print(
                    f"round {round_no + 1}: app {app_rps:.0f} req/s p99 {app_p99:.1f} ms; "
                    f"bare {bare_rps:.0f} req/s p99 {bare_p99:.1f} ms",
                    file=sys.stderr,
                    flush=True,
                )
                worst_ratio = min(worst_ratio, app_rps / bare_rps)
                worst_p99 = max(worst_p99, app_p99)
    print(f"get_run_rps_vs_bare_worst: {worst_ratio:.2f}")
    print(f"get_run_p99_ms_worst: {worst_p99:.1f}")
    print(f"load_average_1m: {os.getloadavg()[0]:.2f}")
