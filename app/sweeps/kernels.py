"""What changed between kernels: a sweep with a `governor.kernel` axis read step by step.

For every combination of the other axes (a governor, a rate...), the points in the axis's order:
per C-state the time share, the entries and the above and below ratios, WakeLatency percentiles
and energy, each step's change (percentage points for shares and ratios, percent otherwise), and
the step whose largest change, measured in the figure's practical threshold, is the largest of
its row. Each kernel is named as the engine resolved it and linked to its tree, and each step lists
the commits between its kernels (app.runs.kernels, shared with the compare's kernel axis).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from app.core.errors import NotFound
from app.runs import kernels
from app.runs import store as run_store
from app.runs.service import run_view
from app.sweeps import service

KERNEL_AXIS = "governor.kernel"


def _group(points: list[dict[str, Any]], results: Mapping[str, Any], governor_of: Any) -> dict[str, Any]:
    """One row of kernels (the points of one combination of the other axes, in axis order)."""
    done = [results.get(p["run_id"]) for p in points]
    read = kernels.read_steps(
        governor_of, [p["kernel"] for p in points], kernels.state_names(done),
        lambda m, i: None if done[i] is None else m.value(done[i]),
    )  # fmt: skip
    return {"governor": governor_of, "values": points[0].get("values", {}), "points": points, **read}


def kernel_steps(session: Session, sweep_id: str) -> dict[str, Any]:
    """`GET /api/sweeps/{id}/kernels` and its page. `NotFound` when the sweep has no kernel axis."""
    view = service.sweep_view(session, sweep_id)
    paths = [a["path"] for a in view["axes"]]
    if KERNEL_AXIS not in paths:
        raise NotFound(f"sweep {sweep_id!r} has no {KERNEL_AXIS} axis")
    order = {v: i for i, v in enumerate(view["axes"][paths.index(KERNEL_AXIS)]["values"])}
    others = [p for p in paths if p != KERNEL_AXIS]
    base_governor = (view["base"].get("governor") or {}).get("name", "menu")
    rows = run_store.get_rows(session, [p["run_id"] for p in view["points"]])
    results = {rid: v.result for rid, row in rows.items() if (v := run_view(row._mapping)).status == "done"}
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for p in view["points"]:
        key = tuple(repr(p["values"][o]) for o in others)
        governor = p["values"].get("governor.name", base_governor)
        groups.setdefault(key, []).append({
            "run_id": p["run_id"], "url": p["url"], "status": p["status"],
            "values": {o: p["values"][o] for o in others},
            "kernel": kernels.kernel(governor, p["values"][KERNEL_AXIS]),
            "_order": order[p["values"][KERNEL_AXIS]], "_governor": governor,
        })  # fmt: skip
    out = []
    for points in groups.values():
        points.sort(key=lambda p: p["_order"])
        governor = points[0]["_governor"]
        for p in points:
            del p["_order"], p["_governor"]
        out.append(_group(points, results, governor))
    return {
        "id": view["id"], "url": view["url"], "title": view["title"], "status": view["status"],
        "axis": KERNEL_AXIS, "other_axes": others, "groups": out,
    }  # fmt: skip
