"""The run page's headline figures: metrics of the registry (`engine.metrics`), shown in the
units the page uses (latencies in us, shares in %)."""

from __future__ import annotations

from typing import Any

from app.charts.base import Result
from engine import metrics

# (the figure's id on the page, the registry's key), in page order.
SUMMARY = (
    ("wakeups", "wakeups"), ("busy_share", "busy_share"),
    ("wake_mean_us", "latency.wake.mean_ns"), ("wake_p99_us", "latency.wake.p99_ns"),
    ("intr_mean_us", "latency.intr.mean_ns"), ("intr_p99_us", "latency.intr.p99_ns"),
    ("timer_mean_us", "latency.timer.mean_ns"), ("timer_p99_us", "latency.timer.p99_ns"),
    ("timer_max_us", "latency.timer.max_ns"), ("ipi_mean_us", "latency.ipi.mean_ns"),
    ("ipis_sent", "ipi.ipis_sent"), ("ipis_avoided", "ipi.ipis_avoided"),
    ("sender_same_cycles", "ipi.same_socket.mean_cycles"),
    ("sender_other_cycles", "ipi.other_socket.mean_cycles"),
    ("line_transfers", "ipi.line_transfers"), ("above", "states.above"), ("below", "states.below"),
    ("energy_j", "energy.joules"), ("watts_per_cpu", "energy.mean_watts_per_cpu"),
)  # fmt: skip
# How a unit is shown: (scale, unit on the page).
DISPLAY = {"ns": (1e-3, "us"), "share": (100.0, "%"), "count": (1.0, "")}


def summary_figures(result: Result) -> list[dict[str, Any]]:
    """The run page's headline numbers: `{"key", "label", "unit", "value", "better", "estimate"}`."""
    out = []
    for key, metric_key in SUMMARY:
        m = metrics.get(metric_key)
        v = m.value(result)
        if v is not None:
            scale, unit = DISPLAY.get(m.unit, (1.0, m.unit))
            out.append(
                {"key": key, "label": m.label, "unit": unit, "value": v * scale, "better": m.better,
                 "estimate": m.estimate}
            )  # fmt: skip
    return out
