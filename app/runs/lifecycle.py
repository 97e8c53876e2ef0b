"""A run's life, and the only code that writes its status: submit (queued, or answered at once from
a finished run with the same config hash and engine), claim (running, under a claim), finish
(done, with its immutable artifacts), fail, cancel (a sweep's queued points), requeue.

The API, sweeps, scenarios, measurements, the command line and the job runner all go through it.
A result is recorded only `WHERE status = 'running'` (and, when given, under the claim it was
computed for): an older attempt's answer, or a second completion, changes nothing. `finish`
renders the page before the write transaction (a template error stores no page, and the run still
finishes), then writes result, summary columns and page in the transaction that marks it done.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import statistics
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import orjson
from fastapi import Depends, Request
from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from app.core import web
from app.core.database import session_scope
from app.core.deps import RunEvents
from app.core.errors import Busy, TooManyRequests
from app.core.models import ACTIVE_WHERE, Run, config_summary, result_summary, utcnow
from app.core.tokens import new_id, new_token
from app.platforms import store as platform_store
from app.runs import service, store
from engine import SimConfig
from engine import engine_version as current_engine_version
from engine.repeats import repeat_seeds, summary_figures

log = logging.getLogger("idlelab")

# A result or page over these sizes is not kept: the run fails with the reason instead (a small
# request must not build a huge answer).
MAX_RESULT_BYTES = 2 * 1024 * 1024
MAX_PAGE_BYTES = 4 * 1024 * 1024
CANCELLED = "cancelled with its sweep"


class ResultTooLarge(Exception):
    pass


@dataclass
class Submitted:
    id: str
    status: str
    delete_token: str
    reused_from: str | None = None

    def answer(self, url: str) -> dict[str, Any]:
        """The `RunSubmitted` fields, with the share link `url`."""
        return {
            "id": self.id,
            "url": url,
            "status": self.status,
            "delete_token": self.delete_token,
            "reused_from": self.reused_from,
        }


@dataclass(frozen=True)
class RunSpec:
    """What `submit` makes a run of: a validated config (platform resolved) and its row's fields."""

    config: SimConfig
    title: str = ""
    unlisted: bool = False
    sweep_id: str | None = None
    sweep_index: int | None = None
    repeats: int = 1


def add(
    session: Session,
    spec: RunSpec,
    *,
    status: str = "queued",
    config_hash: str | None = None,
    client: str | None = None,
) -> Submitted:
    """Add a run: queued, or `running` when this process computes (or copies) it at once
    (`config_hash`: the config's, when the caller has it already; `client`: who asked)."""
    token, token_hash = new_token()
    config = spec.config
    config_json, table_hash = platform_store.stored_config(session, config)
    run = Run(
        id=new_id(),
        title=spec.title,
        status=status,
        progress=0.0,
        unlisted=spec.unlisted,
        delete_token_hash=token_hash,
        stored_config=config_json,
        platform_table_hash=table_hash,
        config_hash=config_hash or config.config_hash(),
        engine_version=current_engine_version(),
        created_at=utcnow(),
        started_at=utcnow() if status == "running" else None,
        sweep_id=spec.sweep_id,
        sweep_index=spec.sweep_index,
        expected_events=config.expected_events(config.resolve_platform()),
        client=client,
        repeat_count=spec.repeats,
        **config_summary(config),
    )
    session.add(run)
    session.flush()
    return Submitted(run.id, status, token)


@dataclass(frozen=True)
class QueueCaps:
    """Expected events (the engine's estimate) queued or running: per client (429) and in all (503)."""

    client_events: float = float("inf")
    all_events: float = float("inf")


# How long a client at a cap is asked to wait: a guess at how long a worker takes to drain a
# cap's worth of the smallest runs, not a measured figure.
QUEUE_RETRY_AFTER_S = 30
# The expected events of the active runs (`.where(Run.client == ...)` for one client's): read from
# the partial covering index `ix_runs_active_client_expected_events`, not from the queued rows (the
# statuses inline, as the index's condition has them).
ACTIVE_EVENTS = select(func.coalesce(func.sum(Run.expected_events), 0.0)).where(text(ACTIVE_WHERE))


@dataclass
class Submitter:
    """Submission bound to a database, the runner's events and the reuse setting (one per process;
    `for_client` binds a request's client for the queue caps)."""

    factory: sessionmaker[Session]
    events: RunEvents
    reuse: bool = True
    caps: QueueCaps = QueueCaps()
    client: str | None = None

    def for_client(self, client: str) -> Submitter:
        return dataclasses.replace(self, client=client)

    def check_caps(self, session: Session, specs: Sequence[RunSpec]) -> None:
        """`TooManyRequests` when the specs would take this client past its queued events,
        `Busy` when they would take the whole queue past its own."""
        new = sum(spec.config.expected_events(spec.config.resolve_platform()) for spec in specs)
        active = ACTIVE_EVENTS
        if self.client is not None:
            mine = float(session.scalar(active.where(Run.client == self.client)) or 0.0)
            if mine + new > self.caps.client_events:
                raise TooManyRequests(
                    f"this client has about {mine:,.0f} events queued or running; {new:,.0f} more would pass "
                    f"its limit of {self.caps.client_events:,.0f}: retry when some have run",
                    QUEUE_RETRY_AFTER_S,
                )
        queued = float(session.scalar(active) or 0.0)
        if queued + new > self.caps.all_events:
            raise Busy(
                f"the queue holds about {queued:,.0f} events; {new:,.0f} more would pass its limit of "
                f"{self.caps.all_events:,.0f}: retry when some have run",
                QUEUE_RETRY_AFTER_S,
            )

    def __call__(
        self, specs: Sequence[RunSpec], *, before: Callable[[Session], None] | None = None
    ) -> list[Submitted]:
        """Commit runs as queued in one transaction, after `before(session)` (a sweep's row); a run
        whose config hash, repeat count and engine version a finished run has is answered at once
        with that result and its repeats, through `finish` like any run (`reused_from` names the
        original only if listed)."""
        version = current_engine_version()
        made: list[tuple[Submitted, Any]] = []
        with session_scope(self.factory) as session:
            self.check_caps(session, specs)
            if before is not None:
                before(session)
            for spec in specs:
                source = None
                if self.reuse:
                    source = store.find_reusable(session, spec.config.config_hash(), version, spec.repeats)
                sub = add(session, spec, status="queued" if source is None else "running", client=self.client)
                reused = None
                if source is not None:
                    repeats = None if source.repeats is None else orjson.loads(source.repeats)
                    named = None if source.unlisted else source.id
                    reused = (source.result, source.engine_version, named, repeats)
                made.append((sub, reused))
        for sub, reused in made:
            if reused is not None:
                result_json, engine_version, named, repeats = reused
                finish(self.factory, sub.id, result_json, engine_version=engine_version,
                       wall_s=0.0, compile_s=0.0, reused_from=named, repeats=repeats)  # fmt: skip
                sub.status, sub.reused_from = "done", named
        self.events.queued()
        return [sub for sub, _ in made]

    def one(
        self, config: SimConfig, *, title: str = "", unlisted: bool = False, repeats: int = 1
    ) -> Submitted:
        return self([RunSpec(config, title, unlisted, repeats=repeats)])[0]

    def config(
        self, session: Session, data: Any, *, title: str = "", unlisted: bool = False, repeats: int = 1
    ) -> Submitted:
        """Resolve and validate a config (`InvalidInput` names the field), then submit it: the read
        ends first, so that the submission's own transaction sees what this session saw."""
        config = service.resolve_config(session, data)
        session.commit()
        return self.one(config, title=title, unlisted=unlisted, repeats=repeats)


def client_address(request: Request, trusted_proxy: str) -> str:
    """Who sent the request: the peer, or behind trusted proxies the first X-Forwarded-For hop,
    from the right, that is not one of them (the hops left of it could be made up)."""
    peer = request.client.host if request.client else "unknown"
    trusted = [ipaddress.ip_network(p.strip(), strict=False) for p in trusted_proxy.split(",") if p.strip()]

    def is_trusted(hop: str) -> bool:
        try:
            address = ipaddress.ip_address(hop)
        except ValueError:
            return False
        return any(address in network for network in trusted)

    hops = [h.strip() for v in request.headers.getlist("x-forwarded-for") for h in v.split(",") if h.strip()]
    for hop in reversed([*hops, peer]):
        if not is_trusted(hop):
            return hop[:64]
    return peer[:64]


async def get_submitter(request: Request) -> Submitter:
    """The process's submitter, bound to the request's client (the queue caps count per client)."""
    submitter: Submitter = request.app.state.submitter
    return submitter.for_client(client_address(request, request.app.state.settings.trusted_proxy))


SubmitterDep = Annotated[Submitter, Depends(get_submitter)]


# --- the runner's writes ------------------------------------------------------------------------


def _where_running(run_id: str, claim: str | None) -> Any:
    cond = (Run.id == run_id) & (Run.status == "running")
    return cond if claim is None else cond & (Run.claim == claim)


def _set(session: Session, where: Any, **values: Any) -> int:
    res = session.execute(
        update(Run).where(where).values(**values).execution_options(synchronize_session=False)
    )
    return int(res.rowcount)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Claimed:
    """A run this caller won: its config JSON and the seed of each repeat (repeat 0's first)."""

    config_json: str
    seeds: list[int]


def claim(session: Session, run_id: str, now: datetime, *, claim: str, runner: str) -> Claimed | None:
    """Move a queued run to running under `claim`, held by `runner`; what to compute if this
    caller won it."""
    where = (Run.id == run_id) & (Run.status == "queued")
    if (
        _set(session, where, status="running", started_at=now, progress=0.0, claim=claim, claimed_by=runner)
        != 1
    ):
        return None
    row = session.execute(select(Run.config, Run.seed, Run.repeat_count).where(Run.id == run_id)).one()
    return Claimed(row.config, repeat_seeds(row.seed, row.repeat_count))


def fail(
    session: Session, run_id: str, error: str, *, wall_s: float | None = None, claim: str | None = None
) -> bool:
    """Mark a queued or running run (running under `claim`, when given) failed with `error`."""
    where = (Run.id == run_id) & Run.status.in_(("queued", "running"))
    where = where if claim is None else _where_running(run_id, claim)
    return _set(session, where, status="failed", error=error, finished_at=utcnow(), wall_s=wall_s) == 1


def cancel_sweep(session: Session, sweep_id: str) -> int:
    """Fail a sweep's queued points (running ones finish); how many."""
    where = (Run.sweep_id == sweep_id) & (Run.status == "queued")
    return _set(session, where, status="failed", error=CANCELLED, finished_at=utcnow())


_REQUEUED = {"status": "queued", "progress": 0.0, "started_at": None, "claim": None, "claimed_by": None}


def requeue(
    session: Session,
    run_ids: Sequence[str] | None = None,
    *,
    keep_runners: Sequence[str] = (),
    unclaimed: bool = True,
) -> int:
    """Put runs left `running` (their server stopped mid-run) back in the queue, except those held
    by `keep_runners` (live processes), and those no runner claimed unless `unclaimed`."""
    where = Run.status == "running"
    if run_ids is not None:
        where = where & Run.id.in_(list(run_ids))
    if keep_runners:
        where = where & (Run.claimed_by.is_(None) | Run.claimed_by.not_in(list(keep_runners)))
    if not unclaimed:
        where = where & Run.claimed_by.is_not(None)
    return _set(session, where, **_REQUEUED)


def requeue_claim(session: Session, run_id: str, claim: str) -> bool:
    """Requeue one run if it is still running under `claim` (its computation was lost)."""
    return _set(session, _where_running(run_id, claim), **_REQUEUED) == 1


def set_progress(session: Session, progress: Mapping[str, float]) -> None:
    for run_id, value in progress.items():
        _set(session, _where_running(run_id, None), progress=min(1.0, max(0.0, value)))


# --- finishing ----------------------------------------------------------------------------------


def summary_stats(repeats: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per metric over the repeats that have it: `n`, `mean`, `stddev` (ddof 1; None below 2)."""
    values: dict[str, list[float]] = {}
    for repeat in repeats:
        for key, value in repeat["summary"].items():
            values.setdefault(key, []).append(float(value))
    return {
        key: {"n": len(v), "mean": statistics.fmean(v), "stddev": statistics.stdev(v) if len(v) > 1 else None}
        for key, v in values.items()
    }


def _mean_summary(single: Mapping[str, Any], stats: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The summary columns as the repeats' means (lists sort by them), each as its column stores it."""
    out = dict(single)
    for name in out:
        metric = Run.__table__.c[name].info["result"]
        mean = stats.get(metric.key, {}).get("mean")
        out[name] = None if mean is None else Run.__table__.c[name].type.python_type(mean)
    return out


def finished_fields(
    row: Mapping[str, Any],
    result_json: bytes,
    *,
    engine_version: str,
    wall_s: float,
    compile_s: float,
    reused_from: str | None = None,
    repeats: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Every column a run gets when it finishes, its page included (rendered from the run as it
    will read once done; `None` if rendering failed: the page is then rendered when asked for).
    A sweep's points are not prerendered: hundreds of pages few will open.

    `repeats`: every repeat's `{"seed", "summary"}` (repeat 0's result is `result_json`); without
    them (a run computed in place, a copy of a run made before repeats) the result is the one repeat."""
    if len(result_json) > MAX_RESULT_BYTES:
        raise ResultTooLarge(f"result of {len(result_json)} bytes over the limit of {MAX_RESULT_BYTES}")
    parsed = orjson.loads(result_json)
    if repeats is None:
        repeats = [{"seed": row["seed"], "summary": summary_figures(parsed)}]
    stats = summary_stats(repeats)
    fields: dict[str, Any] = {
        "status": "done",
        "progress": 1.0,
        "error": None,
        "engine_version": engine_version,
        "finished_at": utcnow(),
        "wall_s": wall_s,
        "compile_s": compile_s,
        "reused_from": reused_from,
        **_mean_summary(result_summary(parsed), stats),
        "result": result_json,
        "repeats": orjson.dumps(list(repeats)).decode(),
        "summary_stats": orjson.dumps(stats).decode(),
    }
    try:
        page = None if row.get("sweep_id") else service.render_page(service.run_view({**row, **fields}))
    except Exception:  # noqa: BLE001 - a template error must not stop a run finishing
        log.exception("rendering the page of run %s failed", row["id"])
        page = None
    if page is not None and len(page) > MAX_PAGE_BYTES:
        raise ResultTooLarge(f"page of {len(page)} bytes over the limit of {MAX_PAGE_BYTES}")
    return {**fields, "page": page, "page_version": web.render_version() if page else None}


def finish(
    factory: sessionmaker[Session],
    run_id: str,
    result_json: bytes,
    *,
    engine_version: str,
    wall_s: float,
    compile_s: float,
    reused_from: str | None = None,
    claim: str | None = None,
    repeats: Sequence[Mapping[str, Any]] | None = None,
) -> bool:
    """Record a running run as done (False if it is no longer running, or no longer under `claim`:
    deleted, finished, or requeued); `repeats` as `finished_fields` takes them."""
    with session_scope(factory) as session:
        row = store.get_row(session, run_id)
    if row is None:
        return False
    fields = finished_fields(
        row._mapping, result_json, engine_version=engine_version, wall_s=wall_s,
        compile_s=compile_s, reused_from=reused_from, repeats=repeats,
    )  # fmt: skip
    with session_scope(factory) as session:
        return _set(session, _where_running(run_id, claim), **fields) == 1


def rerender_stale_pages(factory: sessionmaker[Session], stop: threading.Event, pause_s: float = 1.0) -> int:
    """Store this render version's page for every finished run whose page is of another one (the
    templates, chart code or static files changed), one page at a time with a pause between: the
    lowest priority work of the process. Until then such a page is rendered when read, and kept in
    memory. Returns how many were stored."""
    version, done = web.render_version(), 0
    while not stop.is_set():
        with session_scope(factory) as session:
            ids = store.stale_pages(session, version, 1)
            row = store.get_row(session, ids[0]) if ids else None
        if row is None:
            return done
        try:
            page = service.render_page(service.run_view(row._mapping))
        except Exception:  # noqa: BLE001 - keep the old page; it is rendered on read
            log.exception("re-rendering the page of run %s failed", row.id)
            page = None
        with session_scope(factory) as session:
            where = (Run.id == row.id) & (Run.status == "done") & (Run.page_version != version)
            _set(
                session,
                where,
                **({"page": page, "page_version": version} if page else {"page_version": None}),
            )
        done += 1
        stop.wait(pause_s)
    return done
