"""The worker side of the job runner: what a Dask worker runs. It imports only the engine (and
Dask): no web framework, no database, nothing of `app.core`.

- `WarmEngine` lowers a worker's priority and warms the engine (numba cache) when it joins.
- `run_task` simulates one repeat of a run from its validated config JSON (with the repeat's
  seed), reporting progress as worker events every `step` of it, and answers a `RepeatAnswer`: the
  full result JSON for repeat 0 only (the one a repeated run keeps), every repeat's summary figures.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from distributed.diagnostics.plugin import WorkerPlugin

log = logging.getLogger("idlelab.jobs")

# A tiny config for warming the engine (numba compile or cache load) once per process.
WARMUP_CONFIG: dict[str, Any] = {
    "duration_ms": 1.0,
    "topology": {"sockets": 1, "cores_per_socket": 2},
    "output": {"timeline_cpus": 0},
}
PROGRESS_TOPIC = "idlelab-progress"
# Workers yield the CPU to the web process: with few cores, a simulation (or a worker's engine
# warm-up) must not delay page and API answers. On an idle core they run at full speed.
WORKER_NICENESS = 10
PROGRESS_EVERY_S = 0.1


def warm_engine() -> tuple[float, str | None]:
    """Run the engine once on a tiny config; returns (seconds, full engine version or None)."""
    from engine import SimConfig, simulate

    t0 = time.perf_counter()
    try:
        result = simulate(SimConfig.model_validate(WARMUP_CONFIG))
    except Exception as exc:  # noqa: BLE001 - a broken engine fails runs, not the worker
        log.warning("engine warm-up failed: %s", one_line(exc))
        return time.perf_counter() - t0, None
    return time.perf_counter() - t0, result.engine_version


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def compute(
    config_json: str, progress: Callable[[float], None], seed: int | None = None
) -> tuple[bytes, str, dict[str, float]]:
    """Simulate one run (with `seed` instead of the config's, when given): (result JSON bytes,
    engine version, summary figures)."""
    from engine import SimConfig, simulate
    from engine.repeats import summary_figures

    config = SimConfig.model_validate_json(config_json)
    if seed is not None:
        config = config.model_copy(update={"seed": seed})
    result = simulate(config, progress=progress)
    summary = summary_figures(result.model_dump(mode="json"))
    return result.model_dump_json().encode(), result.engine_version, summary


# Seconds the engine warm-up took in this worker process (reported with each of its runs); None
# until it is warm.
_warmup_s: float | None = None


class WarmEngine(WorkerPlugin):
    """Run on every worker as it joins (and once per process, however often a client registers
    it again): lower its priority, warm the engine."""

    name = "idlelab-warm-engine"

    def setup(self, worker: Any) -> None:
        global _warmup_s
        if _warmup_s is not None:
            return
        try:
            os.nice(WORKER_NICENESS)
        except OSError:  # not allowed here: run at the default priority
            pass
        _warmup_s, _ = warm_engine()
        # As in the web process: the worker's and the engine's startup objects live as long as the
        # process; out of the cyclic GC's sight, its full collections stop walking them mid-run.
        gc.collect()
        gc.freeze()


class RepeatAnswer(NamedTuple):
    """What one repeat's task answers: the full result only for repeat 0 (the others' would be
    sent and dropped), the summary figures of every repeat."""

    result_json: bytes | None
    summary: dict[str, float]
    engine_version: str
    wall_s: float
    warmup_s: float


def run_task(
    run_id: str, claim: str, config_json: str, step: float, repeat: int = 0, seed: int | None = None
) -> RepeatAnswer:
    """One repeat of a run on a Dask worker (with `seed`, the repeat's). Progress goes out as
    worker events every `step` of the repeat, naming the repeat."""
    from distributed import get_worker

    worker = get_worker()
    t0 = time.perf_counter()
    last = [0.0, t0]

    def progress(fraction: float) -> None:
        # Every `step` of the run, and not more often than PROGRESS_EVERY_S: each event is a hop
        # to the scheduler and on to the server, taken from the worker's own time.
        now = time.perf_counter()
        if fraction - last[0] >= step and now - last[1] >= PROGRESS_EVERY_S:
            last[0], last[1] = fraction, now
            event = {"run": run_id, "claim": claim, "repeat": repeat, "progress": float(fraction)}
            worker.log_event(PROGRESS_TOPIC, event)

    result_json, engine_version, summary = compute(config_json, progress, seed)
    return RepeatAnswer(
        result_json if repeat == 0 else None,
        summary,
        engine_version,
        time.perf_counter() - t0,
        _warmup_s or 0.0,
    )
