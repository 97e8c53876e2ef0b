"""The per-requested-C-state comparison against wult measurements (`measured_states`) as plain
text for a mail and as Markdown for an issue: one line per side of each (state, metric) row, times
in microseconds, each run's change against the first measurement, and the percentiles that are
just the largest sample named. Pure: renders what `StateComparison` holds, computes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.compare.measured_states import FIGURES, LatencyFigures, StateComparison, StateRow, proportions

HEAD = ("state", "metric", "side", "share", "count", *(label for _, label in FIGURES), "Δp50", "Δp99")
WIDTHS = (17, 11, 4, 6, 8, 9, 9, 9, 9, 9, 7, 7)
NOT_AVAILABLE = "n/a"


def _us(ns: float | None) -> str:
    return NOT_AVAILABLE if ns is None else f"{ns / 1000.0:.2f}"


def _pct(value: float | None) -> str:
    return NOT_AVAILABLE if value is None else f"{value:+.1f}%"


Delta = dict[str, float | None] | None


def _cells(
    row: StateRow, side: str, figures: LatencyFigures | None, share: float | None, delta: Delta
) -> list[str]:
    state = "all states, mixed" if row.mixed else row.state
    if figures is None:
        return [state, row.metric, side, NOT_AVAILABLE, *([NOT_AVAILABLE] * (len(HEAD) - 4))]
    shown_share = "" if row.mixed or share is None else f"{share:.1%}"
    count = NOT_AVAILABLE if figures.count is None else f"{figures.count:,}"
    values = [_us(getattr(figures, key)) for key, _ in FIGURES]
    changes = ["", ""] if delta is None else [_pct(delta.get("p50_ns")), _pct(delta.get("p99_ns"))]
    return [state, row.metric, side, shown_share, count, *values, *changes]


def _lines(
    comparison: StateComparison, run_labels: Sequence[str], measured_labels: Sequence[str]
) -> list[tuple[list[str], list[str]]]:
    """Per side of every row: its cells, and the percentiles it has too few samples for."""
    out = []
    for row in comparison.rows:
        for j, figures in enumerate(row.measured):
            cells = _cells(row, measured_labels[j], figures, row.measured_share[j], None)
            out.append((cells, figures.few_samples if figures else []))
        for i, figures in enumerate(row.simulated):
            cells = _cells(row, run_labels[i], figures, row.simulated_share[i], row.deltas_pct[i])
            out.append((cells, figures.few_samples if figures else []))
    return out


def _preamble(
    comparison: StateComparison, run_labels: Sequence[str], measured_labels: Sequence[str]
) -> list[str]:
    lines = [
        "Against wult measurements, per requested C-state (times in us; share: of the side's wake-ups; "
        f"Δ: each run against {measured_labels[0]}).",
        comparison.note,
        "Proportions: " + proportions(comparison, run_labels, measured_labels) + ".",
    ]
    if comparison.only_measured:
        lines.append("Measured only (no simulated wake-up from them): " + ", ".join(comparison.only_measured))
    if comparison.only_simulated:
        only = ", ".join(comparison.only_simulated)
        lines.append(f"Simulated only (not requested in the measurement): {only}")
    return lines


def render_states_text(
    comparison: StateComparison, run_labels: Sequence[str], measured_labels: Sequence[str]
) -> str:
    """Fixed-width columns, the few-samples percentiles last on their line."""
    lines = _preamble(comparison, run_labels, measured_labels) + [""]
    head = list(HEAD) + ["few samples (just the largest)"]
    rows = [(cells, " ".join(few)) for cells, few in _lines(comparison, run_labels, measured_labels)]
    for cells, few in [(head[:-1], head[-1]), *rows]:
        text = " ".join(
            f"{c:<{w}}" if k < 3 else f"{c:>{w}}" for k, (c, w) in enumerate(zip(cells, WIDTHS, strict=True))
        )
        lines.append((text + "  " + few).rstrip())
    return "\n".join(lines) + "\n"


def render_states_markdown(
    comparison: StateComparison, run_labels: Sequence[str], measured_labels: Sequence[str]
) -> str:
    """One table, a row per side, the few-samples percentiles in the last column."""
    lines = ["#### Per requested C-state", ""]
    lines += [md_text(line) for line in _preamble(comparison, run_labels, measured_labels)]
    lines += ["", "| " + " | ".join([*HEAD, "few samples"]) + " |"]
    lines.append("| " + " | ".join(["---"] * 3 + ["---:"] * (len(HEAD) - 3) + ["---"]) + " |")
    for cells, few in _lines(comparison, run_labels, measured_labels):
        lines.append("| " + " | ".join([*(md_text(c) for c in cells), ", ".join(few)]) + " |")
    return "\n".join(lines) + "\n"


def md_text(text: str) -> str:
    return "".join("\\" + c if c in "\\`*_[]<>|~&" else c for c in text)
