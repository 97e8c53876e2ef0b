"""The metric registry: every number read from a result that lists, pages, comparisons, charts,
sweeps and measured-against-simulated rows show, declared once.

A metric has a stable key (a REST contract: `latency.wake.p99_ns`, `residency.C6`), a label and a
unit, how it is read from a result (as a dict, the stored JSON parsed) and, where a measurement
has the same figure, from a measurement's view; which direction is better; whether it is a total
that grows with simulated time and CPUs (so it normalises per second and per CPU); and the
practical threshold a change must reach to count (default 1% for `%` changes, 0.5 pp for shares).

`FIXED` are the figures every run has that lists, repeats' summaries and comparisons carry;
`DETAILS` and the per-state families (`get`) are read where a page names them (the scenarios'
checks and tables) and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from engine.result import LATENCY_LABELS, LATENCY_SOURCES

Result = Mapping[str, Any]
Direction = Literal["up", "down", "none"]
UnitKind = Literal["%", "pp"]
# Practical thresholds of a verdict when a metric names none: a relative change for counts,
# rates, latencies and energy, percentage points for shares.
DEFAULT_THRESHOLD: dict[str, float] = {"%": 1.0, "pp": 0.5}
# The one IPI count every page, list, CLI and compare shows, and its labels.
IPIS_SENT = "IPIs sent (calls + scheduler wake-ups)"
IPIS_AVOIDED = "IPIs avoided (calls + scheduler wake-ups)"
# Latency statistics of every source, as `LatencyStats` names them, and how they are said.
LATENCY_STATS = (
    ("mean_ns", "mean"),
    ("p50_ns", "p50"),
    ("p90_ns", "p90"),
    ("p99_ns", "p99"),
    ("p999_ns", "p99.9"),
    ("max_ns", "max"),
)
# wult's names for the two sources it measures.
WULT_METRICS = {"wake": "WakeLatency", "intr": "IntrLatency"}
# turbostat's columns as the hardware view gives them (whole system), with what each counts.
TURBOSTAT_COLUMNS = {
    "Busy%": "Busy% (thread in C0: MPERF)",
    "CPU%c1": "CPU%c1 (thread idle, core not in C3/C6)",
    "CPU%c3": "CPU%c3 (core C3)",
    "CPU%c6": "CPU%c6 (core C6)",
    "Pkg%pc2": "Pkg%pc2 (package C2)",
    "Pkg%pc3": "Pkg%pc3 (package C3)",
    "Pkg%pc6": "Pkg%pc6 (package C6)",
    "PkgWatt": "PkgWatt per socket (estimate)",
}
# The columns a measured turbostat output is compared on (as turbostat prints them).
TURBOSTAT_KEY_COLUMNS = ("Busy%", "CPU%c1", "CPU%c6", "Pkg%pc2", "Pkg%pc6", "PkgWatt")


@dataclass(frozen=True)
class Metric:
    """One number of a result (see the module's docstring)."""

    key: str
    label: str
    unit: str  # "ns", "us", "share" (0..1), "count", "cycles", "W", "J", "%" (0..100)
    read: Callable[[Result], Any]
    direction: Direction = "none"
    group: str = ""
    estimate: bool = False
    # A total over the simulated time and CPUs (counts, energy): it normalises per second and per CPU.
    extensive: bool = False
    # Where a measurement's view has the same figure: a path into it.
    measured: tuple[str, ...] | None = None
    threshold: float | None = None

    @property
    def unit_kind(self) -> UnitKind:
        """How a change is told: percentage points for a share, percent for everything else."""
        return "pp" if self.unit == "share" else "%"

    @property
    def practical_threshold(self) -> float:
        return self.threshold if self.threshold is not None else DEFAULT_THRESHOLD[self.unit_kind]

    @property
    def better(self) -> Literal["lower", "higher"] | None:
        """The REST spelling of `direction`."""
        return "higher" if self.direction == "up" else "lower" if self.direction == "down" else None

    def value(self, result: Result | None) -> float | None:
        """The metric of a result (None where it has none: no samples, no such state...)."""
        if result is None:
            return None
        try:
            v = self.read(result)
        except (KeyError, TypeError, IndexError):
            return None
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    def per_second(self, result: Result) -> float | None:
        v = self.value(result)
        if v is None or not self.extensive:
            return v
        return v / (float(result["duration_ns"]) / 1e9)

    def per_cpu(self, result: Result) -> float | None:
        v = self.value(result)
        if v is None or not self.extensive:
            return v
        return v / float(result["cpus"])

    def of_measurement(self, view: Mapping[str, Any]) -> float | None:
        """The same figure in a measurement's view, if it has it."""
        node: Any = view
        for part in self.measured or ():
            node = node.get(part) if isinstance(node, Mapping) else None
        return None if self.measured is None or node is None else float(node)


def ipi_total(ipi: Mapping[str, Any], what: str) -> int:
    """IPIs `what` ("sent" or "avoided") by smp_call_function_single() calls and by scheduler
    wake-ups together: the one count every page, list, CLI and compare shows."""
    return int(ipi[f"ipis_{what}"]) + int(ipi[f"sched_ipis_{what}"])


def _latency(source: str, stat: str) -> Callable[[Result], float | None]:
    def read(r: Result) -> float | None:
        stats = (r.get("latency") or {}).get(source)
        return None if not stats or not stats.get("count") else float(stats[stat])

    return read


def _state(name: str, field: str) -> Callable[[Result], Any]:
    return lambda r: next((s[field] for s in r["states"] if s["name"] == name), None)


def _turbostat(column: str, scale: float) -> Callable[[Result], float | None]:
    def read(r: Result) -> float | None:
        value = r["hardware"]["system"]["turbostat"].get(column)
        return None if value is None else float(value) * scale

    return read


def _package_watts(sockets: bool) -> Callable[[Result], float | None]:
    """PkgWatt per package, or summed over the packages as turbostat's summary row prints it.

    Read from `pkg_watts` (per package in every engine version; the system row's own PkgWatt was
    per package in early 0.6 engines and is the sum since), and only where the platform has RAPL (turbostat
    prints no PkgWatt on Westmere)."""

    def read(r: Result) -> float | None:
        system = r["hardware"]["system"]
        if system["turbostat"].get("PkgWatt") is None:
            return None
        return float(system["pkg_watts"]) * (r["sockets"] if sockets else 1)

    return read


def _sender(locality: str, field: str) -> Callable[[Result], float | None]:
    return lambda r: r["ipi"][locality][field] if r["ipi"][locality]["calls"] else None


def _sender_any(locality: str, field: str) -> Callable[[Result], float | None]:
    return lambda r: r["ipi"][locality][field]


def _share_sent(r: Result) -> float | None:
    """Of the calls that found an empty call queue (the others coalesce and send nothing), the
    share that sent an IPI."""
    ipi = r["ipi"]
    first = ipi["requested"] - ipi["coalesced"]
    return ipi["ipis_sent"] / first if first else None


def _latency_metrics() -> list[Metric]:
    out = []
    for src in LATENCY_SOURCES:
        name = LATENCY_LABELS[src].split(" (")[0].split(":")[0]
        for stat, said in LATENCY_STATS:
            wult = WULT_METRICS.get(src)
            out.append(
                Metric(
                    f"latency.{src}.{stat}",
                    f"{name} {said}",
                    "ns",
                    _latency(src, stat),
                    "down",
                    "latency",
                    measured=("overall", wult, stat) if wult and stat != "max_ns" else None,
                )
            )
    return out


def _ipi_metrics() -> list[Metric]:
    out = []
    for loc, said in (("same_socket", "same socket"), ("other_socket", "other socket")):
        out += [
            Metric(
                f"ipi.{loc}.mean_cycles",
                f"Sender cycles, {said}",
                "cycles",
                _sender(loc, "mean_cycles"),
                "down",
                "ipi",
            ),
            Metric(
                f"ipi.{loc}.idle_target_mean_cycles",
                f"Sender cycles to an idle target, {said}",
                "cycles",
                _sender_any(loc, "idle_target_mean_cycles"),
                "down",
                "ipi",
            ),
            Metric(
                f"ipi.{loc}.busy_target_mean_cycles",
                f"Sender cycles to a busy target, {said}",
                "cycles",
                _sender_any(loc, "busy_target_mean_cycles"),
                "down",
                "ipi",
            ),
        ]
    out += [
        Metric(
            "ipi.ipis_sent",
            IPIS_SENT,
            "count",
            lambda r: ipi_total(r["ipi"], "sent"),
            "down",
            "ipi",
            extensive=True,
        ),
        Metric(
            "ipi.ipis_avoided",
            IPIS_AVOIDED,
            "count",
            lambda r: ipi_total(r["ipi"], "avoided"),
            "up",
            "ipi",
            extensive=True,
        ),
    ]
    for key, label, direction in (
        ("requested", "smp_call_function_single() calls made", "none"),
        ("calls.ipis_sent", "IPIs sent by smp_call_function_single()", "down"),
        ("calls.ipis_avoided", "IPIs avoided by smp_call_function_single()", "up"),
        ("sched_requested", "Scheduler wake-ups of idle CPUs", "none"),
        ("sched_ipis_sent", "IPIs sent by scheduler wake-ups", "down"),
        ("sched_ipis_avoided", "IPIs avoided by scheduler wake-ups", "up"),
        ("line_transfers_same_socket", "Cache-line transfers, same socket", "down"),
        ("line_transfers_other_socket", "Cache-line transfers, other socket", "down"),
    ):
        field = key.removeprefix("calls.")
        read = (lambda f: lambda r: r["ipi"][f])(field)
        out.append(Metric(f"ipi.{key}", label, "count", read, direction, "ipi", extensive=True))  # type: ignore[arg-type]
    return out


def _hardware_metrics() -> list[Metric]:
    """turbostat's whole-system columns: as shares beside the residency rows (`hardware.*`), and as
    turbostat prints them (`turbostat.*`: percent, PkgWatt summed over the packages), the figures a
    measured turbostat output is compared with."""
    out = []
    for column, label in TURBOSTAT_COLUMNS.items():
        watts = column == "PkgWatt"
        out.append(
            Metric(
                f"hardware.{column}",
                label,
                "W" if watts else "share",
                _package_watts(sockets=False) if watts else _turbostat(column, 0.01),
                "down" if watts else "none",
                "hardware",
                watts,
            )
        )
    for column in TURBOSTAT_KEY_COLUMNS:
        watts = column == "PkgWatt"
        read = _package_watts(sockets=True) if watts else _turbostat(column, 1.0)
        out.append(
            Metric(
                f"turbostat.{column}",
                column,
                "W" if watts else "%",
                read,
                "down" if watts else "none",
                "turbostat",
                watts,
                measured=("summary", column),
            )
        )
    return out


FIXED: tuple[Metric, ...] = (
    Metric("busy_share", "Busy (C0) share", "share", lambda r: r["busy_share"], group="residency"),
    Metric(
        "wakeups", "Wake-ups from idle", "count", lambda r: r["wakeups"], group="residency", extensive=True
    ),
    Metric("events", "Events", "count", lambda r: r["events"], group="run", extensive=True),
    *_latency_metrics(),
    *_ipi_metrics(),
    Metric(
        "ipi.line_transfers",
        "Cache-line transfers",
        "count",
        lambda r: r["ipi"]["line_transfers_sender"] + r["ipi"]["line_transfers_target"],
        "down",
        "ipi",
        extensive=True,
    ),
    Metric(
        "states.above",
        "Too deep (above)",
        "count",
        lambda r: sum(s["above"] for s in r["states"]),
        "down",
        "usage",
        extensive=True,
    ),
    Metric(
        "states.below",
        "Too shallow (below)",
        "count",
        lambda r: sum(s["below"] for s in r["states"]),
        "down",
        "usage",
        extensive=True,
    ),
    *_hardware_metrics(),
    Metric(
        "energy.joules",
        "Energy (estimate)",
        "J",
        lambda r: r["energy"]["joules"],
        "down",
        "energy",
        True,
        extensive=True,
    ),
    Metric(
        "energy.mean_watts_per_cpu",
        "Mean power per CPU (estimate)",
        "W",
        lambda r: r["energy"]["mean_watts_per_cpu"],
        "down",
        "energy",
        True,
    ),
)
DETAILS: tuple[Metric, ...] = (
    *(
        Metric(f"ipi.{field}", label, "count", (lambda f: lambda r: r["ipi"][f])(field), "down", "ipi",
               extensive=True)
        for field, label in (
            ("line_transfers_sender", "Cache-line transfers by senders"),
            ("line_transfers_target", "Cache-line transfers by targets"),
            ("stuck_wakeups", "Targets stuck between WAKING and WOKENUP"),
        )
    ),
    Metric("ipi.stuck_mean_ns", "Mean time stuck", "ns", lambda r: r["ipi"]["stuck_mean_ns"], "down", "ipi"),
    Metric(
        "ipi.calls.sent_share",
        "Calls that sent an IPI (coalesced calls excluded)",
        "share",
        _share_sent,
        "down",
        "ipi",
    ),
)
METRICS: dict[str, Metric] = {m.key: m for m in (*FIXED, *DETAILS)}


def state_metrics(name: str) -> tuple[Metric, Metric, Metric]:
    """A C-state's residency share, entries, and the requested residency a turbostat `C6%` column shows."""
    return (
        Metric(
            f"residency.{name}", f"{name} residency", "share", _state(name, "residency"), group="residency"
        ),
        Metric(
            f"usage.{name}", f"{name} entries", "count", _state(name, "usage"), group="usage", extensive=True
        ),
        Metric(
            f"turbostat.{name}%",
            f"{name}% (time requested in {name})",
            "%",
            lambda r: None if (v := _state(name, "residency")(r)) is None else 100.0 * v,
            group="turbostat",
            measured=("summary", f"{name}%"),
        ),
    )


def state_ratio_metrics(name: str) -> tuple[Metric, Metric]:
    """A C-state's `above` and `below` per entry, as cpuidle's counters give them (None: no entries)."""

    def ratio(field: str) -> Callable[[Result], float | None]:
        def read(r: Result) -> float | None:
            usage, count = _state(name, "usage")(r), _state(name, field)(r)
            return None if not usage or count is None else count / usage

        return read

    return (
        Metric(f"above_ratio.{name}", f"{name} above / entries", "share", ratio("above"), group="usage"),
        Metric(f"below_ratio.{name}", f"{name} below / entries", "share", ratio("below"), group="usage"),
    )


def _idle_thread_residency(name: str) -> Callable[[Result], float | None]:
    def read(r: Result) -> float | None:
        names = r["per_cpu_state_names"]
        if name not in names:
            return None
        col = names.index(name)
        busy = (r.get("hardware") or {}).get("per_cpu_busy") or []
        shares = [row[col] for row, b in zip(r["per_cpu_residency"], busy, strict=True) if b < 1.0]
        return sum(shares) / len(shares) if shares else None

    return read


def state_detail_metrics(name: str) -> tuple[Metric, ...]:
    """A C-state's wake figures (wult's mean IntrLatency and WakeLatency, the mean exit latency
    drawn, the table's exit latency as sysfs `latency` gives it) and its mean residency on the
    threads that run no CPU-bound task (hardware Busy% below 100%)."""
    return (
        Metric(
            f"intr_latency_mean.{name}", f"{name} IntrLatency, mean (wult)", "ns",
            _state(name, "intr_latency_mean_ns"), "down", "latency",
        ),
        Metric(
            f"wake_latency_mean.{name}", f"{name} WakeLatency, mean (wult)", "ns",
            _state(name, "wake_latency_mean_ns"), "down", "latency",
        ),
        Metric(
            f"exit_latency_mean.{name}", f"{name} exit latency drawn, mean", "ns",
            _state(name, "exit_latency_mean_ns"), "down", "latency",
        ),
        Metric(
            f"exit_latency.{name}", f"{name} exit latency in the table", "us", _state(name, "exit_latency_us")
        ),
        Metric(
            f"idle_thread_residency.{name}", f"OS {name} residency of the idle threads", "share",
            _idle_thread_residency(name), group="residency",
        ),
    )


def get(key: str) -> Metric:
    """A metric by key: a fixed one or a detail, or a state's (`residency.C6`, `usage.C6`,
    `turbostat.C6%`, `above_ratio.C6`, `below_ratio.C6`, and `state_detail_metrics`' families)."""
    if key in METRICS:
        return METRICS[key]
    s = key.partition(".")[2]
    for m in (*state_metrics(s.removesuffix("%")), *state_ratio_metrics(s), *state_detail_metrics(s)):
        if m.key == key:
            return m
    raise KeyError(f"unknown metric {key!r}")


# What `/api/compare` aligns, in its order (keys are a contract), around the states' own rows.
COMPARED_LATENCY_STATS = ("mean_ns", "p99_ns")
_NOT_COMPARED_GROUPS = ("run", "turbostat")


def compared(state_names: Iterable[str]) -> list[Metric]:
    """The metrics a comparison of runs with these states aligns."""
    names = list(state_names)
    states = [state_metrics(n) for n in names]
    head = [s[0] for s in states] + [METRICS["busy_share"], METRICS["wakeups"]] + [s[1] for s in states]
    rest = [
        m
        for m in FIXED
        if m.group not in ("residency", *_NOT_COMPARED_GROUPS)
        and m.key not in ("ipi.line_transfers", "states.above", "states.below")
        and (m.group != "latency" or m.key.rsplit(".", 1)[1] in COMPARED_LATENCY_STATS)
    ]
    return head + rest


def measured(kinds: Sequence[str], columns: Iterable[str] = ()) -> list[Metric]:
    """The metrics runs and measurements of `kinds` both have: wult's latency statistics; turbostat's
    key columns and its requested-residency columns (`C6%`, named in `columns`)."""
    out: list[Metric] = []
    if "wult" in kinds:
        out += [m for m in FIXED if m.group == "latency" and m.measured is not None]
    if "turbostat" in kinds:
        out += [m for m in FIXED if m.group == "turbostat"]
        for column in columns:
            if column.endswith("%") and not column.startswith(_NOT_STATE_COLUMNS):
                out.append(state_metrics(column[:-1])[2])
    return out


# turbostat columns ending in % that are not a cpuidle state's requested residency.
_NOT_STATE_COLUMNS = ("CPU%", "Pkg%", "Pk%", "Busy", "Mod%", "Totl", "Any", "GFX", "SYS")
