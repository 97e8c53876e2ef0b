"""Chart builders: a run's result (or a platform table) in, a Plotly figure dict out.

One module per chart family (`residency`, `latency`, `ipi`, `platform`), what they share in
`base`, and the run page's headline figures (from the metric registry, `engine.metrics`) in
`metrics`. The
registries below name the charts a run page and the compare page draw; the builders are
re-exported here as the package's face.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from app.charts.base import (
    BUSY_NAME,
    MECHANISM_COLORS,
    MECHANISM_NAMES,
    SOURCE_COLORS,
    SOURCE_NAMES,
    Figure,
    Result,
    palette,
    state_color,
)
from app.charts.ipi import PART_NAMES, ipi_cycles_figure, sender_cost_note, sender_cost_rows
from app.charts.latency import (
    latency_cdf_figure,
    latency_histogram_figure,
    latency_tail_figure,
    wake_vs_intr_figure,
)
from app.charts.metrics import summary_figures
from app.charts.platform import platform_figure
from app.charts.residency import (
    TIMELINE_MAX_SEGMENTS,
    cpu_places,
    hardware_figure,
    per_cpu_names,
    residency_figure,
    residency_per_cpu_figure,
    timeline_figure,
)

#: Run charts by name, in page order (the first two share the first screen):
#: `GET /api/runs/{id}/charts/{name}` serves these.
CHARTS: dict[str, Callable[[Result], Figure]] = {
    "residency": residency_figure,
    "latency_tail": latency_tail_figure,
    "hardware": hardware_figure,
    "latency_histogram": latency_histogram_figure,
    "latency_cdf": latency_cdf_figure,
    "wake_vs_intr": wake_vs_intr_figure,
    "ipi_cycles": ipi_cycles_figure,
    "residency_per_cpu": residency_per_cpu_figure,
    "timeline": timeline_figure,
}

#: Charts that overlay several runs on the compare page: every run chart but the per-CPU ones
#: (their builders take a result or a list of (label, result) pairs).
COMPARE_CHARTS = cast(
    dict[str, Callable[[Sequence[tuple[str, Result]]], Figure]],
    {name: build for name, build in CHARTS.items() if name not in ("residency_per_cpu", "timeline")},
)


def run_chart(name: str, result: Result) -> Figure:
    """One run chart by name; `KeyError` for an unknown name."""
    return CHARTS[name](result)


def run_charts(result: Result) -> dict[str, Figure]:
    return {name: build(result) for name, build in CHARTS.items()}


def compare_charts(runs: Sequence[tuple[str, Result]]) -> dict[str, Figure]:
    return {name: build(runs) for name, build in COMPARE_CHARTS.items()}
