"""Small factories for configs and runs used by the service tests."""

from __future__ import annotations

import time
from typing import Any

import httpx

SMALL_TOPOLOGY = {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1}
POLL_TIMEOUT_S = 120.0


def small_config(**overrides: Any) -> dict[str, Any]:
    """A fast config: one socket of four cores, 30 simulated ms."""
    return {"duration_ms": 30, "topology": dict(SMALL_TOPOLOGY), **overrides}


def submit(client: httpx.Client, config: dict[str, Any] | None = None, **body: Any) -> dict[str, Any]:
    r = client.post("/api/runs", json={"config": config if config is not None else small_config(), **body})
    assert r.status_code == 202, r.text
    return r.json()  # type: ignore[no-any-return]


def wait_finished(
    client: httpx.Client, run_id: str, statuses: tuple[str, ...] = ("done", "failed")
) -> dict[str, Any]:
    """Poll until the run reaches one of `statuses` (a generous bound, not a timing check)."""
    deadline = time.monotonic() + POLL_TIMEOUT_S
    while True:
        run = client.get(f"/api/runs/{run_id}").json()
        if run["status"] in statuses:
            return run  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"run {run_id} stuck in {run['status']}"
        time.sleep(0.05)


def done_run(app: Any, config: dict[str, Any] | None = None, **run: Any) -> tuple[str, str]:
    """A run simulated here and recorded through the one finish path, as a worker's would be:
    (id, delete token). For in-process apps without workers."""
    from app.core.database import session_scope
    from app.runs import lifecycle
    from engine import SimConfig, simulate

    cfg = SimConfig.model_validate(config if config is not None else small_config())
    with session_scope(app.state.sessionmaker) as session:
        new = lifecycle.add(session, lifecycle.RunSpec(cfg, **run), status="running")
    result = simulate(cfg)
    kwargs = {"engine_version": result.engine_version, "wall_s": 0.1, "compile_s": 0.0}
    assert lifecycle.finish(app.state.sessionmaker, new.id, result.model_dump_json().encode(), **kwargs)
    return new.id, new.delete_token
