"""The kernel a run's governor followed, named and linked to its tree, and what changed between
kernels read step by step: what a sweep over `governor.kernel` (app.sweeps.kernels) and a compare
of runs that differ only in it (app.compare.kernels) both show.

A step is a later kernel against the one before it, per figure: percentage points for shares and
ratios, percent otherwise. The step marked largest is the one whose largest change, measured in
the figure's practical threshold (the registry's, 1% or 0.5 pp by default), is the largest. Each
step lists the commits between its two kernels (engine.governors.releases' history), each linked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine import metrics
from engine.governors import releases

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


def kernel(governor: str, name: Any) -> dict[str, Any]:
    """`{name, description, link}` of the kernel `name` (None: the default) as the engine resolves it."""
    try:
        resolved = releases.resolve(governor, name)
    except ValueError:  # a run stored by an older engine that knew this name: show it as given
        return {"name": name, "description": "", "link": None}
    return {
        "name": resolved.name or name,
        "description": resolved.description,
        "link": kernel_link(governor, resolved.name),
    }


def history_position(governor: str, name: Any) -> float:
    """The kernel's place in the merged history (a name the engine no longer knows goes last)."""
    try:
        return releases.history_position(governor, name)
    except ValueError:
        return float("inf")


def _commit(step: releases.Step) -> dict[str, Any]:
    return {
        "commit": step.commit, "subject": step.subject, "release": step.release,
        "link": None if step.commit is None else kernel_link("", step.commit),
        "changes_behaviour": bool(step.changes), "note": step.note,
    }  # fmt: skip


def commits_between(governor: str, before: Any, after: Any) -> dict[str, list[dict[str, Any]]]:
    """The governor's and the core's commits between two kernels: `added` (in `after` only) and
    `absent` (in `before` only), each `{commit, subject, release, link, changes_behaviour, note}`;
    a commit known only by its release has `commit` and `link` null."""
    try:
        added, absent = releases.steps_between(governor, before, after)
    except ValueError:
        return {"added": [], "absent": []}
    return {"added": [_commit(s) for s in added], "absent": [_commit(s) for s in absent]}


def figures(state_names: Sequence[str]) -> list[metrics.Metric]:
    """The figures a kernel step is read on, from the metric registry where it has them."""
    out: list[metrics.Metric] = []
    for name in state_names:
        residency, usage, _ = metrics.state_metrics(name)
        out += [residency, usage, *metrics.state_ratio_metrics(name)]
    return out + [metrics.get(k) for k in (*_WAKE_STATS, *_TOTALS)]


def state_names(results: Sequence[Mapping[str, Any] | None]) -> list[str]:
    names: list[str] = []
    for r in results:
        names += [s["name"] for s in (r or {}).get("states", []) if s["name"] not in names]
    return names


def change(m: metrics.Metric, before: float | None, after: float | None) -> float | None:
    """`after` against `before`: percentage points for a share, else percent (None from a zero)."""
    if before is None or after is None:
        return None
    if m.unit_kind == "pp":
        return (after - before) * 100.0
    return None if before == 0 else (after - before) / abs(before) * 100.0


Value = Callable[[metrics.Metric, int], float | None]


def read_steps(
    governor: str, kernels: Sequence[Mapping[str, Any]], states: Sequence[str], value: Value
) -> dict[str, Any]:
    """Figures per kernel (`kernels` in history order; `value(metric, i)` is kernel i's figure, None
    while unknown), each step's change, the commits of each step and the largest step:
    `{figures, steps, largest_step}`."""
    rows: list[dict[str, Any]] = []
    for m in figures(states):
        values = [value(m, i) for i in range(len(kernels))]
        rows.append({
            "key": m.key, "label": m.label, "unit": m.unit, "change_unit": m.unit_kind,
            "threshold": m.practical_threshold, "values": values,
            "changes": [None] + [change(m, a, b) for a, b in zip(values, values[1:], strict=False)],
        })  # fmt: skip
    steps = []
    for i in range(1, len(kernels)):
        scored = [
            (abs(row["changes"][i]) / row["threshold"], row) for row in rows if row["changes"][i] is not None
        ]
        score, row = max(scored, key=lambda sr: sr[0], default=(None, None))
        before, after = kernels[i - 1]["name"], kernels[i]["name"]
        steps.append({
            "from": before, "to": after, "link": kernels[i]["link"], "score": score,
            "figure": None if row is None else row["key"],
            "change": None if row is None else row["changes"][i],
            "commits": commits_between(governor, before, after),
        })  # fmt: skip
    scores = [s["score"] for s in steps if s["score"] is not None]
    largest = next(i for i, s in enumerate(steps) if s["score"] == max(scores)) if scores else None
    return {"figures": rows, "steps": steps, "largest_step": largest}
