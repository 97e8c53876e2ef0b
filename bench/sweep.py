"""Sweep benchmark: a 40-point sweep (points of about 100 ms of wall time each: the default
2-socket skx simulated for 7.5 s, a fresh seed per point so none is answered from another) on a
real server (subprocess, fresh SQLite file) and its Dask LocalCluster. Prints `name: value` lines.

- `points_per_s`: the sweep on the default cluster (`IDLELAB_WORKERS` unset), from the POST to
  the last point done.
- `dask_overhead_ratio`: that sweep's wall time on one worker divided by `simulate()` on the same
  40 configs one after the other in this process, after a warm-up (goal <= 1.15).
- `scaling_2_vs_1`: the sweep's wall time on one worker divided by its wall time on two (goal
  >= 1.6 on a 2-core machine).

Each server's cluster is warmed first (one run with `?wait=true`). The web process shares the
machine with its workers: its writes are part of the cost measured.

    .venv/bin/python bench/sweep.py [--points 40]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.api import start_server, stop_server  # noqa: E402

BASE: dict[str, Any] = {"duration_ms": 7500}
POLL_S = 0.02


def sweep_body(points: int, first_seed: int) -> dict[str, Any]:
    return {"base": BASE, "axes": [{"path": "seed", "values": list(range(first_seed, first_seed + points))}]}


def timed_sweep(workers: int | None, points: int, first_seed: int) -> float:
    """Seconds from POST /api/sweeps to every point done, on a fresh server with `workers`."""
    if workers is None:
        os.environ.pop("IDLELAB_WORKERS", None)
    else:
        os.environ["IDLELAB_WORKERS"] = str(workers)
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "server.log", "wb") as log:
        proc, url = start_server(Path(tmp) / "bench.db", log)
        try:
            with httpx.Client(base_url=url, timeout=300) as client:
                warm = client.post("/api/runs?wait=true", json={"config": {**BASE, "seed": 1}})
                assert warm.json()["status"] == "done", warm.text[:300]
                t0 = time.perf_counter()
                made = client.post("/api/sweeps", json=sweep_body(points, first_seed))
                assert made.status_code == 202, made.text[:300]
                while True:
                    sweep = client.get(f"/api/sweeps/{made.json()['id']}").json()
                    if sweep["status"] not in ("queued", "running"):
                        break
                    time.sleep(POLL_S)
                elapsed = time.perf_counter() - t0
                assert sweep["counts"]["done"] == points, sweep["counts"]
                return elapsed
        finally:
            stop_server(proc)


def in_process(points: int, first_seed: int) -> float:
    """Seconds to simulate the sweep's configs one after the other here, after a warm-up."""
    from engine import SimConfig, simulate

    configs = [SimConfig.model_validate({**BASE, "seed": s}) for s in range(first_seed, first_seed + points)]
    simulate(SimConfig.model_validate({**BASE, "seed": 1}))
    t0 = time.perf_counter()
    for config in configs:
        simulate(config)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=40)
    args = ap.parse_args()
    n = args.points

    default_s = timed_sweep(None, n, 1000)
    print(f"points_per_s: {n / default_s:.2f}")
    one_s = timed_sweep(1, n, 2000)
    local_s = in_process(n, 2000)
    two_s = timed_sweep(2, n, 3000)
    print(f"point_wall_ms: {1000 * local_s / n:.0f}")
    print(f"sweep_1_worker_s: {one_s:.2f}")
    print(f"sweep_2_workers_s: {two_s:.2f}")
    print(f"in_process_s: {local_s:.2f}")
    print(f"dask_overhead_ratio: {one_s / local_s:.2f}")
    print(f"scaling_2_vs_1: {one_s / two_s:.2f}")


if __name__ == "__main__":
    main()
