"""The validation table: each published figure of the source documents beside the simulated one.

`simulated` always comes from stored runs made by the current engine (`engine.engine_version()`,
which includes the numpy and numba versions): the runs of the scenarios that carry published
figures (`engine.scenarios.VALIDATION_SCENARIOS`) are looked up by config hash, and any missing
one is simulated here, synchronously, with the same `app.jobs.compute` the workers use, and
stored like any other run (listed, titled `<scenario>: <role>`, so it shows on /runs). They take
well under a second each once the engine is compiled; a lock keeps two requests from running the
same ones twice. Nothing in a row is a constant except the published figure and its tolerance.

Also the scenario-run lookups the scenario pages use (latest runs of a scenario's configs).

Command line (prints the table; creates the missing runs in the database first):

    python -m app.validation            # database from IDLELAB_DATABASE_URL (default ./idlelab.db)
    python -m app.validation --json     # the GET /api/validation body
    python -m app.validation --no-db    # simulate in memory, store nothing
    python -m app.validation --scenario rfc-review-irqs-off   # one scenario's key table and checks
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app import store
from app.db import session_scope
from app.models import Run, utcnow
from app.views import run_url
from engine import ENGINE_VERSION, SimConfig, engine_version
from engine.scenarios import (
    SCENARIOS,
    VALIDATION_SCENARIOS,
    Metric,
    Outcome,
    Scenario,
    evaluate,
)

_LOCK = threading.Lock()


def run_title(scenario: Scenario, role: str) -> str:
    """The title scenario and validation runs get (and that lists show)."""
    return f"{scenario.name}: {role}"


def compare_url(ids: Sequence[str], base_url: str = "") -> str:
    return f"{base_url.rstrip('/')}/compare?ids={','.join(ids)}"


@dataclass
class RunRef:
    """One scenario role's run as pages and rows need it."""

    role: str
    id: str
    status: str
    engine_version: str
    result_json: bytes | None = None
    error: str | None = None
    title: str = ""

    _parsed: dict[str, Any] | None = None

    @property
    def result(self) -> dict[str, Any] | None:
        if self._parsed is None and self.result_json is not None:
            self._parsed = orjson.loads(self.result_json)
        return self._parsed

    @property
    def done(self) -> bool:
        return self.status == "done" and self.result_json is not None

    def link(self, base_url: str = "") -> dict[str, Any]:
        return {"role": self.role, "id": self.id, "url": run_url(self.id, base_url), "status": self.status}


def _ref(role: str, run: Run) -> RunRef:
    return RunRef(
        role=role,
        id=run.id,
        status=run.status,
        engine_version=run.engine_version,
        result_json=run.result,
        error=run.error,
        title=run.title,
    )


# --- finding runs ---------------------------------------------------------------------------------


def find_done_run(session: Session, config: SimConfig, version: str) -> Run | None:
    """A finished run of exactly this config (hash) by engine `version`: the original if any."""
    return store.find_reusable(session, config.config_hash(), version)


def find_latest_run(session: Session, config: SimConfig, version: str) -> Run | None:
    """The newest finished run of this config by engine `version`; if there is none, the newest
    one still queued or running (queued runs carry the short `ENGINE_VERSION` until a worker
    finishes them)."""
    done = (
        select(Run)
        .where(Run.config_hash == config.config_hash(), Run.status == "done", Run.engine_version == version)
        .order_by(Run.created_at.desc(), Run.id)
        .limit(1)
    )
    found = session.scalars(done).first()
    if found is not None:
        return found
    pending = (
        select(Run)
        .where(
            Run.config_hash == config.config_hash(),
            Run.status.in_(("queued", "running")),
            Run.engine_version.in_((ENGINE_VERSION, version)),
        )
        .order_by(Run.created_at.desc(), Run.id)
        .limit(1)
    )
    return session.scalars(pending).first()


def latest_scenario_runs(
    session: Session, scenario: Scenario, version: str | None = None
) -> dict[str, RunRef]:
    """Per role, the newest run of the role's config for the current engine (roles without one
    are left out)."""
    version = version or engine_version()
    out: dict[str, RunRef] = {}
    for role, config in scenario.configs():
        run = find_latest_run(session, config, version)
        if run is not None:
            out[role] = _ref(role, run)
    return out


def scenario_runs_by_ids(session: Session, scenario: Scenario, ids: Sequence[str]) -> dict[str, RunRef]:
    """The given runs matched to the scenario's roles by config hash (ids that match none are
    ignored; for a role given twice the later id wins)."""
    by_hash = {cfg.config_hash(): role for role, cfg in scenario.configs()}
    out: dict[str, RunRef] = {}
    for rid in ids:
        run = store.get_run(session, rid)
        if run is not None and run.config_hash in by_hash:
            out[by_hash[run.config_hash]] = _ref(by_hash[run.config_hash], run)
    return out


# --- making runs here (validation) ----------------------------------------------------------------


def _run_here(factory: sessionmaker[Session], scenario: Scenario, role: str, config: SimConfig) -> RunRef:
    """Create a run, simulate it in this process with the workers' `compute`, store the result.

    The run is committed as `running` (never `queued`), so no worker claims it meanwhile.
    """
    from app.jobs import compute, one_line

    config_json = config.model_dump_json()
    with session_scope(factory) as session:
        new = store.create_run(
            session,
            config,
            title=run_title(scenario, role),
            config_json=config_json,
            config_hash=config.config_hash(),
        )
        new.run.status = "running"
        new.run.started_at = utcnow()
        run_id = new.run.id
    t0 = time.perf_counter()
    try:
        result_json, summary, version = compute(config_json, lambda _f: None)
    except Exception as exc:
        with session_scope(factory) as session:
            store.fail_run(session, run_id, one_line(exc), wall_s=time.perf_counter() - t0)
        raise
    with session_scope(factory) as session:
        store.finish_run(
            session,
            run_id,
            result_json=result_json,
            summary=summary,
            engine_version=version,
            wall_s=time.perf_counter() - t0,
            compile_s=0.0,
        )
    return RunRef(role, run_id, "done", version, result_json, title=run_title(scenario, role))


def ensure_runs(
    factory: sessionmaker[Session],
    names: Sequence[str] = VALIDATION_SCENARIOS,
    say: Callable[[str], None] | None = None,
) -> dict[str, dict[str, RunRef]]:
    """Finished runs of every role of the named scenarios by the current engine, simulating and
    storing the missing ones (`say` hears about each). Blocking (call it from a thread in async code)."""
    version = engine_version()
    with _LOCK:
        out: dict[str, dict[str, RunRef]] = {}
        for name in names:
            scenario = SCENARIOS[name]
            runs: dict[str, RunRef] = {}
            for role, config in scenario.configs():
                with session_scope(factory) as session:
                    run = find_done_run(session, config, version)
                    ref = _ref(role, run) if run is not None else None
                if ref is None:
                    with _announced(say, scenario, role):
                        ref = _run_here(factory, scenario, role, config)
                runs[role] = ref
            out[name] = runs
        return out


def simulate_in_memory(
    names: Sequence[str] = VALIDATION_SCENARIOS, say: Callable[[str], None] | None = None
) -> dict[str, dict[str, RunRef]]:
    """The same runs without a database (the `--no-db` command line)."""
    from engine import simulate

    out: dict[str, dict[str, RunRef]] = {}
    for name in names:
        scenario = SCENARIOS[name]
        out[name] = {}
        for role, config in scenario.configs():
            with _announced(say, scenario, role):
                result = simulate(config)
            out[name][role] = RunRef(
                role, "", "done", result.engine_version, result.model_dump_json().encode()
            )
    return out


@contextmanager
def _announced(say: Callable[[str], None] | None, scenario: Scenario, role: str) -> Iterator[None]:
    """Tell `say` that a run starts and how long it took (the first one compiles the engine)."""
    if say is not None:
        say(f"simulating {run_title(scenario, role)} ...")
    t0 = time.perf_counter()
    yield
    if say is not None:
        say(f"  done in {time.perf_counter() - t0:.1f} s")


# --- the table ------------------------------------------------------------------------------------


def outcome_row(
    scenario: Scenario, outcome: Outcome, runs: Mapping[str, RunRef], base_url: str = ""
) -> dict[str, Any]:
    """One check as a validation row (also used for the scenario pages' check tables)."""
    c = outcome.check
    used = [runs[r] for r in c.roles() if r in runs]
    ids = [r.id for r in used if r.id]
    return {
        "id": c.id,
        "scenario": scenario.name,
        "source": c.source,
        "metric": c.metric,
        "unit": c.unit,
        "published": c.published_value,
        "published_text": c.published_text,
        "simulated": outcome.simulated,
        "tolerance": c.tolerance,
        "accept": list(c.accept),
        "ok": outcome.ok,
        "kind": c.kind,
        "source_figure": c.published,
        "note": c.note,
        "baseline_role": c.baseline,
        "baseline_value": outcome.baseline_value,
        "role": c.role,
        "role_value": outcome.role_value,
        "value_unit": c.metric_ref.unit,
        "runs": [r.link(base_url) for r in used if r.id],
        "run_ids": ids,
        "comparison_url": compare_url(ids, base_url) if len(ids) >= 2 else None,
    }


def pending_row(
    scenario: Scenario, check: Any, runs: Mapping[str, RunRef], base_url: str = ""
) -> dict[str, Any]:
    """A check whose runs are not all finished: no simulated value, not ok."""
    used = [runs[r] for r in check.roles() if r in runs]
    return {
        "id": check.id,
        "scenario": scenario.name,
        "source": check.source,
        "metric": check.metric,
        "unit": check.unit,
        "published": check.published_value,
        "published_text": check.published_text,
        "simulated": None,
        "tolerance": check.tolerance,
        "accept": list(check.accept),
        "ok": False,
        "kind": check.kind,
        "source_figure": check.published,
        "note": check.note,
        "baseline_role": check.baseline,
        "baseline_value": None,
        "role": check.role,
        "role_value": None,
        "value_unit": check.metric_ref.unit,
        "runs": [r.link(base_url) for r in used if r.id],
        "run_ids": [r.id for r in used if r.id],
        "comparison_url": None,
    }


def check_rows(
    scenario: Scenario, runs: Mapping[str, RunRef], base_url: str = "", *, published_only: bool = False
) -> list[dict[str, Any]]:
    """Rows for the scenario's checks; checks whose runs are not done are pending rows."""
    done = {role: r.result for role, r in runs.items() if r.done}
    outcomes = {o.check.id: o for o in evaluate(scenario, done)}  # type: ignore[arg-type]
    rows = []
    for check in scenario.checks:
        if published_only and not check.published:
            continue
        o = outcomes.get(check.id)
        rows.append(
            outcome_row(scenario, o, runs, base_url) if o else pending_row(scenario, check, runs, base_url)
        )
    return rows


def report(runs_by_scenario: Mapping[str, Mapping[str, RunRef]], base_url: str = "") -> dict[str, Any]:
    """The `GET /api/validation` body."""
    rows: list[dict[str, Any]] = []
    scenarios = []
    for name in VALIDATION_SCENARIOS:
        scenario = SCENARIOS[name]
        runs = runs_by_scenario.get(name, {})
        rows += check_rows(scenario, runs, base_url, published_only=True)
        ids = [runs[r].id for r in scenario.role_names() if r in runs and runs[r].id]
        scenarios.append(
            {
                "name": name,
                "title": scenario.title,
                "url": f"{base_url.rstrip('/')}/scenarios/{name}",
                "runs": [runs[r].link(base_url) for r in scenario.role_names() if r in runs and runs[r].id],
                "comparison_url": compare_url(ids, base_url) if len(ids) >= 2 else None,
            }
        )
    return {
        "engine_version": engine_version(),
        "all_ok": all(r["ok"] for r in rows),
        "calibrated": sum(r["kind"] == "calibrated" for r in rows),
        "predicted": sum(r["kind"] == "predicted" for r in rows),
        "rows": rows,
        "scenarios": scenarios,
    }


def validation_report(factory: sessionmaker[Session], base_url: str = "") -> dict[str, Any]:
    """Ensure the runs exist for the current engine, then build the table. Blocking."""
    return report(ensure_runs(factory), base_url)


# --- the scenario pages' tables ------------------------------------------------------------------


def _fmt(value: float | None, metric: Metric) -> str:
    if value is None:
        return "–"
    if metric.unit == "ns":
        return f"{value / 1000:,.2f} us"
    if metric.digits:
        return f"{value:,.{metric.digits}f}{' %' if metric.unit == '%' else ''}"
    return f"{value:,.0f}"


def key_table(scenario: Scenario, runs: Mapping[str, RunRef]) -> dict[str, Any] | None:
    """The scenario's key table with formatted values (blank cells for runs not done)."""
    kt = scenario.key_table
    if kt is None:
        return None
    rows = []
    for label, cells in kt.rows:
        values = []
        for role, metric in zip(cells, kt.metric_by_col, strict=True):
            ref = runs.get(role) if role else None
            v = metric.read(ref.result) if ref is not None and ref.done and ref.result else None
            values.append({"role": role, "value": v, "text": _fmt(v, metric), "run": ref.id if ref else None})
        rows.append({"label": label, "cells": values})
    return {"title": kt.title, "columns": list(kt.columns), "rows": rows, "note": kt.note}


def metrics_table(scenario: Scenario, runs: Mapping[str, RunRef]) -> list[dict[str, Any]]:
    out = []
    for m in scenario.metrics:
        cells = []
        for role in scenario.role_names():
            ref = runs.get(role)
            v = m.read(ref.result) if ref is not None and ref.done and ref.result else None
            cells.append(_fmt(v, m))
        out.append({"label": m.label, "unit": "us" if m.unit == "ns" else m.unit, "cells": cells})
    return out


# --- formatting (command line and page) -----------------------------------------------------------


def fmt_value(value: Any, unit: str = "", *, signed: bool = True) -> str:
    """A published or simulated figure as text: ranges as `a..b`, changes (% and pp) signed."""
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        return "..".join(fmt_value(v, unit, signed=signed) for v in value)
    v = float(value)
    if unit in ("%", "pp"):
        return f"{v:+.2f}" if signed else f"{v:.2f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _interval(accept: Sequence[float | None], unit: str) -> str:
    lo, hi = accept
    if lo is not None and hi is not None:
        return f"[{fmt_value(lo, unit)}, {fmt_value(hi, unit)}]"
    if lo is not None:
        return "> 0" if 0 < lo < 1e-6 else f">= {fmt_value(lo, unit)}"
    return f"<= {fmt_value(hi, unit)}"


def text_table(body: Mapping[str, Any]) -> str:
    """The validation rows as a plain-text table (the command line's output)."""
    lines = [f"engine {body['engine_version']}"]
    header = ("", "kind", "figure", "published", "simulated", "unit", "accepted", "runs")
    rows = [header]
    for r in body["rows"]:
        published = r["published_text"] if r["published"] is None else fmt_value(r["published"], r["unit"])
        rows.append(
            (
                "ok" if r["ok"] else "FAIL",
                r["kind"],
                r["id"],
                _short(published, 24),
                fmt_value(r["simulated"], r["unit"]),
                r["unit"],
                _interval(r["accept"], r["unit"]),
                ",".join(r["run_ids"]) or "-",
            )
        )
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header))]
    for row in rows:
        lines.append("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    n_ok = sum(r["ok"] for r in body["rows"])
    lines.append(f"{n_ok}/{len(body['rows'])} within tolerance")
    return "\n".join(lines)


def scenario_text(scenario: Scenario, runs: Mapping[str, RunRef]) -> str:
    """A scenario's key table and checks as plain text (`--scenario NAME`)."""
    lines = [f"{scenario.name}: {scenario.title}"]
    for role in scenario.roles:
        ref = runs.get(role.name)
        lines.append(f"  {role.name:<14} {(ref.id if ref and ref.id else '-'):<12} {role.label}")
    kt = key_table(scenario, runs)
    if kt is not None:
        cells = [["", *kt["columns"]]] + [
            [row["label"], *(c["text"] for c in row["cells"])] for row in kt["rows"]
        ]
        widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
        lines += ["", kt["title"]]
        for r in cells:
            lines.append(
                "  "
                + "  ".join(
                    c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
                )
            )
    lines.append("")
    for row in check_rows(scenario, runs):
        sim = fmt_value(row["simulated"], row["unit"], signed=row["baseline_role"] is not None)
        verdict = "ok  " if row["ok"] else "FAIL"
        lines.append(f"  {verdict} {sim:>10} {row['unit']:<8} {row['metric']} ({row['tolerance']})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.validation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the GET /api/validation body")
    parser.add_argument(
        "--scenario", metavar="NAME", choices=list(SCENARIOS), help="run one scenario, print its checks"
    )
    parser.add_argument("--no-db", action="store_true", help="simulate in memory; store nothing")
    parser.add_argument("--database-url", default=None, help="default: IDLELAB_DATABASE_URL or ./idlelab.db")
    parser.add_argument("--base-url", default="", help="prefix for run links (default: relative links)")
    args = parser.parse_args(argv)
    names = [args.scenario] if args.scenario else list(VALIDATION_SCENARIOS)

    # Progress on stderr, so that --json output stays clean; the first run may compile the engine
    # (~20 s on a fresh 2-core machine).
    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    if args.no_db:
        runs = simulate_in_memory(names, say)
    else:
        from app.config import get_settings
        from app.db import make_db_engine, make_sessionmaker, upgrade_db

        url = args.database_url or get_settings().database_url
        upgrade_db(url)
        db_engine = make_db_engine(url)
        try:
            runs = ensure_runs(make_sessionmaker(db_engine), names, say)
        finally:
            db_engine.dispose()
    if args.scenario:
        scenario = SCENARIOS[args.scenario]
        rows = check_rows(scenario, runs[args.scenario], args.base_url)
        if args.json:
            sys.stdout.write(
                orjson.dumps({"scenario": scenario.name, "checks": rows}, option=orjson.OPT_INDENT_2).decode()
                + "\n"
            )
        else:
            print(scenario_text(scenario, runs[args.scenario]))
        return 0 if all(r["ok"] for r in rows) else 1
    body = report(runs, args.base_url)
    if args.json:
        sys.stdout.write(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(text_table(body))
    return 0 if body["all_ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
