"""What changed between kernels: a sweep with a `governor.kernel` axis read step by step.

For every combination of the other axes (a governor, a rate...), the points in the axis's order:
per C-state the time share, the entries and the above and below ratios, WakeLatency percentiles
and energy, each step's change (percentage points for shares and ratios, percent otherwise), and
the step whose largest change, measured in the figure's practical threshold, is the largest of
its row. Each kernel is named as the engine resolved it and linked to its tree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from app.core.errors import NotFound
from app.runs import store as run_store
from app.runs.service import run_view
from app.sweeps import service
from engine import metrics
from engine.governors import releases

KERNEL_AXIS = "governor.kernel"
_TREES = {
    "mainline": "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git",
    "stable": "https://git.kernel.org/pub/scm/linux/kernel/git/stable/linux.git",
}
_WAKE_STATS = ("latency.wake.p50_ns", "latency.wake.p90_ns", "latency.wake.p99_ns", "latency.wake.p999_ns")
_TOTALS = ("energy.joules", "wakeups")


def kernel_link(governor: str, name: str) -> str | None:
    """The tree a kernel name is read from: a mainline tag or commit, a stable tag; None for a
    commit that was posted but never merged (nothing to link but its thread)."""
    if name in releases.STABLE:
        return f"{_TREES['stable']}/tag/?h={name}"
    if name.startswith("v"):
        return f"{_TREES['mainline']}/tag/?h={name}"
    if name in releases.SIDE_COMMITS or not name:
        return None
    return f"{_TREES['mainline']}/commit/?id={name}"


def _kernel(governor: str, name: Any) -> dict[str, Any]:
    try:
        resolved = releases.resolve(governor, name)
    except ValueError:  # a run stored by an older engine that knew this name: show it as given
        return {"name": name, "description": "", "link": None}
    return {
        "name": resolved.name or name,
        "description": resolved.description,
        "link": kernel_link(governor, resolved.name),
    }


def figures(state_names: Sequence[str]) -> list[metrics.Metric]:
    """The figures a kernel step is read on, from the metric registry where it has them."""
    out: list[metrics.Metric] = []
    for name in state_names:
        residency, usage, _ = metrics.state_metrics(name)
        out += [residency, usage, *metrics.state_ratio_metrics(name)]
    return out + [metrics.get(k) for k in (*_WAKE_STATS, *_TOTALS)]


def _change(m: metrics.Metric, before: float | None, after: float | None) -> float | None:
    if before is None or after is None:
        return None
    if m.unit_kind == "pp":
        return (after - before) * 100.0
    return None if before == 0 else (after - before) / abs(before) * 100.0


def _group(points: list[dict[str, Any]], results: Mapping[str, Any], governor_of: Any) -> dict[str, Any]:
    """One row of kernels (the points of one combination of the other axes, in axis order)."""
    done = [results.get(p["run_id"]) for p in points]
    names: list[str] = []
    for r in done:
        names += [s["name"] for s in (r or {}).get("states", []) if s["name"] not in names]
    rows = []
    for m in figures(names):
        values = [None if r is None else m.value(r) for r in done]
        rows.append({
            "key": m.key, "label": m.label, "unit": m.unit, "change_unit": m.unit_kind,
            "threshold": m.practical_threshold, "values": values,
            "changes": [None] + [_change(m, a, b) for a, b in zip(values, values[1:], strict=False)],
        })  # fmt: skip
    steps = []
    for i in range(1, len(points)):
        scored = [
            (abs(row["changes"][i]) / row["threshold"], row) for row in rows if row["changes"][i] is not None
        ]
        score, row = max(scored, key=lambda sr: sr[0], default=(None, None))
        steps.append({
            "from": points[i - 1]["kernel"]["name"], "to": points[i]["kernel"]["name"],
            "link": points[i]["kernel"]["link"], "score": score,
            "figure": None if row is None else row["key"],
            "change": None if row is None else row["changes"][i],
        })  # fmt: skip
    scores = [s["score"] for s in steps if s["score"] is not None]
    largest = next(i for i, s in enumerate(steps) if s["score"] == max(scores)) if scores else None
    return {
        "governor": governor_of, "values": points[0].get("values", {}), "points": points,
        "figures": rows, "steps": steps, "largest_step": largest,
    }  # fmt: skip


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
            "kernel": _kernel(governor, p["values"][KERNEL_AXIS]),
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
