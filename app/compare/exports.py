"""What people take away from a run or a comparison: the robot's text and Markdown
(`app.compare.report`), the self-contained HTML snapshot (`app.compare.snapshot`), and the
"copy as curl / Python" snippets that recreate the runs elsewhere (`app.compare.recreate`).

Each builds the arguments of those pure renderers from the views the pages show; none computes
a figure of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any, Literal

from app import charts
from app.compare import kernels, measured_report, recreate, report, sides
from app.compare.service import CompareView, run_label
from app.compare.snapshot import Section, Table, render_snapshot
from app.core import dotted
from app.core.web import PLOTLY_JS_PATH, fmt_num
from app.runs.service import RunView
from engine import metrics

ReportFormat = Literal["text", "markdown"]
MEDIA_TYPES = {"text": "text/plain; charset=utf-8", "markdown": "text/markdown; charset=utf-8"}
# Config fields the robot's parameter line shows when every run has the same value.
PARAMETERS = (
    ("platform", "platform"),
    ("governor", "governor.name"),
    ("kernel", "governor.kernel"),
    ("mechanism", "ipi_wakeup.mechanism"),
    ("duration_ms", "duration_ms"),
    ("hz", "wakeups.tick.hz"),
)


def report_names(view: CompareView) -> dict[str, str]:
    """Dotted names as the robot's rows show them: a normalised total says so (`wakeups.per_s`),
    a share is a percentage (`residency.C6%`, its change in pp)."""
    names = {}
    for m in view.comparison.metrics:
        name = m.key + (sides.SUFFIX[m.normalised][0] if m.normalised else "")
        names[m.key] = name + "%" if m.change_unit == "pp" else name
    return names


def compare_report(view: CompareView, fmt: ReportFormat, *, link: str, all: bool = False) -> str:
    """The comparison as the robot's plain text or as Markdown; a comparison whose runs are not
    all done yet, or of one run beside measurements, says so instead of a table."""
    runs = view.comparison.runs
    states = _states_report(view, fmt)
    if not view.pairs:
        waiting = ", ".join(f"{r.id} ({r.status})" for r in runs if r.status != "done")
        if waiting:
            return f"Not every run is done yet: {waiting}. Ask again once they are: {link}\n"
        if states:
            return f"{states}\nCompare: {link}\n"
        return (
            "The report compares two or more runs; a run beside measurements only is compared in the "
            f"JSON and on the page: {link}\n"
        )
    report_sides = [report.ReportSide(r.id, r.title or None) for r in runs]
    parameters: dict[str, str] = {}
    for name, path in PARAMETERS:
        values = {repr(dotted.get(c, path)) for c in view.configs}
        if len(values) == 1 and (value := dotted.get(view.configs[0], path)) is not None:
            parameters[name] = str(value)
    parameters["repeats"] = "/".join(str(n) for n in dict.fromkeys(r.repeat_count for r in runs))
    engines = dict.fromkeys(r["engine_version"] for r in view.results if r)
    versions = {"idlelab engine": " / ".join(engines)}
    render = report.render_text if fmt == "text" else report.render_markdown
    axis = view.comparison.kernels
    render_axis = kernels.render_text if fmt == "text" else kernels.render_markdown
    by_kernel = "" if axis is None else "\n" + render_axis(axis)
    return (states + "\n" if states else "") + render(
        view.pairs,
        sides=report_sides,
        parameters=parameters,
        names=report_names(view),
        link=link,
        versions=versions,
        warnings=[w.message for w in view.comparison.warnings],
        all=all,
    ) + by_kernel


def _side_labels(view: CompareView) -> tuple[list[str], list[str]]:
    """The runs' letters (A, B...) and the wult measurements' labels (M1... among all measurements)."""
    runs = [chr(ord("A") + i % 26) for i in range(len(view.comparison.runs))]
    measured = [f"M{j + 1}" for j, m in enumerate(view.comparison.measurements) if m.kind == "wult"]
    return runs, measured


def _states_report(view: CompareView, fmt: ReportFormat) -> str:
    """The per-state rows against wult measurements, in the report's format ("" without them)."""
    states = view.comparison.measured_states
    if states is None or not states.rows:
        return ""
    runs, measured = _side_labels(view)
    named = [f"{m}: {x.title} ({x.id})" for m, x in zip(measured, _wult(view), strict=True)]
    named += [f"{x}: {r.title or r.id} ({r.id})" for x, r in zip(runs, view.comparison.runs, strict=True)]
    if fmt == "text":
        return "\n".join(named) + "\n" + measured_report.render_states_text(states, runs, measured)
    listed = "".join(f"- {measured_report.md_text(n)}\n" for n in named)
    return listed + "\n" + measured_report.render_states_markdown(states, runs, measured)


def _wult(view: CompareView) -> list[Any]:
    return [m for m in view.comparison.measurements if m.kind == "wult"]


# --- HTML snapshots ------------------------------------------------------------------------------


@cache
def plotly_bundle() -> str:
    """The vendored plotly.js text, licence header first (read once)."""
    return PLOTLY_JS_PATH.read_text(encoding="utf-8")


def _taken(link: str) -> str:
    taken = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    return f"A snapshot of {link}, taken {taken}. Its data and charts are in this file."


def run_snapshot(view: RunView, *, link: str, note: str | None) -> str:
    """One file with a run's summary, its statistics over repeats, its note and its charts."""
    run = view.summary
    title = run["title"] or f"Run {run['id']}"
    facts = [
        ["Platform", run["platform"]],
        ["Governor", run["governor"]],
        ["Mechanism", run["mechanism"]],
        ["CPUs", run["cpus"]],
        ["Simulated", f"{fmt_num(run['duration_ms'])} ms"],
        ["Seed", run["seed"]],
        ["Repeats", run.get("repeat_count", 1)],
        ["Status", run["status"]],
        ["Engine", run["engine_version"]],
    ]
    sections = [Section("Run", tables=[Table(["", ""], facts)])]
    if note:
        sections.append(Section("Note", note=note))
    result = view.result
    if result is not None:
        stats = view.summary_stats or {}
        rows = []
        for m in metrics.compared(s["name"] for s in result["states"]):
            value = m.value(result)
            s = stats.get(m.key, {})
            if value is None and not s:
                continue
            rows.append(
                [m.label, m.unit, _shown(value), _shown(s.get("mean")), _shown(s.get("stddev")), s.get("n")]
            )
        sections.append(
            Section(
                "Figures",
                tables=[Table(["Figure", "Unit", "Repeat 0", "Mean", "Stddev", "n"], rows)],
            )
        )
        sections.append(Section("Charts", figures=list(charts.run_charts(result).values())))
    return render_snapshot(title, sections, plotly_js=plotly_bundle(), footer=_taken(link))


def compare_snapshot(view: CompareView, *, link: str, notes: Mapping[str, str] | None = None) -> str:
    """One file with a comparison: its warnings, each compared run's and measurement's note (by
    id in `notes`), the robot's table, every metric with its statistics, the per-state rows
    against wult measurements, and the overlaid charts."""
    runs = view.comparison.model_dump(mode="json")["runs"]
    labels = [run_label(r, i) for i, r in enumerate(runs)]
    sections = [
        Section(
            "Runs",
            tables=[
                Table(
                    ["Run", "Status", "Platform", "Governor", "CPUs", "Simulated (ms)"],
                    [
                        [labels[i], r["status"], r["platform"], r["governor"], r["cpus"], r["duration_ms"]]
                        for i, r in enumerate(runs)
                    ],
                )
            ],
        )
    ]
    warnings = [w.message for w in view.comparison.warnings]
    if warnings:
        sections.append(Section("Not comparable as they are", items=warnings))
    sides = [(labels[i], r["id"]) for i, r in enumerate(runs)]
    sides += [(f"M{j + 1}: {m.title or m.id}", m.id) for j, m in enumerate(view.comparison.measurements)]
    for label, side_id in sides:
        if notes and notes.get(side_id):
            sections.append(Section(f"Note on {label}", note=notes[side_id]))
    if view.comparison.measured_states is not None and view.comparison.measured_states.rows:
        sections.append(Section("Against wult, per requested C-state", text=_states_report(view, "text")))
    if view.pairs:
        sections.append(
            Section(
                "As the kernel test robot shows it", text=compare_report(view, "text", link=link, all=True)
            )
        )
    head = ["Figure", "Unit"]
    for i, label in enumerate(labels):
        head += [label] + (["Change", "95% CI", "Verdict"] if i else [])
    rows = []
    for m in view.comparison.metrics:
        if all(v is None for v in m.values):
            continue
        row: list[Any] = [m.label, m.unit]
        for i, v in enumerate(m.values):
            row.append(_shown(v))
            if i:
                change = m.change[i] if m.change else m.deltas[i]
                ci = m.ci95[i] if m.ci95 else None
                row += [
                    None if change is None else f"{change:+.1f} {m.change_unit}",
                    None if ci is None else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]",
                    (m.verdict[i] or "").replace("_", " ") if m.verdict else None,
                ]
        rows.append(row)
    sections.append(Section("Figures", tables=[Table(head, rows)]))
    pairs = [(label.split(":")[0], r) for label, r in zip(labels, view.results, strict=True) if r is not None]
    if len(pairs) >= 2:
        sections.append(Section("Overlaid", figures=list(charts.compare_charts(pairs).values())))
    return render_snapshot(
        "Compare " + ", ".join(r["id"] for r in runs),
        sections,
        plotly_js=plotly_bundle(),
        footer=_taken(link),
    )


def _shown(value: float | None) -> str | None:
    return None if value is None else fmt_num(value)


# --- recreating runs elsewhere ------------------------------------------------------------------


def recreate_bodies(views: Sequence[RunView], repeats: int | None = None) -> list[dict[str, Any]]:
    """The `POST /api/runs` bodies recreating the runs (stored configs hold a custom platform's
    table inline already), each with its own repeats unless `repeats` is given."""
    return [
        recreate.run_body(
            v.config, title=v.summary["title"], repeats=repeats or int(v.summary.get("repeat_count") or 1)
        )
        for v in views
    ]


def snippet(kind: Literal["curl", "python"], base_url: str, bodies: Sequence[Mapping[str, Any]]) -> str:
    build = recreate.curl_snippet if kind == "curl" else recreate.python_snippet
    return build(base_url, bodies)
