"""Computing fits: one background thread of the web process takes queued fits one at a time and
runs the engine's `fit_twin` on them, its evaluations batched onto the Dask cluster through the
`Compute` map `app.main` injects (the job runner's), at a priority between single runs and sweep
points. Each generation's progress and history go to the fit's row; a fit deleted meanwhile is
cancelled at its next batch. The row is the source of truth: a fit the process was computing when
it stopped goes back to the queue and starts again from its seed (`recover`, at start-up).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import orjson
from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker

from app.core.database import session_scope
from app.core.deps import Compute
from app.core.errors import InvalidInput, NotFound
from app.fits import service, store
from app.runs import store as run_store
from engine.twin import FitResult, fit_twin

log = logging.getLogger("idlelab.fits")

# Dask runs higher priorities first: the job runner gives single runs 10 and sweep points 0, and
# a fit's evaluations go between them (single runs > fit evaluations > sweep points).
FIT_PRIORITY = 5
# A runner silent this long is gone (the job runner's own rule): its fits go back to the queue.
STALE_S = 8.0
POLL_S = 1.0
CONNECT_WAIT_S = 0.5
BATCH_ATTEMPTS = 3
WRITE_ATTEMPTS = 5
RECOVER_EVERY_S = 5.0
# What the job runner's map raises until its Dask client is connected.
NOT_CONNECTED = "not connected"


class Cancelled(Exception):
    """The fit was deleted (or the server is stopping) while it ran."""


class ClusterMap:
    """fit_twin's `map` over the cluster: the `Compute` map at the fits' priority, waiting while
    the cluster connects, checking before each generation that the fit is still wanted, and trying
    a generation again when the cluster lost it (a worker died, the scheduler reconnected)."""

    def __init__(self, compute: Compute, still_wanted: Callable[[], bool]) -> None:
        self.compute, self.still_wanted = compute, still_wanted

    def __call__(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        batch = list(items)
        failures = 0
        while True:
            if not self.still_wanted():
                raise Cancelled
            try:
                return self.compute.map(fn, batch, priority=FIT_PRIORITY)
            except RuntimeError as exc:
                if NOT_CONNECTED not in str(exc):
                    raise
                time.sleep(CONNECT_WAIT_S)  # the cluster is starting (or reconnecting)
            except Exception:
                failures += 1
                if failures >= BATCH_ATTEMPTS:
                    raise
                log.warning("a fit's generation was lost on the cluster; trying it again", exc_info=True)


class FitRunner:
    """The web process's fit thread. `enabled` is false when the process has no cluster (workers
    0 and no scheduler): fits then stay queued, as runs do."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        compute: Compute,
        *,
        runner_id: str,
        enabled: bool,
    ) -> None:
        self.factory = factory
        self.compute = compute
        self.runner_id = runner_id
        self.enabled = enabled
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._current: str | None = None
        self._cancelled: set[str] = set()
        self._lock = threading.Lock()

    # -- lifecycle

    def recover(self) -> int:
        """Requeue fits left running by processes that are gone (no fresh heartbeat); how many."""
        with session_scope(self.factory) as session:
            live = run_store.live_runners(session, datetime.now(UTC) - timedelta(seconds=STALE_S))
            n = store.requeue(session, keep_runners=[*live, self.runner_id])
        if n:
            log.info("requeued %d interrupted fit(s)", n)
        return n

    def start(self) -> None:
        if not self.enabled:
            return
        self._thread = threading.Thread(target=self._loop, name="idlelab-fits", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop; a fit in flight stops at its next generation and goes back to the queue."""
        if self._thread is None:
            return
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout)
        self._thread = None

    def queued(self) -> None:
        """A fit was queued: take it."""
        self._wake.set()

    def cancel(self, fit_id: str) -> None:
        """A fit was deleted: stop computing it."""
        with self._lock:
            if self._current == fit_id:
                self._cancelled.add(fit_id)

    # -- the thread

    def _loop(self) -> None:
        last_recover = time.monotonic()
        while not self._stopping.is_set():
            try:
                if time.monotonic() - last_recover >= RECOVER_EVERY_S:
                    # Fits of a process that died after this one started (its heartbeat went stale).
                    last_recover = time.monotonic()
                    self.recover()
                fit_id = self._claim()
            except Exception:  # noqa: BLE001 - a locked database: try again
                log.exception("claiming a fit failed")
                fit_id = None
            if fit_id is None:
                self._wake.wait(POLL_S)
                self._wake.clear()
                continue
            try:
                self.run(fit_id)
            except Exception:  # noqa: BLE001 - never let one fit stop the thread
                log.exception("fit %s: recording how it ended failed", fit_id)

    def _claim(self) -> str | None:
        with session_scope(self.factory) as session:
            fit_id = store.next_queued(session)
            if fit_id is None or not store.claim(session, fit_id, self.runner_id):
                return None
        with self._lock:
            self._current = fit_id
        return fit_id

    def _wanted(self, fit_id: str) -> bool:
        with self._lock:
            return fit_id not in self._cancelled and not self._stopping.is_set()

    def run(self, fit_id: str) -> None:
        """Compute a fit this runner claimed, and record how it ended."""
        try:
            answer = self.compute_fit(fit_id)
            self._write(lambda session: store.finish(session, fit_id, **answer))
        except Cancelled:
            if self._stopping.is_set():
                self._write(lambda session: store.requeue(session, fit_ids=[fit_id]))
        except (InvalidInput, NotFound) as exc:  # the platform changed since the fit was queued
            self._fail(fit_id, _reason(exc))
        except Exception as exc:  # noqa: BLE001 - the reason becomes the fit's error
            log.warning("fit %s failed:\n%s", fit_id, traceback.format_exc())
            self._fail(fit_id, f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._current = None
                self._cancelled.discard(fit_id)

    def _fail(self, fit_id: str, reason: str) -> None:
        try:
            self._write(lambda session: store.fail(session, fit_id, reason))
        except Exception:  # noqa: BLE001 - left running: the next start requeues it
            log.exception("recording the end of fit %s failed", fit_id)

    def _write(self, fn: Callable[[Session], Any]) -> Any:
        """`fn(session)` in one transaction, tried again after a pause when it fails (a locked
        database, a busy pool); a fit left running by a write that never succeeded is requeued by
        the next start."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with session_scope(self.factory) as session:
                    return fn(session)
            except Exception:
                if attempt == WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(0.2 * (attempt + 1))
        return None

    def compute_fit(self, fit_id: str) -> dict[str, Any]:
        """Fit `fit_id` (a running row): the values its row is finished with."""
        with session_scope(self.factory) as session:
            fit = service.get_fit(session, fit_id)
            seed, budget, cpus, platform = fit.seed, fit.budget, fit.cpus, fit.platform
            inputs = service.prepare(session, platform)
        history: list[dict[str, Any]] = []

        def progress(p: dict[str, Any]) -> bool:
            history.append({k: p[k] for k in ("generation", "evaluations", "best_distance")})
            try:
                with session_scope(self.factory) as session:
                    alive = store.set_progress(session, fit_id, p["fraction"], orjson.dumps(history).decode())
            except Exception:  # noqa: BLE001 - a busy pool or a locked database: the next one will do
                log.warning("recording fit %s's progress failed", fit_id, exc_info=True)
                alive = True
            if not alive:
                with self._lock:
                    self._cancelled.add(fit_id)
            return not self._wanted(fit_id)

        cluster = ClusterMap(self.compute, lambda: self._wanted(fit_id))
        result = run_fit(inputs, seed=seed, budget=budget, cpus=cpus, map_fn=cluster, progress=progress)
        if not self._wanted(fit_id):
            raise Cancelled
        return finished_values(result, inputs)


def run_fit(
    inputs: service.FitInputs,
    *,
    seed: int,
    budget: int,
    cpus: int,
    map_fn: Any = None,
    progress: Any = None,
) -> FitResult:
    """The engine's fit of a prepared machine (the CLI calls it too, with its own map)."""
    return fit_twin(
        inputs.counters,
        platform=inputs.table.name,
        platform_table=inputs.table,
        governor=inputs.governor,
        hz=inputs.hz,
        seed=seed,
        budget=budget,
        cpus=cpus,
        map=map_fn,
        progress=progress,
    )


def finished_values(result: FitResult, inputs: service.FitInputs) -> dict[str, Any]:
    """A finished fit's row values: the answer as JSON and its summary columns."""
    answer = {**result.model_dump(mode="json"), "inputs": inputs.describe()}
    return {
        "result": orjson.dumps(answer).decode(),
        "history": orjson.dumps(answer["history"]).decode(),
        "evaluations": result.evaluations,
        "distance": result.distance.total,
        "goal_met": result.goal_met,
    }


def _reason(exc: InvalidInput | NotFound) -> str:
    if isinstance(exc, InvalidInput):
        return "; ".join(str(e["msg"]) for e in exc.detail)
    return str(exc.detail)


async def get_fit_runner(request: Request) -> FitRunner:
    return request.app.state.fit_runner  # type: ignore[no-any-return]


FitRunnerDep = Annotated[FitRunner, Depends(get_fit_runner)]
