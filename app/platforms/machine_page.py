"""The platform page's machine section: an imported machine's counter snapshot (residency share
per state, overall and per CPU, above/below ratios) beside a simulation on that table."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.runs import views as run_views


def _simulated(result: dict[str, Any]) -> dict[str, Any]:
    """A run's figures in the snapshot's terms: residency share and above/below ratios per state,
    and per CPU the share of each state."""
    states = {}
    for s in result["states"]:
        usage = s["usage"]
        states[s["name"]] = {
            "share": s["residency"],
            "above_ratio": s["above"] / usage if usage else None,
            "below_ratio": s["below"] / usage if usage else None,
        }
    names = result["per_cpu_state_names"]
    per_cpu = [dict(zip(names, row, strict=False)) for row in result["per_cpu_residency"]]
    return {"states": states, "per_cpu": per_cpu, "idle_share": 1.0 - result["busy_share"]}


def machine_context(session: Session, view: dict[str, Any], run_id: str | None) -> dict[str, Any]:
    """`machine` (the snapshot, or None) and `sim` (the run's status and, once done, its figures)."""
    if view.get("machine") is None:
        return {"machine": None, "sim": None}
    sim = None
    if run_id:
        run = run_views.load_run_view(session, run_id)
        sim = {"id": run_id, "status": run.status, "url": run_views.run_path(run_id)}
        if run.result is not None and run.result.get("platform") == view["name"]:
            sim.update(_simulated(run.result))
    return {"machine": view["machine"], "sim": sim}
