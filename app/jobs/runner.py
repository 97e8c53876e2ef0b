"""The server side of the job runner: a Dask cluster computes, this process writes (through
`app.runs.lifecycle`, the one writer of a run's status). It implements `RunEvents`: submission
tells it runs are queued, `?wait=true` waits on it.

- The cluster is the server's own (`OwnedCluster`: a scheduler and worker processes of one thread
  each, in a child process that ends with this one), built in the background, or the scheduler
  `IDLELAB_DASK_SCHEDULER` names; until it answers, runs wait `queued`. A worker
  warms the engine (numba cache) when it joins (`app.jobs.worker.WarmEngine`).
- The writer thread claims queued runs with `UPDATE runs ... WHERE status = 'queued'` under a fresh
  claim (each attempt its own Dask key), single runs first and with a higher priority than sweep
  points, and keeps about two tasks per worker thread in flight. It records what comes back:
  results through `lifecycle.finish` only `WHERE status = 'running' AND claim = ?` (retried; a
  result that cannot be written fails its run with the reason), errors as the run's error
  (`retries=0`: a deterministic error must not run again; a killed worker is the scheduler's
  business, its `allowed-failures`), lost computations back to the queue.
- Repeats: each repeat of a run is its own Dask task under the run's one claim; the run finishes
  (repeat 0's result, every repeat's summary) when all have answered, fails when any fails, and
  goes back to the queue whole when any is lost.
- Progress: workers `log_event` it per repeat, the client's topic handler coalesces it (counted in
  repeats: a run of 4 with one repeat done and one half done is at 37.5%), the writer writes it.
- The supervisor thread keeps the client: a lost scheduler cancels the client's futures (their runs
  are requeued), and the client is rebuilt. It also beats this runner's heartbeat (`runners`), so
  another process's `recover()` leaves its claims alone, and takes over the claims of runners whose
  heartbeat stopped; runs left `running` with no live job of ours are reaped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.core.database import session_scope
from app.core.models import FINISHED
from app.core.settings import REPO_ROOT
from app.jobs.worker import PROGRESS_TOPIC, RepeatAnswer, WarmEngine, one_line, run_task
from app.runs import lifecycle, store
from app.runs.lifecycle import ResultTooLarge

log = logging.getLogger("idlelab.jobs")

# Dask runs higher priorities first: a single run overtakes the points of a sweep.
SINGLE_PRIORITY = 10
SWEEP_PRIORITY = 0
HEARTBEAT_S = 2.0
# A runner silent this long is gone: its running runs go back to the queue.
STALE_S = 8.0
REAP_EVERY_S = 30.0
RECONNECT_PAUSE_S = 2.0
# Longest wait for the server's own cluster to start its workers (a cold start imports numba).
CLUSTER_START_S = 120.0
# The runner's threads that hold database connections: the writer and the supervisor.
DB_THREADS = 2


@dataclass
class Held:
    """A claimed run in flight: its claim, one future per repeat, the answers so far by repeat,
    and each running repeat's progress."""

    claim: str
    seeds: list[int]
    futures: list[Any] = field(default_factory=list)
    answers: dict[int, RepeatAnswer] = field(default_factory=dict)
    progress: dict[int, float] = field(default_factory=dict)

    @property
    def pending(self) -> int:
        return len(self.seeds) - len(self.answers)

    def fraction(self) -> float:
        """Progress counted in repeats."""
        partial = sum(p for i, p in self.progress.items() if i not in self.answers)
        return (len(self.answers) + partial) / len(self.seeds)


def connect(workers: int, scheduler: str = "") -> tuple[Any, OwnedCluster | None]:
    """(client, cluster or None): to `scheduler` if given, else to a new cluster of `workers`
    processes of one thread each, in a process of its own (`OwnedCluster`)."""
    from distributed import Client

    cluster = None
    if not scheduler:
        cluster = OwnedCluster(workers)
        scheduler = cluster.address
    try:
        client = Client(scheduler, timeout="5s", set_as_default=False)
        client.register_plugin(WarmEngine())
    except BaseException:
        if cluster is not None:
            cluster.close()
        raise
    return client, cluster


class OwnedCluster:
    """A Dask scheduler and its workers in a child process (`app.jobs.cluster`) that lives while
    this process holds its standard input open: `close()` ends it, and so does this process's
    death, whatever kills it."""

    def __init__(self, workers: int, start_timeout_s: float = CLUSTER_START_S) -> None:
        env = dict(os.environ)
        # The cluster's workers import `app.jobs.worker` from the checkout this server runs.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO_ROOT), env.get("PYTHONPATH"))))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.jobs.cluster", str(workers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            # Out of the terminal's process group: this process says when the cluster ends.
            start_new_session=True,
        )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], start_timeout_s)
        line = self.process.stdout.readline().decode().strip() if ready else ""
        if not line.startswith("tcp://"):
            exited = self.process.poll()
            self.close()
            if exited is not None:
                raise RuntimeError(f"the Dask cluster process exited at start (code {exited}; see its log)")
            raise RuntimeError(f"the Dask cluster did not start within {start_timeout_s:.0f} s")
        self.address = line

    def close(self, timeout_s: float = 15.0) -> None:
        """End the cluster: its input closed, it closes its workers; killed if it hangs."""
        proc = self.process
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("the Dask cluster did not stop within %.0f s; killed", timeout_s)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class JobRunner:
    """Owns the Dask client and every write a run's life needs after submission."""

    def __init__(
        self,
        sessionmaker: sessionmaker[Session],
        *,
        workers: int,
        scheduler: str = "",
        progress_step: float = 0.02,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.n_workers = workers
        self.scheduler = scheduler
        self.progress_step = progress_step
        self.id = uuid.uuid4().hex  # this runner, in `runners` and in its runs' `claimed_by`
        self._client: Any = None
        self._cluster: Any = None
        self._slots = 0
        self._lock = threading.Lock()
        self._events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._held: dict[str, Held] = {}
        self._progress: dict[str, float] = {}
        self._stopping = threading.Event()
        self._failed_writes = 0  # in a row: the episode `_write` logs once
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
        self._write(lambda s: store.heartbeat(s, self.id, datetime.now(UTC)))
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
            self._write(lambda s: lifecycle.requeue(s, held))
        self._write(lambda s: store.forget_runner(s, self.id))
        self._wake_all_waiters()

    def recover(self, *, unclaimed: bool = True) -> int:
        """Requeue runs left `running` by processes that are gone (no fresh heartbeat), and with
        `unclaimed` (at start) those no runner claimed; returns how many."""

        def requeue(session: Session) -> int:
            live = store.live_runners(session, datetime.now(UTC) - timedelta(seconds=STALE_S))
            return lifecycle.requeue(session, keep_runners=[*live, self.id], unclaimed=unclaimed)

        n = int(self._write(requeue) or 0)
        if n:
            log.info("requeued %d interrupted run(s)", n)
            self._events.put(("wake",))
        return n

    # -- submission and waiting

    def queued(self) -> None:
        """New runs are queued: claim them (`RunEvents`)."""
        self._events.put(("wake",))

    async def wait(self, run_id: str, timeout: float) -> str | None:
        """Wait until the run is done or failed, at most `timeout` s; returns its status then."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.setdefault(run_id, []).append((loop, fut))
        try:
            status = await asyncio.to_thread(self._status, run_id)
            if status in (*FINISHED, None) or not self.enabled:
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
        with session_scope(self.sessionmaker) as session:
            return store.run_status(session, run_id)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, priority: int = 0) -> list[Any]:
        """`fn` over `items` on the cluster, results in order (`Compute`)."""
        client = self._client
        if client is None:
            raise RuntimeError("the Dask cluster is not connected yet")
        return list(client.gather(client.map(fn, list(items), priority=priority, pure=False)))

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
                    if self._stopping.is_set():  # `stop()` ran while the cluster started
                        self._close_client()
                        return
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
                self._write(lambda s: store.heartbeat(s, self.id, datetime.now(UTC)))
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
            held = self._held.get(msg["run"])
            if held is not None and held.claim == msg["claim"]:
                held.progress[msg.get("repeat", 0)] = msg["progress"]
                self._progress[msg["run"]] = held.fraction()
        self._events.put(("progress",))

    # -- claims and results (writer thread)

    def _write(self, fn: Callable[[Session], Any]) -> Any:
        """`fn(session)` in one transaction, retried on failure (a locked database); None if it
        never succeeded. Logged once per episode (a full disk fails every heartbeat until freed):
        the first failure with its traceback, then the first success after it."""
        try:
            result = retry(lambda: _in_transaction(self.sessionmaker, fn))
        except Exception as exc:  # noqa: BLE001 - logged; the reaper catches a run left running
            with self._lock:
                self._failed_writes += 1
                first = self._failed_writes == 1
            if first:
                log.exception("database writes fail (%s); said again only once they work", one_line(exc))
            return None
        if self._failed_writes:
            with self._lock:
                failed, self._failed_writes = self._failed_writes, 0
            if failed:
                log.warning("database writes work again, after %d failed", failed)
        return result

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
                        self._repeat_finished(*event[1:])
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
            self._write(lambda s: lifecycle.set_progress(s, batch))

    def _dispatch(self) -> None:
        """Claim and submit queued runs (each repeat a task) while fewer than two tasks per worker
        thread are in flight."""
        client = self._client
        if client is None or self._stopping.is_set():
            return
        while True:
            with self._lock:
                room = 2 * self._slots - sum(h.pending for h in self._held.values())
            if room <= 0:
                return
            queued = self._write(lambda s, n=room: store.next_queued(s, n)) or []
            if not queued:
                return
            for run_id, point in queued:
                claim = uuid.uuid4().hex
                claimed = self._write(
                    lambda s, r=run_id, c=claim: lifecycle.claim(
                        s, r, datetime.now(UTC), claim=c, runner=self.id
                    )
                )
                if claimed is None:
                    continue  # deleted or claimed meanwhile
                held = Held(claim, claimed.seeds)
                with self._lock:
                    self._held[run_id] = held
                try:
                    for repeat, seed in enumerate(claimed.seeds):
                        future = client.submit(
                            run_task,
                            run_id,
                            claim,
                            claimed.config_json,
                            self.progress_step,
                            repeat,
                            # Repeat 0 is the config itself (its seed): a single run's task is as before.
                            None if repeat == 0 else seed,
                            key=f"run-{run_id}-{claim}-{repeat}",
                            priority=SWEEP_PRIORITY if point else SINGLE_PRIORITY,
                            retries=0,
                            pure=False,
                        )
                        held.futures.append(future)
                        future.add_done_callback(
                            lambda f, r=run_id, c=claim, i=repeat: self._events.put(("done", r, c, i, f))
                        )
                except Exception as exc:  # noqa: BLE001 - the client is closing: back to the queue
                    log.warning("submitting run %s failed: %s", run_id, one_line(exc))
                    self._drop(run_id, claim)
                    self._write(lambda s, r=run_id, c=claim: lifecycle.requeue_claim(s, r, c))
                    return

    def _drop(self, run_id: str, claim: str) -> Held | None:
        """Stop holding a run under `claim` (its other repeats' futures cancelled); what was held."""
        with self._lock:
            held = self._held.get(run_id)
            if held is None or held.claim != claim:
                return None
            del self._held[run_id]
            self._progress.pop(run_id, None)
        for future in held.futures:
            if not future.done():
                future.cancel()
        return held

    def _repeat_finished(self, run_id: str, claim: str, repeat: int, future: Any) -> None:
        """One repeat's task ended: keep its answer, and once every repeat has answered, record
        the run; an error fails the run, a lost task sends it back to the queue."""
        with self._lock:
            held = self._held.get(run_id)
        try:
            if held is None or held.claim != claim:
                return  # the run already ended under this claim (failed, requeued, or stopped)
            if future.status == "finished":
                answer = future.result(timeout=30)
                with self._lock:
                    held.answers[repeat] = answer
                    if held.pending:  # short repeats send no progress of their own: count them here
                        self._progress[run_id] = held.fraction()
                if held.pending:
                    return
                self._drop(run_id, claim)
                answers = [held.answers[i] for i in range(len(held.seeds))]
                self._record(
                    run_id,
                    answers[0].result_json,  # type: ignore[arg-type]
                    answers[0].engine_version,
                    sum(a.wall_s for a in answers),
                    max(a.warmup_s for a in answers),
                    claim=claim,
                    repeats=[
                        {"seed": seed, "summary": a.summary}
                        for seed, a in zip(held.seeds, answers, strict=True)
                    ],
                )
            elif future.status == "error":
                error = _task_error(future.exception(timeout=30))
                if len(held.seeds) > 1:
                    error = f"repeat {repeat} (seed {held.seeds[repeat]}): {error}"
                log.warning("run %s failed: %s", run_id, error)
                self._drop(run_id, claim)
                self._write(lambda s: lifecycle.fail(s, run_id, error, claim=claim))
            else:  # cancelled or lost with the scheduler: computed again when a cluster answers
                self._drop(run_id, claim)
                self._write(lambda s: lifecycle.requeue_claim(s, run_id, claim))
        except Exception as exc:  # noqa: BLE001 - fetching the answer failed: compute it again
            log.warning("run %s: its answer was lost (%s); requeued", run_id, one_line(exc))
            self._drop(run_id, claim)
            self._write(lambda s: lifecycle.requeue_claim(s, run_id, claim))
        finally:
            future.release()
            with self._lock:
                still_held = run_id in self._held
            if not still_held:
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
        repeats: list[dict[str, Any]] | None = None,
    ) -> None:
        """Record a result through the one finish path, retried; if it cannot be written (too
        large, disk full, lock held), the run fails with the reason instead of staying running."""

        def finish() -> bool:
            return lifecycle.finish(
                self.sessionmaker,
                run_id,
                result_json,
                engine_version=engine_version,
                wall_s=wall_s,
                compile_s=compile_s,
                claim=claim,
                repeats=repeats,
            )

        try:
            retry(finish, give_up=(ResultTooLarge,))
        except Exception as exc:  # noqa: BLE001 - the reason becomes the run's error
            log.exception("recording the result of run %s failed", run_id)
            reason = f"the result could not be stored: {one_line(exc)}"
            self._write(lambda s: lifecycle.fail(s, run_id, reason, wall_s=wall_s, claim=claim))

    def reap(self, grace_s: float = 60.0) -> int:
        """Fail runs this runner holds (or nobody claimed) left `running` with no live job behind
        them (their result was lost, or writing their end failed), once `grace_s` past their start."""
        with self._lock:
            held = set(self._held)
        cutoff = datetime.now(UTC) - timedelta(seconds=grace_s)
        running = self._write(lambda s: store.running_ids(s, self.id)) or []
        orphans = [run_id for run_id, started in running if run_id not in held and started < cutoff]
        reason = "no job was running it any more (its result was lost); submit it again"
        for run_id in orphans:
            self._write(lambda s, r=run_id: lifecycle.fail(s, r, reason))
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


def _in_transaction(factory: sessionmaker[Session], fn: Callable[[Session], Any]) -> Any:
    with session_scope(factory) as session:
        return fn(session)


def _set_done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
