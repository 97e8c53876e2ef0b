"""The job runner: a Dask cluster computes, this process writes.

- `JobRunner.submit()` / `submit_many()` commit runs as `queued` (or answer one at once from a
  finished run with the same config hash and engine version) before any response is sent.
- The cluster is a `LocalCluster` of worker processes (one thread each) built in the background,
  or the scheduler `IDLELAB_DASK_SCHEDULER` names; until it answers, runs wait `queued`. A worker
  warms the engine (numba cache) when it joins (`WarmEngine`).
- The writer thread claims queued runs with `UPDATE runs ... WHERE status = 'queued'` under a fresh
  claim (each attempt its own Dask key), single runs first and with a higher priority than sweep
  points, and keeps about two tasks per worker thread in flight. It records what comes back:
  results through `app.runs.artifacts.finish_run` only `WHERE status = 'running' AND claim = ?`
  (retried; a result that cannot be written fails its run with the reason), errors as the run's
  error (`retries=0`: a deterministic error must not run again; a killed worker is the
  scheduler's business, its `allowed-failures`), lost computations back to the queue.
- Progress: workers `log_event` it, the client's topic handler coalesces it, the writer writes it.
- The supervisor thread keeps the client: a lost scheduler cancels the client's futures (their runs
  are requeued), and the client is rebuilt. It also beats this runner's heartbeat (`runners`), so
  another process's `recover()` leaves its claims alone, and takes over the claims of runners whose
  heartbeat stopped; runs left `running` with no live job of ours are reaped.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

log = logging.getLogger("idlelab.jobs")

# A tiny config for warming the engine (numba compile or cache load) once per process.
WARMUP_CONFIG: dict[str, Any] = {
    "duration_ms": 1.0,
    "topology": {"sockets": 1, "cores_per_socket": 2},
    "output": {"timeline_cpus": 0},
}
PROGRESS_TOPIC = "idlelab-progress"
# Dask runs higher priorities first: a single run overtakes the points of a sweep.
SINGLE_PRIORITY = 10
SWEEP_PRIORITY = 0
# Workers yield the CPU to the web process: with few cores, a simulation (or a worker's engine
# warm-up) must not delay page and API answers. On an idle core they run at full speed.
WORKER_NICENESS = 10
PROGRESS_EVERY_S = 0.1
HEARTBEAT_S = 2.0
# A runner silent this long is gone: its running runs go back to the queue.
STALE_S = 8.0
REAP_EVERY_S = 30.0
RECONNECT_PAUSE_S = 2.0


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


def compute(config_json: str, progress: Callable[[float], None]) -> tuple[bytes, str]:
    """Simulate one run: (result JSON bytes, engine version)."""
    from engine import SimConfig, simulate

    config = SimConfig.model_validate_json(config_json)
    result = simulate(config, progress=progress)
    return result.model_dump_json().encode(), result.engine_version


# --- worker side ---------------------------------------------------------------------------------

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


def run_task(run_id: str, claim: str, config_json: str, step: float) -> tuple[bytes, str, float, float]:
    """A run on a Dask worker: (result JSON bytes, engine version, wall s, warm-up s). Progress
    goes out as worker events every `step` of the run."""
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
            worker.log_event(PROGRESS_TOPIC, {"run": run_id, "claim": claim, "progress": float(fraction)})

    result_json, engine_version = compute(config_json, progress)
    return result_json, engine_version, time.perf_counter() - t0, _warmup_s or 0.0


# --- server side ---------------------------------------------------------------------------------


@dataclass
class Submitted:
    id: str
    status: str
    delete_token: str
    reused_from: str | None = None


@dataclass(frozen=True)
class RunSpec:
    """What `submit_many` makes a run of."""

    config: Any
    title: str = ""
    unlisted: bool = False
    sweep_id: str | None = None
    sweep_index: int | None = None


def connect(workers: int, scheduler: str = "") -> tuple[Any, Any]:
    """(client, cluster or None): to `scheduler` if given, else to a new LocalCluster of `workers`
    processes of one thread each."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        client = Client(scheduler, timeout="5s", set_as_default=False)
        cluster = None
    else:
        # The workers' statistical profiler samples every 10 ms, on the run's own time; off.
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = LocalCluster(
                n_workers=workers,
                processes=True,
                threads_per_worker=1,
                dashboard_address=None,
                host="127.0.0.1",
                # Without a dashboard the scheduler still serves /health, on 8787 unless told: a free
                # port instead, so that two servers (or another cluster) on one machine never clash.
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            )
        client = Client(cluster, set_as_default=False)
    client.register_plugin(WarmEngine())
    return client, cluster


class JobRunner:
    """Owns the Dask client and every write a run's life needs after submission."""

    def __init__(
        self,
        sessionmaker: Any,
        *,
        workers: int,
        scheduler: str = "",
        progress_step: float = 0.02,
        reuse: bool = True,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.n_workers = workers
        self.scheduler = scheduler
        self.progress_step = progress_step
        self.reuse = reuse
        self.id = uuid.uuid4().hex  # this runner, in `runners` and in its runs' `claimed_by`
        # The full engine version (numpy, numba...) runs are reused across.
        self.engine_version: str | None = _engine_version()
        self._client: Any = None
        self._cluster: Any = None
        self._slots = 0
        self._lock = threading.Lock()
        self._events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._held: dict[str, tuple[str, Any]] = {}  # run id -> (claim, future)
        self._progress: dict[str, float] = {}
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}

    @property
    def enabled(self) -> bool:
        return self.n_workers > 0 or bool(self.scheduler)

    # -- lifecycle

    def start(self) -> None:
        """Start the writer and the supervisor (which connects in the background)."""
        if not self.enabled:
            return
        self._write(lambda s: _store().heartbeat(s, self.id, datetime.now(UTC)))
        for target, name in ((self._writer_loop, "idlelab-writer"), (self._supervise, "idlelab-dask")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop computing; runs in flight go back to the queue for the next start."""
        if not self._threads:
            return
        self._stopping.set()
        self._events.put(("stop",))
        for t in self._threads:
            t.join(timeout)
        self._threads.clear()
        with self._lock:
            held = list(self._held)
            self._held.clear()
        self._close_client()
        if held:
            self._write(lambda s: _store().requeue_interrupted(s, held))
        self._write(lambda s: _store().forget_runner(s, self.id))
        self._wake_all_waiters()

    def recover(self, *, unclaimed: bool = True) -> int:
        """Requeue runs left `running` by processes that are gone (no fresh heartbeat), and with
        `unclaimed` (at start) those no runner claimed; returns how many."""
        store = _store()

        def requeue(session: Any) -> int:
            live = store.live_runners(session, datetime.now(UTC) - timedelta(seconds=STALE_S))
            keep = [*live, self.id]
            return int(store.requeue_interrupted(session, keep_runners=keep, unclaimed=unclaimed))

        n = int(self._write(requeue) or 0)
        if n:
            log.info("requeued %d interrupted run(s)", n)
            self._events.put(("wake",))
        return n

    # -- submission and waiting

    def submit(self, config: Any, *, title: str = "", unlisted: bool = False) -> Submitted:
        """Commit a run as queued; or, when a finished run has the same config hash and engine
        version, answer it at once with that result (through `finish_run`, like any run).
        `reused_from` names the original only if it is listed."""
        return self.submit_many([RunSpec(config, title, unlisted)])[0]

    def submit_many(
        self, specs: Sequence[RunSpec], *, before: Callable[[Any], None] | None = None
    ) -> list[Submitted]:
        """`submit` for many runs in one transaction, after `before(session)` (a sweep's row)."""
        from app.db import session_scope
        from app.runs.artifacts import finish_run

        store = _store()
        made: list[tuple[Submitted, Any]] = []
        with session_scope(self.sessionmaker) as session:
            if before is not None:
                before(session)
            for spec in specs:
                source = None
                if self.reuse and self.engine_version is not None:
                    source = store.find_reusable(session, spec.config.config_hash(), self.engine_version)
                new = store.create_run(
                    session,
                    spec.config,
                    title=spec.title,
                    unlisted=spec.unlisted,
                    status="queued" if source is None else "running",
                    sweep_id=spec.sweep_id,
                    sweep_index=spec.sweep_index,
                )
                reused = None if source is None else (source.result, source.engine_version, source.id)
                if source is not None and source.unlisted:
                    reused = (source.result, source.engine_version, None)
                made.append((Submitted(new.run.id, "queued", new.delete_token), reused))
        for sub, reused in made:
            if reused is None:
                continue
            result_json, version, named = reused
            finish_run(
                self.sessionmaker,
                sub.id,
                result_json,
                engine_version=version,
                wall_s=0.0,
                compile_s=0.0,
                reused_from=named,
            )
            sub.status, sub.reused_from = "done", named
        self._events.put(("wake",))
        return [sub for sub, _ in made]

    async def wait(self, run_id: str, timeout: float) -> str | None:
        """Wait until the run is done or failed, at most `timeout` s; returns its status then."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.setdefault(run_id, []).append((loop, fut))
        try:
            status = await asyncio.to_thread(self._status, run_id)
            if status in ("done", "failed", None) or not self.enabled:
                return status
            try:
                await asyncio.wait_for(fut, timeout)
            except TimeoutError:
                pass
            return await asyncio.to_thread(self._status, run_id)
        finally:
            with self._lock:
                lst = self._waiters.get(run_id, [])
                if (loop, fut) in lst:
                    lst.remove((loop, fut))
                if not lst:
                    self._waiters.pop(run_id, None)

    def _status(self, run_id: str) -> str | None:
        from app.db import session_scope

        with session_scope(self.sessionmaker) as session:
            return _store().run_status(session, run_id)  # type: ignore[no-any-return]

    def _wake_waiters(self, run_id: str) -> None:
        with self._lock:
            waiters = self._waiters.pop(run_id, [])
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_set_done, fut)

    def _wake_all_waiters(self) -> None:
        with self._lock:
            ids = list(self._waiters)
        for rid in ids:
            self._wake_waiters(rid)

    # -- the client (supervisor thread)

    def _supervise(self) -> None:
        last_beat = last_reap = 0.0
        while not self._stopping.is_set():
            client = self._client
            if client is not None and client.status != "running":
                log.warning("lost the Dask scheduler; reconnecting")
                self._close_client()
                client = None
            if client is None:
                try:
                    self._client, self._cluster = connect(self.n_workers, self.scheduler)
                    self._client.subscribe_topic(PROGRESS_TOPIC, self._on_progress)
                    log.info("Dask client ready: %s", self._client.scheduler.address)
                except Exception as exc:  # noqa: BLE001 - an unreachable scheduler: retry later
                    log.warning("cannot reach the Dask cluster (%s); runs wait queued", one_line(exc))
                    self._close_client()
                    self._stopping.wait(RECONNECT_PAUSE_S)
                    continue
            try:
                slots = sum(w.get("nthreads", 1) for w in self._client.scheduler_info()["workers"].values())
            except Exception:  # noqa: BLE001 - the next turn sees the client's status
                slots = 0
            if slots != self._slots:
                self._slots = slots
                self._events.put(("wake",))
            now = time.monotonic()
            if now - last_beat >= HEARTBEAT_S:
                last_beat = now
                self._write(lambda s: _store().heartbeat(s, self.id, datetime.now(UTC)))
                # Runs no runner claimed are computed in place (`run --save`, a reuse): not ours.
                self.recover(unclaimed=False)
            if now - last_reap >= REAP_EVERY_S:
                last_reap = now
                self.reap()
            self._stopping.wait(0.5)

    def _close_client(self) -> None:
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        self._slots = 0
        for thing in (client, cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # noqa: BLE001 - it is going away anyway
                    log.debug("closing %r failed", thing, exc_info=True)

    def _on_progress(self, event: tuple[float, Any]) -> None:
        msg = event[1]
        with self._lock:
            if self._held.get(msg["run"], ("",))[0] == msg["claim"]:
                self._progress[msg["run"]] = msg["progress"]
        self._events.put(("progress",))

    # -- claims and results (writer thread)

    def _write(self, fn: Callable[[Any], Any]) -> Any:
        """`fn(session)` in one transaction, retried on failure (a locked database); None if it
        never succeeded (logged)."""
        from app.db import session_scope

        try:
            return retry(lambda: _in_transaction(self.sessionmaker, session_scope, fn))
        except Exception:  # noqa: BLE001 - logged; the reaper catches a run left running
            log.exception("database write failed")
            return None

    def _writer_loop(self) -> None:
        while True:
            events = [self._events.get()]
            while True:  # drain: one progress write and one dispatch per batch
                try:
                    events.append(self._events.get_nowait())
                except queue.Empty:
                    break
            for event in events:
                if event[0] == "stop":
                    return
                if event[0] == "done":
                    try:
                        self._finished(*event[1:])
                    except Exception:  # noqa: BLE001 - never let one result stop the writer
                        log.exception("handling the end of run %s failed", event[1])
            self._flush_progress()
            try:
                self._dispatch()
            except Exception:  # noqa: BLE001
                log.exception("dispatch failed")

    def _flush_progress(self) -> None:
        with self._lock:
            batch, self._progress = self._progress, {}
        if batch:
            self._write(lambda s: _store().set_progress(s, batch))

    def _dispatch(self) -> None:
        """Claim and submit queued runs while fewer than two per worker thread are in flight."""
        client = self._client
        if client is None or self._stopping.is_set():
            return
        store = _store()
        while True:
            with self._lock:
                room = 2 * self._slots - len(self._held)
            if room <= 0:
                return
            queued = self._write(lambda s, n=room: store.next_queued(s, n)) or []
            if not queued:
                return
            for run_id, point in queued:
                claim = uuid.uuid4().hex
                config_json = self._write(
                    lambda s, r=run_id, c=claim: store.claim_run(
                        s, r, datetime.now(UTC), claim=c, runner=self.id
                    )
                )
                if config_json is None:
                    continue  # deleted or claimed meanwhile
                try:
                    future = client.submit(
                        run_task,
                        run_id,
                        claim,
                        config_json,
                        self.progress_step,
                        key=f"run-{run_id}-{claim}",
                        priority=SWEEP_PRIORITY if point else SINGLE_PRIORITY,
                        retries=0,
                        pure=False,
                    )
                except Exception as exc:  # noqa: BLE001 - the client is closing: back to the queue
                    log.warning("submitting run %s failed: %s", run_id, one_line(exc))
                    self._write(lambda s, r=run_id, c=claim: store.requeue_claim(s, r, c))
                    return
                with self._lock:
                    self._held[run_id] = (claim, future)
                future.add_done_callback(lambda f, r=run_id, c=claim: self._events.put(("done", r, c, f)))

    def _finished(self, run_id: str, claim: str, future: Any) -> None:
        store = _store()
        try:
            if future.status == "finished":
                result_json, engine_version, wall_s, compile_s = future.result(timeout=30)
                self._record(run_id, result_json, engine_version, wall_s, compile_s, claim=claim)
            elif future.status == "error":
                error = _task_error(future.exception(timeout=30))
                log.warning("run %s failed: %s", run_id, error)
                self._write(lambda s: store.fail_run(s, run_id, error, claim=claim))
            else:  # cancelled or lost with the scheduler: computed again when a cluster answers
                self._write(lambda s: store.requeue_claim(s, run_id, claim))
        except Exception as exc:  # noqa: BLE001 - fetching the answer failed: compute it again
            log.warning("run %s: its answer was lost (%s); requeued", run_id, one_line(exc))
            self._write(lambda s: store.requeue_claim(s, run_id, claim))
        finally:
            with self._lock:
                if self._held.get(run_id, ("",))[0] == claim:
                    del self._held[run_id]
                self._progress.pop(run_id, None)
            future.release()
            self._wake_waiters(run_id)

    def _record(
        self,
        run_id: str,
        result_json: bytes,
        engine_version: str,
        wall_s: float,
        compile_s: float,
        *,
        claim: str | None = None,
    ) -> None:
        """Record a result through the one finish path, retried; if it cannot be written (too
        large, disk full, lock held), the run fails with the reason instead of staying running."""
        from app.runs.artifacts import ResultTooLarge, finish_run

        def finish() -> bool:
            return finish_run(
                self.sessionmaker,
                run_id,
                result_json,
                engine_version=engine_version,
                wall_s=wall_s,
                compile_s=compile_s,
                claim=claim,
            )

        try:
            retry(finish, give_up=(ResultTooLarge,))
        except Exception as exc:  # noqa: BLE001 - the reason becomes the run's error
            log.exception("recording the result of run %s failed", run_id)
            reason = f"the result could not be stored: {one_line(exc)}"
            self._write(lambda s: _store().fail_run(s, run_id, reason, wall_s=wall_s, claim=claim))

    def reap(self, grace_s: float = 60.0) -> int:
        """Fail runs this runner holds (or nobody claimed) left `running` with no live job behind
        them (their result was lost, or writing their end failed), once `grace_s` past their start."""
        with self._lock:
            held = set(self._held)
        cutoff = datetime.now(UTC) - timedelta(seconds=grace_s)
        running = self._write(lambda s: _store().running_ids(s, self.id)) or []
        orphans = [run_id for run_id, started in running if run_id not in held and started < cutoff]
        reason = "no job was running it any more (its result was lost); submit it again"
        for run_id in orphans:
            self._write(lambda s, r=run_id: _store().fail_run(s, r, reason))
            self._wake_waiters(run_id)
        return len(orphans)


def _task_error(exc: BaseException | None) -> str:
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        return "the workers running it died repeatedly (Dask's allowed-failures); submit it again"
    return one_line(exc) if exc is not None else "failed"


def retry(fn: Callable[[], Any], *, attempts: int = 5, give_up: tuple[type[Exception], ...] = ()) -> Any:
    """`fn()`, tried again after a growing pause when it raises (a locked or full database can
    clear); the last error, or one of `give_up` at once, is raised."""
    for attempt in range(attempts):
        try:
            return fn()
        except give_up:
            raise
        except Exception:
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    return None


def _in_transaction(factory: Any, session_scope: Any, fn: Callable[[Any], Any]) -> Any:
    with session_scope(factory) as session:
        return fn(session)


def _engine_version() -> str | None:
    from engine import engine_version

    return engine_version()


def _set_done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _store() -> Any:
    from app.runs import store

    return store
