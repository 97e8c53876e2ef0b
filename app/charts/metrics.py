"""Metrics read from a result: the run page's headline figures and the compare table's rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.charts.base import (
    Result,
)
from app.core.models import IPIS_AVOIDED, IPIS_SENT, ipi_total
from engine.result import LATENCY_LABELS, LATENCY_SOURCES


@dataclass(frozen=True)
class Metric:
    """A number read from a run's result: its stable key, label, unit, how to read it, and which
    way is better (None: it describes the workload, not a quality). The run page's headline
    figures and the compare table (API and page) are lists of these."""

    key: str
    label: str
    unit: str
    read: Callable[[Result], Any]
    better: Literal["lower", "higher"] | None = None
    group: str = ""
    estimate: bool = False

    def value(self, result: Result | None) -> float | None:
        if result is None:
            return None
        try:
            v = self.read(result)
        except (KeyError, TypeError, IndexError):
            return None
        return None if v is None else float(v)


def _lat(src: str, key: str, scale: float = 1e-3) -> Callable[[Result], float | None]:
    """A latency statistic of one source (None without samples), in us unless `scale` says."""

    def read(r: Result) -> float | None:
        stats = r["latency"].get(src)
        return None if not stats or not stats["count"] else float(stats[key]) * scale

    return read


def _sum_states(key: str) -> Callable[[Result], float]:
    return lambda r: float(sum(s[key] for s in r["states"]))


SUMMARY_METRICS: list[Metric] = [
    Metric("wakeups", "Wake-ups from idle", "", lambda r: r["wakeups"]),
    Metric("busy_share", "Busy (C0)", "%", lambda r: r["busy_share"] * 100),
    Metric("wake_mean_us", "WakeLatency mean", "us", _lat("wake", "mean_ns"), "lower"),
    Metric("wake_p99_us", "WakeLatency p99", "us", _lat("wake", "p99_ns"), "lower"),
    Metric("intr_mean_us", "IntrLatency mean", "us", _lat("intr", "mean_ns"), "lower"),
    Metric("intr_p99_us", "IntrLatency p99", "us", _lat("intr", "p99_ns"), "lower"),
    Metric("timer_mean_us", "Timer latency mean (cyclictest)", "us", _lat("timer", "mean_ns"), "lower"),
    Metric("timer_p99_us", "Timer latency p99 (cyclictest)", "us", _lat("timer", "p99_ns"), "lower"),
    Metric("timer_max_us", "Timer latency max (cyclictest)", "us", _lat("timer", "max_ns"), "lower"),
    Metric("ipi_mean_us", "smp_call_function_single latency mean", "us", _lat("ipi", "mean_ns"), "lower"),
    Metric("ipis_sent", IPIS_SENT, "", lambda r: ipi_total(r["ipi"], "sent"), "lower"),
    Metric("ipis_avoided", IPIS_AVOIDED, "", lambda r: ipi_total(r["ipi"], "avoided"), "higher"),
    Metric(
        "sender_same_cycles",
        "Sender cost, same socket",
        "cycles",
        lambda r: r["ipi"]["same_socket"]["mean_cycles"] if r["ipi"]["same_socket"]["calls"] else None,
        "lower",
    ),
    Metric(
        "sender_other_cycles",
        "Sender cost, other socket",
        "cycles",
        lambda r: r["ipi"]["other_socket"]["mean_cycles"] if r["ipi"]["other_socket"]["calls"] else None,
        "lower",
    ),
    Metric(
        "line_transfers",
        "Cache-line transfers",
        "",
        lambda r: r["ipi"]["line_transfers_sender"] + r["ipi"]["line_transfers_target"],
        "lower",
    ),
    Metric("above", "Too deep (above)", "", _sum_states("above"), "lower"),
    Metric("below", "Too shallow (below)", "", _sum_states("below"), "lower"),
    Metric("energy_j", "Energy", "J", lambda r: r["energy"]["joules"], "lower", estimate=True),
    Metric(
        "watts_per_cpu",
        "Mean power per CPU",
        "W",
        lambda r: r["energy"]["mean_watts_per_cpu"],
        "lower",
        estimate=True,
    ),
]


def summary_figures(result: Result) -> list[dict[str, Any]]:
    """The run page's headline numbers: `{"key", "label", "unit", "value", "better", "estimate"}`."""
    out = []
    for m in SUMMARY_METRICS:
        v = m.value(result)
        if v is not None:
            out.append(
                {
                    "key": m.key,
                    "label": m.label,
                    "unit": m.unit,
                    "value": v,
                    "better": m.better,
                    "estimate": m.estimate,
                }
            )
    return out


#: turbostat's columns as the hardware view gives them, with what each counts.
HARDWARE_COLUMNS = {
    "Busy%": "Busy% (thread in C0: MPERF)",
    "CPU%c1": "CPU%c1 (thread idle, core not in C3/C6)",
    "CPU%c3": "CPU%c3 (core C3)",
    "CPU%c6": "CPU%c6 (core C6)",
    "Pkg%pc2": "Pkg%pc2 (package C2)",
    "Pkg%pc3": "Pkg%pc3 (package C3)",
    "Pkg%pc6": "Pkg%pc6 (package C6)",
    "PkgWatt": "PkgWatt per socket (estimate)",
}


def _turbostat(result: Result, column: str) -> float | None:
    value = result["hardware"]["system"]["turbostat"].get(column)
    return None if value is None else float(value)


def _share(percent: float | None) -> float | None:
    return None if percent is None else percent / 100


def _state_value(name: str, key: str) -> Callable[[Result], Any]:
    return lambda r: next((s[key] for s in r["states"] if s["name"] == name), None)


def compare_metrics(state_names: Sequence[str]) -> list[Metric]:
    """The metrics `/api/compare` aligns (raw units: ns, shares, counts; keys are a contract)."""
    out = [
        Metric(f"residency.{n}", f"{n} residency", "share", _state_value(n, "residency"), group="residency")
        for n in state_names
    ]
    out += [
        Metric("busy_share", "Busy (C0) share", "share", lambda r: r["busy_share"], group="residency"),
        Metric("wakeups", "Wake-ups from idle", "count", lambda r: r["wakeups"], group="residency"),
    ]
    out += [
        Metric(f"usage.{n}", f"{n} entries", "count", _state_value(n, "usage"), group="usage")
        for n in state_names
    ]
    for src in LATENCY_SOURCES:
        label = LATENCY_LABELS[src].split(" (")[0].split(":")[0]
        for key, what in (("mean_ns", "mean"), ("p99_ns", "p99")):
            out.append(
                Metric(
                    f"latency.{src}.{key}",
                    f"{label} {what}",
                    "ns",
                    _lat(src, key, scale=1.0),
                    "lower",
                    "latency",
                )
            )
    for loc, loc_label in (("same_socket", "same socket"), ("other_socket", "other socket")):
        out += [
            Metric(
                f"ipi.{loc}.mean_cycles",
                f"Sender cycles, {loc_label}",
                "cycles",
                lambda r, x=loc: r["ipi"][x]["mean_cycles"] if r["ipi"][x]["calls"] else None,
                "lower",
                "ipi",
            ),
            Metric(
                f"ipi.{loc}.idle_target_mean_cycles",
                f"Sender cycles to an idle target, {loc_label}",
                "cycles",
                lambda r, x=loc: r["ipi"][x]["idle_target_mean_cycles"],
                "lower",
                "ipi",
            ),
            Metric(
                f"ipi.{loc}.busy_target_mean_cycles",
                f"Sender cycles to a busy target, {loc_label}",
                "cycles",
                lambda r, x=loc: r["ipi"][x]["busy_target_mean_cycles"],
                "lower",
                "ipi",
            ),
        ]
    out += [
        Metric("ipi.ipis_sent", IPIS_SENT, "count", lambda r: ipi_total(r["ipi"], "sent"), "lower", "ipi"),
        Metric(
            "ipi.ipis_avoided",
            IPIS_AVOIDED,
            "count",
            lambda r: ipi_total(r["ipi"], "avoided"),
            "higher",
            "ipi",
        ),
    ]
    for key, label, better in (
        ("requested", "smp_call_function_single() calls made", None),
        ("calls.ipis_sent", "IPIs sent by smp_call_function_single()", "lower"),
        ("calls.ipis_avoided", "IPIs avoided by smp_call_function_single()", "higher"),
        ("sched_requested", "Scheduler wake-ups of idle CPUs", None),
        ("sched_ipis_sent", "IPIs sent by scheduler wake-ups", "lower"),
        ("sched_ipis_avoided", "IPIs avoided by scheduler wake-ups", "higher"),
        ("line_transfers_same_socket", "Cache-line transfers, same socket", "lower"),
        ("line_transfers_other_socket", "Cache-line transfers, other socket", "lower"),
    ):
        field = key.removeprefix("calls.")
        out.append(Metric(f"ipi.{key}", label, "count", lambda r, k=field: r["ipi"][k], better, "ipi"))  # type: ignore[arg-type]
    # turbostat's columns for the whole system (shares, as the residency rows; PkgWatt per socket).
    for column, label in HARDWARE_COLUMNS.items():
        watts = column == "PkgWatt"
        out.append(
            Metric(
                f"hardware.{column}",
                label,
                "W" if watts else "share",
                lambda r, c=column, w=watts: _turbostat(r, c) if w else _share(_turbostat(r, c)),
                "lower" if watts else None,
                "hardware",
                watts,
            )
        )
    out += [
        Metric(
            "energy.joules",
            "Energy (estimate)",
            "J",
            lambda r: r["energy"]["joules"],
            "lower",
            "energy",
            True,
        ),
        Metric(
            "energy.mean_watts_per_cpu",
            "Mean power per CPU (estimate)",
            "W",
            lambda r: r["energy"]["mean_watts_per_cpu"],
            "lower",
            "energy",
            True,
        ),
    ]
    return out
