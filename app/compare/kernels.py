"""A compare's version axis: runs that differ in `governor.kernel` and in nothing else.

Their kernels are put in the order of the merged history (engine.governors.releases: a commit
before the tag that has it last, a stable release or a posted commit just after its base), each
linked to its tree, and read step by step as a sweep over `governor.kernel` is
(app.runs.kernels, shared with app.sweeps.kernels): per figure each kernel's value and each
step's change, the step with the largest change marked, and each step's commits linked. The
statistics of the compare itself keep the order the ids were given (against the first run).

A figure's value is the mean over the run's repeats where every repeat kept it (the repeats keep
the registry's summary figures), else the stored result's (repeat 0): the above and below ratios.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from app.core import dotted
from app.runs import kernels as steps
from app.runs.service import RunView
from engine import metrics

KERNEL = "governor.kernel"


class KernelOfRun(BaseModel):
    run: str
    label: str = Field(description="The run's letter in the compare (A is the first id given).")
    name: str = Field(description="The kernel as the engine resolved it (a tag, a stable release, a commit).")
    description: str
    link: str | None = Field(description="Its tree on git.kernel.org (a tag or a commit); null: only posted.")


class KernelAxis(BaseModel):
    """The runs in history order, read step by step (present only when the runs differ in
    `governor.kernel` and otherwise match)."""

    governor: str
    kernels: list[KernelOfRun] = Field(description="In the merged history's order.")
    figures: list[dict[str, Any]] = Field(
        description="`{key, label, unit, change_unit, threshold, values, changes}`, values per kernel in "
        "history order, `changes[i]` kernel i against kernel i-1 in `change_unit`."
    )
    steps: list[dict[str, Any]] = Field(
        description="`{from, to, link, score, figure, change, commits: {added, absent}}`: the figure "
        "that changed the most (in practical thresholds) and the governor's and core's commits between."
    )
    largest_step: int | None = Field(description="Index into `steps` of the largest change; null: unknown.")


def _workload(config: Mapping[str, Any]) -> str:
    """The config with its kernel left out (and unset fields as absent), for 'otherwise match'."""
    return repr(sorted(kv for kv in _flatten(config) if kv[0] != KERNEL + "."))


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, Mapping):
        return [kv for k, v in value.items() if v is not None for kv in _flatten(v, f"{prefix}{k}.")]
    return [(prefix, repr(value))]


def _value(view: RunView, result: Mapping[str, Any] | None, m: metrics.Metric) -> float | None:
    repeats = view.repeats or []
    kept = [r["summary"].get(m.key) for r in repeats]
    if kept and all(v is not None for v in kept):
        return sum(float(v) for v in kept) / len(kept)
    return None if result is None else m.value(result)


def kernel_axis(views: Sequence[RunView], results: Sequence[Mapping[str, Any] | None]) -> KernelAxis | None:
    """The version axis of these runs, or None when they do not differ only in `governor.kernel`
    (one governor, everything else the same, two kernels or more)."""
    if len(views) < 2:
        return None
    governors = {dotted.get(v.config, "governor.name") or "menu" for v in views}
    if len(governors) != 1 or len({_workload(v.config) for v in views}) != 1:
        return None
    (governor,) = governors
    named = [steps.kernel(governor, dotted.get(v.config, KERNEL)) for v in views]
    if len({k["name"] for k in named}) < 2:
        return None
    order = sorted(
        range(len(views)), key=lambda i: (steps.history_position(governor, named[i]["name"]), i)
    )
    kernels = [
        KernelOfRun(run=views[i].summary["id"], label=chr(ord("A") + i % 26), **named[i]) for i in order
    ]
    ordered = [results[i] for i in order]
    read = steps.read_steps(
        governor, [named[i] for i in order], steps.state_names(ordered),
        lambda m, k: _value(views[order[k]], ordered[k], m),
    )  # fmt: skip
    return KernelAxis(governor=governor, kernels=kernels, **read)


# --- the axis in the pasted reports -------------------------------------------------------------


def _change(axis: KernelAxis, step: Mapping[str, Any]) -> str:
    unit = next((f["change_unit"] for f in axis.figures if f["key"] == step["figure"]), "%")
    if step["change"] is None:
        return "no figure changed"
    return f"{step['figure']} {step['change']:+.1f}{' pp' if unit == 'pp' else '%'}"


def _commit_lines(step: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(how it is cited, its link or "") for each commit between the step's two kernels."""
    out = []
    for kind, items in (("", step["commits"]["added"]), ("without ", step["commits"]["absent"])):
        for c in items:
            name = c["commit"] or c["release"]
            out.append((f"{kind}{name} {c['subject']} ({c['release']})", c["link"] or ""))
    return out


def render_text(axis: KernelAxis) -> str:
    """The kernel axis as plain text below the robot's table: the runs in history order, each step's
    largest change (the largest step marked) and the commits between, each with its link."""
    lines = [f"Kernel by kernel ({axis.governor}), in the merged history's order:"]
    lines += [f"  {k.label}: {k.name}" + (f"  {k.link}" if k.link else "") for k in axis.kernels]
    for i, step in enumerate(axis.steps):
        mark = "  <- the largest change" if i == axis.largest_step else ""
        lines.append(f"{step['from']} -> {step['to']}: {_change(axis, step)}{mark}")
        lines += [f"    {text}" + (f"\n      {link}" if link else "") for text, link in _commit_lines(step)]
    return "\n".join(lines) + "\n"


def render_markdown(axis: KernelAxis) -> str:
    """The same for a GitHub issue: a list of steps, commits linked."""

    def linked(text: str, link: str | None) -> str:
        return f"[`{text}`]({link})" if link else f"`{text}`"

    lines = [f"#### Kernel by kernel ({axis.governor})", ""]
    lines.append(", ".join(f"{k.label}: {linked(k.name, k.link)}" for k in axis.kernels))
    lines.append("")
    for i, step in enumerate(axis.steps):
        mark = " **(the largest change)**" if i == axis.largest_step else ""
        lines.append(f"- `{step['from']}` → `{step['to']}`: {_change(axis, step)}{mark}")
        lines += [f"  - {f'[{t}]({link})' if link else t}" for t, link in _commit_lines(step)]
    return "\n".join(lines) + "\n"
