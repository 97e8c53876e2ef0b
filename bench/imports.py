"""Import benchmark: what measurement uploads cost the server. A real server (`idlelab serve`, no
workers) on a fresh SQLite file; its resident memory read from /proc (VmRSS before, VmHWM, the
peak, after). Prints one `name: value` line per figure.

    .venv/bin/python bench/imports.py [--rows 1000000] [--parallel 4]

- `parallel_peak_rss_increase_mb`: four uploads at once of a zipped wult result of `--rows` rows
  (the server parses two at a time and answers the others 503 with Retry-After; they retry),
  as the server's peak resident memory (VmHWM) over its resident memory before them.
- `member_150mb_refused_s` and `member_150mb_rss_increase_mb`: a zip whose datapoints.csv states
  150 MB, refused from its stated size.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import httpx

sys.path[0] = str(Path(__file__).resolve().parent.parent)  # the checkout, for `bench.api`
from bench.api import start_server, stop_server  # noqa: E402

INFO = b"format_version: '1.3'\ntoolname: wult\ndevid: hrt\ncpu: 1\n"
HEADER = (
    b"WakeLatency,SilentTime,IntrLatency,IntrOff,LDist,ReqCState,CC0%,CC1%,CC6%,PC2%,PC6%,SMICnt,NMICnt\n"
)
ROWS = [
    b"100.5,1990.0,103.0,1,2000.0,C6,0.30,0.10,95.00,40.00,50.00,0,0\n",
    b"60.25,1490.0,62.75,1,1500.0,C6,0.30,0.20,96.00,80.00,0.00,0,0\n",
    b"3.0,990.0,5.5,1,1000.0,C6,0.30,90.00,0.00,0.00,0.00,0,0\n",
    b"5.0,490.0,2.0,0,500.0,C1,0.30,99.00,0.00,0.00,0.00,0,0\n",
]


def wult_zip(rows: int, stated: int | None = None) -> bytes:
    """A zipped result of `rows` rows (or, with `stated`, a datapoints.csv of that many bytes)."""
    buf = io.BytesIO()
    piece = b"".join(ROWS) * 2500
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("r/info.yml", INFO)
        with zf.open("r/datapoints.csv", "w", force_zip64=True) as f:
            f.write(HEADER)
            written, left = 0, rows
            while (stated is None and left > 0) or (stated is not None and written < stated):
                chunk = piece if stated is not None or left >= 10_000 else b"".join(ROWS) * (left // 4)
                f.write(chunk)
                written, left = written + len(chunk), left - 10_000
    return buf.getvalue()


def rss_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def upload(url: str, data: bytes, results: list[int]) -> None:
    with httpx.Client(base_url=url, timeout=300) as client:
        while True:
            r = client.post("/api/measurements", files={"files": ("r.zip", data, "application/zip")})
            if r.status_code != 503:
                results.append(r.status_code)
                return
            time.sleep(float(r.headers.get("retry-after", "1")))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    data = wult_zip(args.rows)
    big = wult_zip(0, stated=150_000_000)
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "server.log", "wb") as log:
        os.environ["IDLELAB_WORKERS"] = "0"
        proc, url = start_server(Path(tmp) / "idlelab.db", log)
        try:
            server = proc.pid
            print(f"zip_bytes: {len(data)}")
            before = rss_kb(server, "VmRSS")
            t0 = time.monotonic()
            r = httpx.post(
                f"{url}/api/measurements", files={"files": ("big.zip", big, "application/zip")}, timeout=60
            )
            print(f"member_150mb_status: {r.status_code}")
            print(f"member_150mb_refused_s: {time.monotonic() - t0:.3f}")
            print(f"member_150mb_rss_increase_mb: {(rss_kb(server, 'VmHWM') - before) / 1024:.1f}")
            before = rss_kb(server, "VmRSS")  # the peak's rise over it (an upper bound: VmHWM is since start)
            results: list[int] = []
            t0 = time.monotonic()
            threads = [
                threading.Thread(target=upload, args=(url, data, results)) for _ in range(args.parallel)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print(f"parallel_statuses: {sorted(results)}")
            print(f"parallel_wall_s: {time.monotonic() - t0:.1f}")
            print(f"parallel_peak_rss_increase_mb: {(rss_kb(server, 'VmHWM') - before) / 1024:.1f}")
        finally:
            stop_server(proc)


if __name__ == "__main__":
    main()
