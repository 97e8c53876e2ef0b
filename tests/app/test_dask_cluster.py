"""Runs and sweeps on real Dask clusters: a scheduler and two workers started here (one killed
with SIGKILL mid-sweep), the server's own cluster (outside the web process, ending with it), and
a scheduler that is not there yet."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from sqlalchemy import select

from app.core.database import make_db_engine, make_sessionmaker, session_scope
from app.core.models import Run
from tests.app.factories import POLL_TIMEOUT_S, submit, wait_finished
from tests.conftest import free_port, this_checkout

DASK = str(Path(sys.executable).parent / "dask")
# 24 points of about a tenth of a second each (a 2-socket skx, several simulated seconds).
SWEEP: dict[str, Any] = {
    "title": "cluster",
    "base": {"duration_ms": 6000},
    "axes": [
        {"path": "governor.name", "values": ["menu", "teo", "ladder"]},
        {"path": "wakeups.interrupts.rate_hz", "values": [100, 200, 400, 800, 1200, 1600, 2400, 3200]},
    ],
}


class DaskCluster:
    """`dask scheduler` and `dask worker` processes on 127.0.0.1 (workers without a nanny, so a
    killed worker stays dead)."""

    def __init__(self, log_dir: Path, port: int) -> None:
        self.address = f"tcp://127.0.0.1:{port}"
        self.port = port
        self.log = open(log_dir / "dask.log", "ab")  # noqa: SIM115 - closed in stop()
        self.scheduler: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []

    def _start(self, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [DASK, *args],
            env=this_checkout(dict(os.environ)),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def start_scheduler(self) -> None:
        self.scheduler = self._start(
            "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--dashboard-address", ":0"
        )

    def start_worker(self) -> subprocess.Popen[bytes]:
        worker = self._start(
            "worker",
            self.address,
            "--nthreads",
            "1",
            "--no-nanny",
            "--host",
            "127.0.0.1",
            "--dashboard-address",
            ":0",
        )
        self.workers.append(worker)
        return worker

    def stop(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.log.close()


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[DaskCluster]:
    cluster = DaskCluster(tmp_path, free_port())
    try:
        yield cluster
    finally:
        cluster.stop()


def _points(db_url: str) -> list[dict[str, Any]]:
    db_engine = make_db_engine(db_url)
    try:
        with session_scope(make_sessionmaker(db_engine)) as session:
            rows = session.execute(select(Run.id, Run.sweep_index, Run.status, Run.result, Run.error))
            return [dict(r._mapping) for r in rows]
    finally:
        db_engine.dispose()


def _wait_sweep(client: httpx.Client, sweep_id: str, until: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 4 * POLL_TIMEOUT_S
    while True:
        sweep = client.get(f"/api/sweeps/{sweep_id}").json()
        if until(sweep):
            return sweep  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"sweep stuck: {sweep['counts']}"
        time.sleep(0.1)


def _assert_every_point_done_once(sweep: dict[str, Any], db_url: str) -> None:
    assert sweep["status"] == "done" and sweep["counts"]["done"] == 24, sweep["counts"]
    rows = _points(db_url)
    # One run per point, none added by a retry, each done with its result.
    assert sorted(r["sweep_index"] for r in rows) == list(range(24))
    assert {r["status"] for r in rows} == {"done"} and all(r["result"] for r in rows)
    assert len({p["run_id"] for p in sweep["points"]}) == 24


@pytest.mark.slow
def test_a_sweep_survives_a_worker_killed_mid_sweep(
    dask_cluster: DaskCluster, server_factory: Any, db_url: str
) -> None:
    dask_cluster.start_scheduler()
    victim = dask_cluster.start_worker()
    dask_cluster.start_worker()
    server = server_factory(workers=0, env={"IDLELAB_DASK_SCHEDULER": dask_cluster.address}).start()
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        made = client.post("/api/sweeps", json=SWEEP)
        assert made.status_code == 202, made.text
        sweep_id = made.json()["id"]
        _wait_sweep(client, sweep_id, lambda s: s["counts"]["done"] >= 3 and s["counts"]["running"] >= 1)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        sweep = _wait_sweep(client, sweep_id, lambda s: s["status"] not in ("queued", "running"))
    _assert_every_point_done_once(sweep, db_url)


@pytest.mark.slow
def test_the_same_sweep_on_the_default_local_cluster(server_factory: Any, db_url: str) -> None:
    server = server_factory(workers=2).start()
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        sweep_id = client.post("/api/sweeps", json=SWEEP).json()["id"]
        seen_running = False

        def finished(s: dict[str, Any]) -> bool:
            nonlocal seen_running
            seen_running |= s["status"] == "running" and 0 < s["progress"] < 1
            return s["status"] not in ("queued", "running")

        sweep = _wait_sweep(client, sweep_id, finished)
    _assert_every_point_done_once(sweep, db_url)
    assert seen_running  # progress was shown on the way


@pytest.mark.slow
def test_runs_wait_queued_until_the_scheduler_answers(dask_cluster: DaskCluster, server_factory: Any) -> None:
    # Nothing listens at the address yet: the server starts and answers all the same.
    server = server_factory(workers=0, env={"IDLELAB_DASK_SCHEDULER": dask_cluster.address}).start()
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        run = submit(client, {"duration_ms": 50, "seed": 7})
        assert client.get(f"/api/runs/{run['id']}").json()["status"] == "queued"
        dask_cluster.start_scheduler()
        dask_cluster.start_worker()
        assert wait_finished(client, run["id"])["status"] == "done"


@pytest.mark.slow
def test_a_lost_scheduler_sends_its_runs_back_to_the_queue(
    dask_cluster: DaskCluster, server_factory: Any, db_url: str
) -> None:
    dask_cluster.start_scheduler()
    dask_cluster.start_worker()
    server = server_factory(workers=0, env={"IDLELAB_DASK_SCHEDULER": dask_cluster.address}).start()
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        sweep_id = client.post("/api/sweeps", json=SWEEP).json()["id"]
        _wait_sweep(client, sweep_id, lambda s: s["counts"]["done"] >= 2 and s["counts"]["running"] >= 1)
        assert dask_cluster.scheduler is not None
        os.killpg(dask_cluster.scheduler.pid, signal.SIGKILL)
        dask_cluster.scheduler.wait()
        # Nothing computes now: the points that were running go back to the queue.
        stalled = _wait_sweep(client, sweep_id, lambda s: s["counts"]["running"] == 0)
        assert stalled["status"] == "running" and stalled["counts"]["queued"] > 0
        dask_cluster.start_scheduler()  # back at the same address, with a new worker
        dask_cluster.start_worker()
        sweep = _wait_sweep(client, sweep_id, lambda s: s["status"] not in ("queued", "running"))
    _assert_every_point_done_once(sweep, db_url)


def _listening_ports(proc: psutil.Process) -> set[int]:
    return {c.laddr.port for c in proc.net_connections("tcp") if c.status == psutil.CONN_LISTEN}


def _own_cluster(server: Any) -> tuple[psutil.Process, list[psutil.Process]]:
    """The web process, checked to run no scheduler, and its cluster's processes."""
    with httpx.Client(base_url=server.url, timeout=120.0) as client:
        # A seed of its own: a result reused from an earlier server would need no cluster.
        config = {"duration_ms": 50, "seed": server.port}
        done = client.post("/api/runs?wait=true", json={"config": config}).json()
        assert done["status"] == "done" and done["reused_from"] is None  # the cluster computed it
    web = psutil.Process(server.proc.pid)
    cluster = web.children(recursive=True)
    (owner,) = [p for p in cluster if "app.jobs.cluster" in p.cmdline()]
    # A scheduler listens: the web process listens on its HTTP port only, the cluster on the rest.
    assert _listening_ports(web) == {server.port}
    assert _listening_ports(owner)
    return web, cluster


@pytest.mark.slow
def test_the_own_cluster_runs_outside_the_web_process_and_never_outlives_it(server_factory: Any) -> None:
    server = server_factory(workers=1).start()
    _, cluster = _own_cluster(server)
    server.proc.send_signal(signal.SIGTERM)  # a shutdown
    server.proc.wait(60)
    _, alive = psutil.wait_procs(cluster, timeout=30)
    assert alive == []

    server = server_factory(workers=1).start()
    web, cluster = _own_cluster(server)
    web.kill()  # a crash: SIGKILL to the web process alone, no shutdown hook runs
    server.proc.wait(60)
    _, alive = psutil.wait_procs(cluster, timeout=30)
    assert alive == [], [p.cmdline() for p in alive]
