"""`idlelab sweep`: posted to a server, or computed here on a Dask cluster; a line per point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.database import make_db_engine, make_sessionmaker, session_scope
from app.sweeps import service as views
from tests.app.test_dask_cluster import DaskCluster
from tests.conftest import free_port, sqlite_url, this_checkout

SWEEP = {
    "title": "cli",
    "base": {"duration_ms": 20, "topology": {"sockets": 1, "cores_per_socket": 4}},
    "axes": [{"path": "governor.name", "values": ["menu", "teo"]}, {"path": "seed", "values": [1, 2]}],
}


def _idlelab(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=this_checkout(
            {**os.environ, "IDLELAB_DATABASE_URL": sqlite_url(tmp_path / "cli.db"), **(env or {})}
        ),
        timeout=300,
    )


def _file(tmp_path: Path, body: dict[str, Any]) -> str:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(body))
    return str(path)


def test_sweep_posts_to_the_server_and_prints_each_point(live_server: str, tmp_path: Path) -> None:
    out = _idlelab(tmp_path, "sweep", _file(tmp_path, SWEEP), "--server", live_server)
    assert out.returncode == 0, out.stderr
    link = out.stdout.strip()
    assert link.startswith(live_server + "/sweeps/")
    lines = [line for line in out.stderr.splitlines() if line.startswith("[")]
    assert sorted(line.split("]")[0] for line in lines) == ["[1/4", "[2/4", "[3/4", "[4/4"]
    assert all(": done" in line for line in lines)
    sweep = httpx.get(link.replace("/sweeps/", "/api/sweeps/")).json()
    assert sweep["status"] == "done" and sweep["title"] == "cli"


def test_bad_sweeps_and_servers_are_one_line_errors(live_server: str, tmp_path: Path) -> None:
    bad = _idlelab(
        tmp_path,
        "sweep",
        _file(tmp_path, {"axes": [{"path": "x.y", "values": [1]}]}),
        "--server",
        live_server,
    )
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert "axes.0.path" in bad.stderr and "names no config field" in bad.stderr
    gone = _idlelab(tmp_path, "sweep", _file(tmp_path, SWEEP), "--server", f"http://127.0.0.1:{free_port()}")
    assert gone.returncode == 1 and "cannot reach" in gone.stderr and "Traceback" not in gone.stderr


@pytest.mark.slow
def test_sweep_on_a_scheduler_writes_to_the_configured_database(tmp_path: Path) -> None:
    cluster = DaskCluster(tmp_path, free_port())
    try:
        cluster.start_scheduler()
        cluster.start_worker()
        out = _idlelab(tmp_path, "sweep", _file(tmp_path, SWEEP), "--scheduler", cluster.address)
    finally:
        cluster.stop()
    assert out.returncode == 0, out.stderr
    sweep_id = out.stdout.strip().rsplit("/", 1)[-1]
    db_engine = make_db_engine(sqlite_url(tmp_path / "cli.db"))
    try:
        with session_scope(make_sessionmaker(db_engine)) as session:
            sweep = views.sweep_view(session, sweep_id)
    finally:
        db_engine.dispose()
    assert sweep["status"] == "done" and [p["status"] for p in sweep["points"]] == ["done"] * 4
