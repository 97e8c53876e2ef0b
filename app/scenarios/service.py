"""Loaders shared by the scenario and validation pages and their JSON twins: a scenario's runs
(the latest listed ones for the current engine, or given ids), its checks evaluated on them, and
the validation table (each published figure beside the simulated one). Reading never creates
runs: `submit` (behind a POST) queues the missing ones."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import orjson
from sqlalchemy.orm import Session

from app.core.errors import NotFound
from app.core.models import ACTIVE, Run
from app.runs.lifecycle import RunSpec, Submitter
from app.runs.service import run_path
from app.scenarios import store
from engine import ENGINE_VERSION, engine_version
from engine.metrics import Metric
from engine.scenarios import (
    SCENARIOS,
    VALIDATION_SCENARIOS,
    Check,
    Outcome,
    Scenario,
    evaluate,
    stated,
    stated_unit,
)


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise NotFound(
            f"scenario {name!r} not found; built-in scenarios are {', '.join(SCENARIOS)}"
        ) from None


def scenario_item(scenario: Scenario) -> dict[str, Any]:
    """A scenario as `GET /api/scenarios` lists it."""
    return {
        "name": scenario.name,
        "title": scenario.title,
        "description": scenario.description,
        "source": scenario.source,
        "roles": [{"name": r.name, "label": r.label} for r in scenario.roles],
        "checks": [check_fields(c) for c in scenario.checks],
        "url": f"/scenarios/{scenario.name}",
        "run_url": f"/api/scenarios/{scenario.name}/run",
    }


def check_fields(check: Check) -> dict[str, Any]:
    """What a check is, before any run: the figure, how it is compared, what it accepts."""
    return {
        "id": check.id,
        "metric": check.metric,
        "unit": check.unit,
        "mode": check.mode,
        "baseline": check.baseline,
        "role": check.role,
        "published": check.published_value,
        "published_text": check.published_text,
        "accept": list(check.accept),
        "tolerance": check.tolerance,
        "kind": check.kind,
        "source_figure": check.published,
        # For a consistency check: over which range of each labelled estimate it still holds.
        "sensitivity": [dataclasses.asdict(s) for s in check.sensitivity],
    }


def list_scenarios() -> list[dict[str, Any]]:
    return [scenario_item(s) for s in SCENARIOS.values()]


def run_title(scenario: Scenario, role: str) -> str:
    """The title scenario and validation runs get (and that lists show)."""
    return f"{scenario.name}: {role}"


def compare_url(ids: Sequence[str]) -> str | None:
    return f"/compare?ids={','.join(ids)}" if len(ids) >= 2 else None


@dataclass
class RunRef:
    """One scenario role's run as pages and rows need it."""

    role: str
    id: str
    status: str
    result_json: bytes | None = None
    error: str | None = None

    @cached_property
    def result(self) -> dict[str, Any] | None:
        return None if self.result_json is None else orjson.loads(self.result_json)

    @property
    def done(self) -> bool:
        return self.status == "done" and self.result_json is not None

    def link(self) -> dict[str, Any]:
        return {"role": self.role, "id": self.id, "url": run_path(self.id), "status": self.status}


def _ref(role: str, run: Run) -> RunRef:
    return RunRef(role, run.id, run.status, run.result, run.error)


def latest_runs(session: Session, scenario: Scenario) -> dict[str, RunRef]:
    """Per role, the newest listed run of the role's config for the current engine (roles
    without one are left out)."""
    versions = [ENGINE_VERSION, engine_version()]
    out: dict[str, RunRef] = {}
    for role, config in scenario.configs():
        run = store.latest_of_config(session, config.config_hash(), versions)
        if run is not None:
            out[role] = _ref(role, run)
    return out


def runs_by_ids(session: Session, scenario: Scenario, ids: Sequence[str]) -> dict[str, RunRef]:
    """The given runs matched to the scenario's roles by config hash (ids that match none are
    ignored; for a role given twice the later id wins)."""
    by_hash = {cfg.config_hash(): role for role, cfg in scenario.configs()}
    found = {run.id: run for run in store.runs_by_ids(session, ids)}
    out: dict[str, RunRef] = {}
    for rid in ids:
        run = found.get(rid)
        if run is not None and run.config_hash in by_hash:
            out[by_hash[run.config_hash]] = _ref(by_hash[run.config_hash], run)
    return out


def submit(
    submitter: Submitter,
    scenario: Scenario,
    *,
    unlisted: bool = False,
    existing: Mapping[str, RunRef] | None = None,
) -> list[dict[str, Any]]:
    """Queue one run per role (roles in `existing` skipped); returns
    `{"id", "role", "url", "status", "delete_token", "reused_from"}` each."""
    roles = [(role, config) for role, config in scenario.configs() if role not in (existing or {})]
    specs = [RunSpec(config, run_title(scenario, role), unlisted) for role, config in roles]
    return [
        {**sub.answer(run_path(sub.id)), "role": role}
        for (role, _), sub in zip(roles, submitter(specs), strict=True)
    ]


# --- checks and the validation table -------------------------------------------------------------


def check_row(
    scenario: Scenario, check: Check, outcome: Outcome | None, runs: Mapping[str, RunRef]
) -> dict[str, Any]:
    """One check as a row; without an outcome (its runs not all done) it has no simulated value."""
    used = [runs[r] for r in check.roles() if r in runs]
    ids = [r.id for r in used]
    return {
        **check_fields(check),
        "scenario": scenario.name,
        "source": check.source,
        "note": check.note,
        "simulated": outcome.simulated if outcome else None,
        "ok": outcome.ok if outcome else False,
        "baseline_role": check.baseline,
        "baseline_value": outcome.baseline_value if outcome else None,
        "role_value": outcome.role_value if outcome else None,
        "value_unit": stated_unit(check.metric_ref),
        "runs": [r.link() for r in used],
        "run_ids": ids,
        "comparison_url": compare_url(ids) if outcome else None,
    }


def check_rows(
    scenario: Scenario, runs: Mapping[str, RunRef], *, published_only: bool = False
) -> list[dict[str, Any]]:
    done = {role: r.result for role, r in runs.items() if r.done}
    outcomes = {o.check.id: o for o in evaluate(scenario, done)}  # type: ignore[arg-type]
    return [
        check_row(scenario, check, outcomes.get(check.id), runs)
        for check in scenario.checks
        if check.published or not published_only
    ]


def validation_report(session: Session) -> dict[str, Any]:
    """The `GET /api/validation` body, from the runs that exist (`missing` counts the roles that
    have none: `POST /api/validation/run` makes them)."""
    rows: list[dict[str, Any]] = []
    scenarios = []
    missing = 0
    for name in VALIDATION_SCENARIOS:
        scenario = SCENARIOS[name]
        runs = latest_runs(session, scenario)
        missing += len(scenario.roles) - len(runs)
        rows += check_rows(scenario, runs, published_only=True)
        ids = [runs[r].id for r in scenario.role_names() if r in runs]
        scenarios.append(
            {
                "name": name,
                "title": scenario.title,
                "url": f"/scenarios/{name}",
                "runs": [runs[r].link() for r in scenario.role_names() if r in runs],
                "comparison_url": compare_url(ids),
            }
        )
    return {
        "engine_version": engine_version(),
        "all_ok": all(r["ok"] for r in rows),
        "calibrated": sum(r["kind"] == "calibrated" for r in rows),
        "predicted": sum(r["kind"] == "predicted" for r in rows),
        "consistency": sum(r["kind"] == "consistency" for r in rows),
        "missing": missing,
        "pending": any(r["status"] in ACTIVE for s in scenarios for r in s["runs"]),
        "rows": rows,
        "scenarios": scenarios,
    }


def submit_missing(session: Session, submitter: Submitter) -> list[dict[str, Any]]:
    """Submit the validation runs the current engine has none of (nor any queued or running)."""
    out = []
    for name in VALIDATION_SCENARIOS:
        scenario = SCENARIOS[name]
        out += submit(submitter, scenario, existing=latest_runs(session, scenario))
    return out


# --- the scenario pages' tables ------------------------------------------------------------------


def _fmt(value: float | None, metric: Metric) -> str:
    """A stated figure (`stated`) for the scenario's tables: latencies in us, percentages and watts
    to two decimals, counts and cycles whole."""
    if value is None:
        return "–"
    unit = stated_unit(metric)
    if unit == "ns":
        return f"{value / 1000:,.2f} us"
    if unit in ("%", "W"):
        return f"{value:,.2f}{' %' if unit == '%' else ''}"
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
            v = stated(metric, ref.result) if ref is not None and ref.done and ref.result else None
            values.append({"role": role, "value": v, "text": _fmt(v, metric), "run": ref.id if ref else None})
        rows.append({"label": label, "cells": values})
    return {"title": kt.title, "columns": list(kt.columns), "rows": rows, "note": kt.note}


def metrics_table(scenario: Scenario, runs: Mapping[str, RunRef]) -> list[dict[str, Any]]:
    out = []
    for m in scenario.metrics:
        cells = []
        for role in scenario.role_names():
            ref = runs.get(role)
            v = stated(m, ref.result) if ref is not None and ref.done and ref.result else None
            cells.append(_fmt(v, m))
        unit = stated_unit(m)
        out.append({"label": m.label, "unit": "us" if unit == "ns" else unit, "cells": cells})
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
