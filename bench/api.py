"""API benchmark: a real server (subprocess) on a fresh SQLite file with 1,000 stored runs, driven
by 50 concurrent clients. Prints one `name: value` line per figure.

The runs are made as users make them: 1,000 `POST /api/runs` of the default config, each with a
fresh seed (so none is answered from another), simulated by the server's workers. The server
renders a run's page when the run finishes (and stores it); `_after_restart` figures repeat the
page and run reads on a restarted server (same database, nothing in its memory: every answer read
from the database), measured as soon as it answers, while its worker warms the engine up.

    .venv/bin/python bench/api.py [--clients 50] [--requests 2000] [--runs 1000]

The clients: `--clients` keep-alive HTTP/1.1 connections over loopback TCP to the real server, in
this process (one asyncio loop, uvloop when installed, separate from the server's process). Each
sends a GET as soon as its previous answer is fully read (a closed loop, no think time) and times
it from writing the request to reading the body's last byte. The client is a few lines of raw
HTTP (`HttpConnection`), not httpx: httpx's per-request CPU cost is several times the server's on
a cached read, and on a 2-core machine it would measure the load generator, not the service.
A connection the server closed is reopened once, the reconnect counted in that request's time.

The run ids of `get_run` and `run_page` are drawn at random from the 1,000 stored runs, so most
requests of the first batch ask for a run the server has not been asked about since it started;
the `_repeat` figures send the same batch again. Latencies are in ms; `rps` is requests per
second over the batch. The server and the clients share the machine, so the figures are a floor,
not a ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bare_app(db: str) -> Any:
    """The baseline: a bare FastAPI endpoint serving a run's stored bytes (result or page) from
    the same SQLite file, one primary-key read per request, nothing else; and `/bare/list`, the
    list answer's bytes (saved beside the database) after one primary-key read."""
    import sqlite3

    from fastapi import FastAPI
    from fastapi.responses import Response

    app = FastAPI()
    conn = sqlite3.connect(db, check_same_thread=False)

    @app.get("/bare/{column}/{run_id}")
    def bare(column: str, run_id: str) -> Response:
        sql = (
            "SELECT page FROM runs WHERE id = ?"
            if column == "page"
            else "SELECT result FROM runs WHERE id = ?"
        )
        row = conn.execute(sql, (run_id,)).fetchone()
        return Response(row[0], media_type="application/octet-stream")

    list_body = (Path(db).parent / "list.json").read_bytes()
    # The app's exact `GET /api/runs/{id}` answers, saved beside the database by `--wrk`.
    answers_db = Path(db).parent / "answers.db"
    answers = sqlite3.connect(answers_db, check_same_thread=False) if answers_db.exists() else None

    @app.get("/bare/answer/{run_id}")
    def bare_answer(run_id: str) -> Response:
        assert answers is not None
        row = answers.execute("SELECT body FROM answers WHERE id = ?", (run_id,)).fetchone()
        return Response(row[0], media_type="application/json")

    @app.get("/bare/list")
    def bare_list() -> Response:
        conn.execute("SELECT id FROM runs WHERE id = ?", ("",)).fetchone()
        return Response(list_body, media_type="application/json")

    return app


def start_server(
    db: Path, log: Any, bare: bool = False, log_level: str = "warning", same_options: bool = False
) -> tuple[subprocess.Popen[bytes], str]:
    """The app (`idlelab serve`) or the bare endpoint under uvicorn. The bare one, and the app
    when `same_options` (the side-by-side `--wrk`), run by one `uvicorn.run` line with the same
    options (log level, access log as IDLELAB_ACCESS_LOG says, on by default, keep-alive), so that
    only the app differs."""
    port = free_port()
    env = {**os.environ, "IDLELAB_DATABASE_URL": f"sqlite:///{db}", "IDLELAB_LOG_LEVEL": log_level}
    command = ["-m", "app.cli", "serve", "--port", str(port)]
    if bare or same_options:
        module, factory = ("bench.api", f"bare_app({str(db)!r})") if bare else ("app.main", "create_app()")
        access_log = os.environ.get("IDLELAB_ACCESS_LOG", "true").lower() not in ("0", "false", "no")
        options = f"port={port}, log_level={log_level!r}, access_log={access_log}, timeout_keep_alive=30"
        code = f"import uvicorn, {module}; uvicorn.run({module}.{factory}, {options})"
        command = ["-c", code]
    proc = subprocess.Popen(
        [sys.executable, *command],
        env=env,
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("server exited at start")
        try:
            if httpx.get(f"{url}/{'docs' if bare else 'api/platforms'}", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("server did not answer")


def create_runs(client: httpx.Client, n: int) -> list[str]:
    """Submit `n` default-config runs with fresh seeds; return their ids once all are done."""
    ids = []
    for i in range(n):
        r = client.post("/api/runs", json={"config": {"seed": 20_000 + i}, "title": f"bench run {i}"})
        assert r.status_code == 202, r.text[:300]
        ids.append(r.json()["id"])

    def count(status: str) -> int:
        return int(client.get("/api/runs", params={"status": status, "limit": 1}).json()["total"])

    while count("queued") + count("running"):
        time.sleep(0.5)
    assert count("failed") == 0, f"{count('failed')} runs failed"
    return ids


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def report(name: str, url: str, paths: list[str], clients: int) -> float:
    lat, wall = run_async(drive(url, paths, clients))
    print(f"{name}_p50_ms: {pct(lat, 50):.1f}")
    print(f"{name}_p99_ms: {pct(lat, 99):.1f}")
    print(f"{name}_rps: {len(lat) / wall:.0f}")
    return len(lat) / wall


class HttpConnection:
    """One keep-alive HTTP/1.1 connection: a GET is written whole, then the status line, headers and
    the `Content-Length` body are read to the last byte. No pooling, no header objects, no decoding:
    the client costs a small fraction of what the server spends per request, so the latencies it
    measures are the server's (plus the loopback), not the load generator's."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def get(self, path: str) -> tuple[int, bytes]:
        """(status, body) of `GET path`; one reconnect if the server closed the idle connection."""
        try:
            return await self._get(path)
        except (ConnectionError, asyncio.IncompleteReadError):
            await self.close()
            await self.connect()
            return await self._get(path)

    async def _get(self, path: str) -> tuple[int, bytes]:
        assert self.reader is not None and self.writer is not None
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = None
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise SystemExit(f"GET {path}: no Content-Length in the answer")
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except ConnectionError:
                pass
            self.writer = None


async def drive(url: str, paths: list[str], clients: int) -> tuple[list[float], float]:
    """`clients` concurrent clients, each on its own keep-alive connection, taking the next path
    from a shared queue as soon as its previous answer is read (no think time: a closed loop at
    full speed). Per-request ms, from writing the request to reading the body's last byte, and
    the batch's wall seconds."""
    parsed = httpx.URL(url)
    host, port = parsed.host, parsed.port or 80
    latencies: list[float] = []
    queue: asyncio.Queue[str] = asyncio.Queue()
    for p in paths:
        queue.put_nowait(p)
    pool = [HttpConnection(host, port) for _ in range(clients)]

    async def worker(conn: HttpConnection) -> None:
        while True:
            try:
                path = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            t0 = time.perf_counter()
            status, _body = await conn.get(path)
            latencies.append((time.perf_counter() - t0) * 1000)
            if status != 200:
                raise SystemExit(f"GET {path}: {status}")

    try:
        await asyncio.gather(*(c.connect() for c in pool))
        await asyncio.gather(*(c.get(paths[0]) for c in pool))  # every connection used once first
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in pool))
        wall = time.perf_counter() - t0
    finally:
        for c in pool:
            await c.close()
    return latencies, wall


def run_async(coro: Any) -> Any:
    """uvloop when installed (the server uses it too): the client's own overhead stays small."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=2000, help="requests per endpoint")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--waits", type=int, default=5, help="POST ?wait=true samples of the default run")
    ap.add_argument("--mixed", action="store_true", help="the open-loop mixed load (bench/mixed.py)")
    ap.add_argument("--wrk", action="store_true", help="GET /api/runs/{id} against the bare endpoint, by wrk")
    ap.add_argument("--rounds", type=int, default=3, help="--mixed, --wrk: rounds; the worst counts")
    ap.add_argument("--seconds", type=float, default=60, help="--mixed: open-loop seconds")
    ap.add_argument("--saturation-requests", type=int, default=6000, help="--mixed: closed-loop requests")
    ap.add_argument("--wrk-seconds", type=int, default=20, help="--wrk: seconds per block")
    args = ap.parse_args()
    if args.mixed or args.wrk:
        from bench import mixed

        if args.mixed:
            mixed.run_mixed(args, start_server, stop_server, pct, run_async)
        else:
            mixed.run_wrk(args, start_server, stop_server)
        return

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        with open(Path(tmp) / "server.log", "wb") as log:
            proc, url = start_server(db, log)
            try:
                with httpx.Client(base_url=url, timeout=300) as client:
                    # The default config (a fresh seed each time, so no run is answered from another).
                    waits = []
                    first = None
                    for i in range(args.waits + 1):
                        t0 = time.perf_counter()
                        r = client.post("/api/runs?wait=true", json={"config": {"seed": 10_000 + i}})
                        elapsed = (time.perf_counter() - t0) * 1000
                        assert r.status_code == 200 and r.json()["status"] == "done", r.text[:300]
                        if i == 0:
                            first = r.json()  # includes any worker still warming up: not counted
                        else:
                            waits.append(elapsed)
                    assert first is not None
                    t0 = time.perf_counter()
                    ids = [first["id"]] + create_runs(client, args.runs - 1)
                    create_s = time.perf_counter() - t0
                    total = client.get("/api/runs?limit=1").json()["total"]
                    (Path(tmp) / "list.json").write_bytes(client.get("/api/runs?limit=50").content)

                print(f"runs_stored: {total}")
                print(f"runs_created_s: {create_s:.1f}")
                print(f"result_bytes: {len(client_result_bytes(url, ids[0]))}")
                print(f"post_wait_default_p50_ms: {statistics.median(waits):.1f}")
                print(f"post_wait_default_max_ms: {max(waits):.1f}")
                targets = {
                    "get_run": [f"/api/runs/{random.choice(ids)}" for _ in range(args.requests)],
                    "list_runs_50": ["/api/runs?limit=50"] * args.requests,
                    "run_page": [f"/runs/{random.choice(ids)}" for _ in range(args.requests // 4)],
                }
                rps = {}
                for name, paths in targets.items():
                    rps[name] = report(name, url, paths, args.clients)
                    # The same requests again: every run asked for once already (a warm server).
                    report(f"{name}_repeat", url, paths, args.clients)
                    # One client: the per-request latency without queueing behind 49 others.
                    report(f"{name}_1client", url, paths[: max(50, len(paths) // 10)], 1)
            finally:
                stop_server(proc)
            # Side by side: the bare endpoint serving the same stored bytes (the result for a run's
            # answer, the page for its page) over the same connections.
            proc, url = start_server(db, log, bare=True)
            try:
                for name, column in (("get_run", "result"), ("run_page", "page")):
                    paths = [
                        p.replace("/api/runs/", "/runs/").replace("/runs/", f"/bare/{column}/")
                        for p in targets[name]
                    ]
                    bare = report(f"bare_{name}", url, paths, args.clients)
                    print(f"{name}_rps_vs_bare: {rps[name] / bare:.2f}")
                print(f"list_runs_50_rps_vs_bare_get_run: {rps['list_runs_50'] / bare:.2f}")
                bare = report("bare_list_runs_50", url, ["/bare/list"] * args.requests, args.clients)
                print(f"list_runs_50_rps_vs_bare: {rps['list_runs_50'] / bare:.2f}")
            finally:
                stop_server(proc)
            # Restarted: nothing in memory, every page and run read from the database.
            proc, url = start_server(db, log)
            try:
                for name in ("get_run", "run_page"):
                    report(f"{name}_after_restart", url, targets[name], args.clients)
            finally:
                stop_server(proc)


def client_result_bytes(url: str, run_id: str) -> bytes:
    return httpx.get(f"{url}/api/runs/{run_id}", timeout=30).content


if __name__ == "__main__":
    main()
