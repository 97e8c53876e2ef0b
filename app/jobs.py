"""The job runner: worker processes compute, the parent process writes.

- `JobRunner.submit()` commits a run as `queued` (or answers it at once from a finished run with the
  same config hash and engine version) before any response is sent.
- A dispatcher thread claims queued runs with `UPDATE runs SET status='running' WHERE id=? AND
  status='queued'` and hands each to an idle worker through that worker's own task queue.
- Workers (multiprocessing *spawn* context: no inherited connections or threads) only compute. Each
  warms the engine once on a tiny config, then loops: simulate with a progress callback that
  reports every `progress_step`, send back the result JSON bytes, or the error.
- A collector thread in the parent reads the shared result queue and records progress, and
  results through `app.runs.artifacts.finish_run` (retried; a result that cannot be written fails
  its run with the reason). A worker that dies fails its run and is replaced; a failing run stores
  its error and never takes the server down; runs left `running` with no live job are reaped.
- On start, runs left `running` by a stopped server are requeued (`recover()`).

Worker-side code below imports only the engine, so spawning a worker stays cheap.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.process import BaseProcess
from typing import Any

log = logging.getLogger("idlelab.jobs")

# A tiny config for warming the engine (numba compile or cache load) once per process.
WARMUP_CONFIG: dict[str, Any] = {
    "duration_ms": 1.0,
    "topology": {"sockets": 1, "cores_per_socket": 2},
    "output": {"timeline_cpus": 0},
}


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


class _ParentGone(Exception):
    pass


def compute(config_json: str, progress: Callable[[float], None]) -> tuple[bytes, str]:
    """Simulate one run: (result JSON bytes, engine version)."""
    from engine import SimConfig, simulate

    config = SimConfig.model_validate_json(config_json)
    result = simulate(config, progress=progress)
    return result.model_dump_json().encode(), result.engine_version


class _ProgressReporter:
    """The engine's progress callback in a worker: a message every `step` of the run."""

    def __init__(self, results: Any, worker_id: int, run_id: str, step: float, parent: Any) -> None:
        self.results, self.worker_id, self.run_id, self.step, self.parent = (
            results,
            worker_id,
            run_id,
            step,
            parent,
        )
        self.last = 0.0

    def __call__(self, fraction: float) -> None:
        if self.parent is not None and not self.parent.is_alive():
            raise _ParentGone  # the server is gone: stop computing
        if fraction - self.last >= self.step:
            self.last = fraction
            self.results.put(("progress", self.worker_id, self.run_id, float(fraction)))


# Workers yield the CPU to the web process: with few cores, a simulation (or a worker's engine
# warm-up after a restart) must not delay page and API answers. On an idle core they run at full speed.
WORKER_NICENESS = 10


def worker_main(worker_id: int, tasks: Any, results: Any, progress_step: float) -> None:
    """A worker process: warm up, then run tasks until it gets None or its parent is gone."""
    # Ctrl-C in a terminal reaches the whole process group: the server decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.nice(WORKER_NICENESS)
    except OSError:  # not allowed here: run at the server's priority
        pass
    parent = mp.parent_process()
    compile_s, version = warm_engine()
    results.put(("ready", worker_id, version, compile_s))
    while True:
        try:
            task = tasks.get(timeout=1.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return
            continue
        if task is None:
            return
        run_id, config_json = task
        progress = _ProgressReporter(results, worker_id, run_id, progress_step, parent)
        t0 = time.perf_counter()
        try:
            result_json, engine_version = compute(config_json, progress)
        except _ParentGone:
            return
        except Exception as exc:  # noqa: BLE001 - report every failure as the run's error
            results.put(
                ("failed", worker_id, run_id, one_line(exc), time.perf_counter() - t0, traceback.format_exc())
            )
            continue
        wall_s = time.perf_counter() - t0
        results.put(("done", worker_id, run_id, result_json, engine_version, wall_s, compile_s))


# --- parent side ---------------------------------------------------------------------------------


@dataclass
class Submitted:
    id: str
    status: str
    delete_token: str
    reused_from: str | None = None


@dataclass
class _Worker:
    wid: int
    process: BaseProcess
    tasks: Any
    ready: bool = False
    run_id: str | None = None


class JobRunner:
    """Owns the worker pool and every write a run's life needs after submission."""

    def __init__(
        self, sessionmaker: Any, *, workers: int, progress_step: float = 0.02, reuse: bool = True
    ) -> None:
        self.sessionmaker = sessionmaker
        self.n_workers = workers
        self.progress_step = progress_step
        self.reuse = reuse
        # The full engine version (numpy, numba...) runs are reused across; workers confirm it.
        self.engine_version: str | None = _engine_version()
        self._ctx = mp.get_context("spawn")
        self._results: Any = None
        self._workers: list[_Worker] = []
        self._next_wid = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}

    # -- lifecycle

    def start(self) -> None:
        if self.n_workers <= 0:
            return
        self._results = self._ctx.Queue()
        for _ in range(self.n_workers):
            self._spawn()
        for target, name in (
            (self._dispatch_loop, "idlelab-dispatch"),
            (self._collect_loop, "idlelab-collect"),
        ):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def _spawn(self) -> _Worker:
        wid = self._next_wid
        self._next_wid += 1
        tasks = self._ctx.Queue()
        process = self._ctx.Process(
            target=worker_main,
            args=(wid, tasks, self._results, self.progress_step),
            name=f"idlelab-worker-{wid}",
            daemon=True,
        )
        process.start()
        worker = _Worker(wid, process, tasks)
        self._workers.append(worker)
        return worker

    def stop(self, timeout: float = 10.0) -> None:
        """Stop threads and workers; runs still in flight go back to the queue for the next start."""
        if not self._threads and not self._workers:
            return
        self._stopping.set()
        self._wake.set()
        for w in self._workers:
            try:
                w.tasks.put(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + timeout
        for w in self._workers:
            w.process.join(max(0.1, deadline - time.monotonic()))
            if w.process.is_alive():
                w.process.terminate()
                w.process.join(5)
        if self._results is not None:
            self._results.put(("stop",))
        for t in self._threads:
            t.join(5)
        in_flight = [w.run_id for w in self._workers if w.run_id]
        if in_flight:
            self._write(lambda s: _store().requeue_interrupted(s, in_flight))
        for w in self._workers:
            w.tasks.close()
            w.tasks.join_thread()
            w.process.close()
        if self._results is not None:
            self._results.close()
            self._results.join_thread()
        self._workers.clear()
        self._threads.clear()
        self._wake_all_waiters()

    def recover(self) -> int:
        """Requeue runs a stopped server left `running`; returns how many."""
        n = self._write(lambda s: _store().requeue_interrupted(s))
        if n:
            log.info("requeued %d interrupted run(s)", n)
        return int(n or 0)

    # -- submission and waiting

    def submit(self, config: Any, *, title: str = "", unlisted: bool = False) -> Submitted:
        """Commit a run as queued and wake the dispatcher; or, when a finished run has the same
        config hash and engine version, answer it at once with that result (through
        `finish_run`, like any run). `reused_from` names the original only if it is listed."""
        from app.db import session_scope
        from app.runs.artifacts import finish_run

        store = _store()
        with session_scope(self.sessionmaker) as session:
            source = None
            if self.reuse and self.engine_version is not None:
                source = store.find_reusable(session, config.config_hash(), self.engine_version)
            status = "queued" if source is None else "running"
            new = store.create_run(session, config, title=title, unlisted=unlisted, status=status)
            run_id, token = new.run.id, new.delete_token
            reused = (
                None if source is None else (source.result, source.engine_version, source.id, source.unlisted)
            )
        if reused is None:
            self._wake.set()
            return Submitted(run_id, "queued", token)
        result_json, version, source_id, source_unlisted = reused
        named = None if source_unlisted else source_id
        finish_run(
            self.sessionmaker,
            run_id,
            result_json,
            engine_version=version,
            wall_s=0.0,
            compile_s=0.0,
            reused_from=named,
        )
        return Submitted(run_id, "done", token, named)

    async def wait(self, run_id: str, timeout: float) -> str | None:
        """Wait until the run is done or failed, at most `timeout` s; returns its status then."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.setdefault(run_id, []).append((loop, fut))
        try:
            status = await asyncio.to_thread(self._status, run_id)
            if status in ("done", "failed", None) or self.n_workers <= 0:
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
            return _store().run_status(session, run_id)

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

    # -- threads

    def _write(self, fn: Callable[[Any], Any]) -> Any:
        """`fn(session)` in one transaction, retried on failure (a locked database); None if it
        never succeeded (logged)."""
        from app.db import session_scope

        try:
            return retry(lambda: _in_transaction(self.sessionmaker, session_scope, fn))
        except Exception:  # noqa: BLE001 - logged; the reaper catches a run left running
            log.exception("database write failed")
            return None

    def _dispatch_loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(timeout=2.0)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self._dispatch()
            except Exception:  # noqa: BLE001
                log.exception("dispatch failed")

    def _dispatch(self) -> None:
        store = _store()
        while True:
            with self._lock:
                idle = [w for w in self._workers if w.ready and w.run_id is None and w.process.is_alive()]
            if not idle:
                return
            ids = self._write(functools.partial(store.next_queued_ids, limit=len(idle))) or []
            if not ids:
                return
            for run_id in ids:
                config_json = self._write(lambda s, r=run_id: store.claim_run(s, r, datetime.now(UTC)))
                if config_json is None:
                    continue  # deleted or claimed meanwhile
                worker = idle.pop()
                with self._lock:
                    worker.run_id = run_id
                worker.tasks.put((run_id, config_json))
                if not idle:
                    break

    def _collect_loop(self) -> None:
        pending_progress: dict[str, float] = {}
        last_reap = time.monotonic()
        while True:
            try:
                msg = self._results.get(timeout=0.5)
            except queue.Empty:
                msg = None
            except (EOFError, OSError):
                return
            if msg is not None and msg[0] == "stop":
                return
            if msg is not None:
                try:
                    self._handle(msg, pending_progress)
                except Exception:  # noqa: BLE001 - never let one message stop the collector
                    log.exception("handling %s failed", msg[0])
            # Progress is coalesced: written when the queue runs dry, at most one row per run.
            if pending_progress and (msg is None or self._results.empty()):
                batch = dict(pending_progress)
                pending_progress.clear()
                self._write(functools.partial(_store().set_progress, progress=batch))
            if msg is None and not self._stopping.is_set():
                self._check_workers()
                if time.monotonic() - last_reap > REAP_EVERY_S:
                    last_reap = time.monotonic()
                    self.reap()

    def _handle(self, msg: tuple[Any, ...], pending_progress: dict[str, float]) -> None:
        store = _store()
        kind = msg[0]
        if kind == "ready":
            _, wid, version, compile_s = msg
            with self._lock:
                for w in self._workers:
                    if w.wid == wid:
                        w.ready = True
            if version:
                self.engine_version = version
            log.info("worker %d ready (engine warm-up %.2f s)", wid, compile_s)
            self._wake.set()
        elif kind == "progress":
            _, _wid, run_id, fraction = msg
            pending_progress[run_id] = fraction
        elif kind == "done":
            _, wid, run_id, result_json, engine_version, wall_s, compile_s = msg
            pending_progress.pop(run_id, None)
            self._record(run_id, result_json, engine_version, wall_s, compile_s)
            self._release(wid, run_id)
        elif kind == "failed":
            _, wid, run_id, error, wall_s, tb = msg
            pending_progress.pop(run_id, None)
            log.warning("run %s failed: %s\n%s", run_id, error, tb)
            self._write(lambda s: store.fail_run(s, run_id, error, wall_s=wall_s))
            self._release(wid, run_id)

    def _record(
        self, run_id: str, result_json: bytes, engine_version: str, wall_s: float, compile_s: float
    ) -> None:
        """Record a result through the one finish path, retried; if it cannot be written (too
        large, disk full, lock held), the run fails with the reason instead of staying running."""
        from app.runs.artifacts import ResultTooLarge, finish_run

        def finish() -> bool:
            kwargs = {"engine_version": engine_version, "wall_s": wall_s, "compile_s": compile_s}
            return finish_run(self.sessionmaker, run_id, result_json, **kwargs)  # type: ignore[arg-type]

        try:
            retry(finish, give_up=(ResultTooLarge,))
        except Exception as exc:  # noqa: BLE001 - the reason becomes the run's error
            log.exception("recording the result of run %s failed", run_id)
            reason = f"the result could not be stored: {one_line(exc)}"
            self._write(lambda s: _store().fail_run(s, run_id, reason, wall_s=wall_s))

    def reap(self, grace_s: float = 60.0) -> int:
        """Fail runs left `running` with no live job behind them (their worker's result was lost,
        or writing their end failed), once `grace_s` past their start."""
        from datetime import timedelta

        with self._lock:
            held = {w.run_id for w in self._workers if w.run_id}
        cutoff = datetime.now(UTC) - timedelta(seconds=grace_s)
        orphans = [r for r in self._write(_store().running_ids) or [] if r[0] not in held and r[1] < cutoff]
        reason = "no job was running it any more (its result was lost); submit it again"
        for run_id, _ in orphans:
            self._write(lambda s, r=run_id: _store().fail_run(s, r, reason))
            self._wake_waiters(run_id)
        return len(orphans)

    def _release(self, wid: int, run_id: str) -> None:
        with self._lock:
            for w in self._workers:
                if w.wid == wid and w.run_id == run_id:
                    w.run_id = None
        self._wake_waiters(run_id)
        self._wake.set()

    def _check_workers(self) -> None:
        """Replace dead workers; a run a worker died on is failed with the reason."""
        with self._lock:
            dead = [w for w in self._workers if not w.process.is_alive()]
        for w in dead:
            code = w.process.exitcode
            log.error("worker %d exited with code %s", w.wid, code)
            if w.run_id is not None:
                run_id = w.run_id
                reason = f"the worker process running it exited unexpectedly (exit code {code})"
                self._write(functools.partial(_store().fail_run, run_id=run_id, error=reason))
                self._wake_waiters(run_id)
            with self._lock:
                self._workers.remove(w)
            w.tasks.close()
            w.tasks.join_thread()
            w.process.close()
            if not self._stopping.is_set():
                with self._lock:
                    self._spawn()


REAP_EVERY_S = 30.0


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
