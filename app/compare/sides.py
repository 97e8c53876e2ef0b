"""What a comparison's statistics read of stored runs: each run's repeats as a `stats.Side`, in
like-with-like form, and the warnings about every difference that makes figures not comparable.

Like with like: a metric that is a total over the simulated time and CPUs (the registry's
`extensive`: counts, energy) is compared per second when the runs' durations differ, and per CPU
when their CPU counts differ (energy per second is average watts). Shares are given to the
statistics in percent, so their changes come out in percentage points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.compare.stats import MetricSpec, Side
from app.core import dotted
from engine.metrics import Metric
from engine.repeats import summary_figures

Normalised = Literal["per_second", "per_cpu", "per_cpu_second"]
WarningKind = Literal[
    "duration", "cpus", "topology", "platform", "variant", "engine", "kernel", "hz", "measurement"
]
# How a normalised metric is named in reports (the robot's dotted names) and labelled on pages.
SUFFIX: dict[str, tuple[str, str]] = {
    "per_second": (".per_s", " per second"),
    "per_cpu": (".per_cpu", " per CPU"),
    "per_cpu_second": (".per_cpu_s", " per CPU per second"),
}
# What a measurement of each kind has of a run's figures (the rest are simulated only).
MEASURED_FIGURES = {
    "wult": "WakeLatency and IntrLatency only, overall and per requested C-state (no residency, energy "
    "or IPI figures)",
    "turbostat": "turbostat's summary columns only (no latencies, IPI costs or per-state entry counts)",
}


@dataclass(frozen=True)
class RunFacts:
    """What like-with-like and the warnings read of a finished run."""

    id: str
    label: str
    config: Mapping[str, Any]
    result: Mapping[str, Any]
    engine_version: str
    repeats: Sequence[Mapping[str, Any]]

    @property
    def duration_s(self) -> float:
        return float(self.result["duration_ns"]) / 1e9

    @property
    def cpus(self) -> int:
        return int(self.result["cpus"])


def run_facts(
    run_id: str,
    label: str,
    config: Mapping[str, Any],
    result: Mapping[str, Any],
    engine_version: str,
    repeats: Sequence[Mapping[str, Any]] | None,
) -> RunFacts:
    """A finished run's facts; a run stored before repeats is its one repeat, read from its result."""
    if repeats is None:
        repeats = [{"seed": config.get("seed", 1), "summary": summary_figures(result)}]
    return RunFacts(run_id, label, config, result, engine_version, repeats)


def normalisation(runs: Sequence[RunFacts]) -> Normalised | None:
    """How extensive metrics are compared: per second if durations differ, per CPU if CPU counts do."""
    per_second = len({r.result["duration_ns"] for r in runs}) > 1
    per_cpu = len({r.cpus for r in runs}) > 1
    if per_second and per_cpu:
        return "per_cpu_second"
    return "per_second" if per_second else "per_cpu" if per_cpu else None


def _scale(metric: Metric, run: RunFacts, normalised: Normalised | None) -> float:
    """The factor turning the metric's stored value into the compared one."""
    scale = 100.0 if metric.unit_kind == "pp" else 1.0  # shares in percent: changes in pp
    if metric.extensive and normalised in ("per_second", "per_cpu_second"):
        scale /= run.duration_s
    if metric.extensive and normalised in ("per_cpu", "per_cpu_second"):
        scale /= run.cpus
    return scale


def compared_unit(metric: Metric, normalised: Normalised | None) -> str:
    """The metric's unit as compared: joules per second are watts, counts per second `/s`."""
    if not metric.extensive or normalised is None:
        return metric.unit
    per_s = normalised != "per_cpu"
    per_cpu = normalised != "per_second"
    unit = "W" if metric.unit == "J" and per_s else metric.unit + ("/s" if per_s else "")
    return unit + (" per CPU" if per_cpu else "")


def side(run: RunFacts, metrics: Sequence[Metric], normalised: Normalised | None) -> Side:
    """The run's repeats as the statistics read them: per metric one value per seed, in compared form."""
    values: dict[str, list[float | None]] = {}
    for m in metrics:
        scale = _scale(m, run, normalised)
        values[m.key] = [
            None if (v := r["summary"].get(m.key)) is None else float(v) * scale for r in run.repeats
        ]
    return Side(run.id, [int(r["seed"]) for r in run.repeats], values)


def spec(metric: Metric) -> MetricSpec:
    """The registry's metric as the statistics take it."""
    direction = None if metric.direction == "none" else metric.direction
    return MetricSpec(metric.key, metric.unit_kind, direction, metric.threshold)


def unscale(metric: Metric, value: float | None) -> float | None:
    """A compared mean or spread back in the metric's stored unit (shares as fractions again)."""
    if value is None or metric.unit_kind != "pp":
        return value
    return value / 100.0


# --- warnings ------------------------------------------------------------------------------------


def _topology(run: RunFacts) -> str:
    """Sockets x cores x threads as configured (unset counts are the platform's: shown as `?`)."""
    t = dotted.get(run.config, "topology", {})
    return f"{run.result['sockets']} x " + " x ".join(
        str(t.get(k) or "?") for k in ("cores_per_socket", "threads_per_core")
    )


def _differ(runs: Sequence[RunFacts], value: Any) -> list[str] | None:
    """Each run's `value` as `A: x`, when they are not all the same; None when they are."""
    shown = [value(r) for r in runs]
    if len({repr(v) for v in shown}) < 2:
        return None
    return [f"{r.label} {v}" for r, v in zip(runs, shown, strict=True)]


def run_warnings(runs: Sequence[RunFacts], normalised: Normalised | None) -> list[dict[str, str]]:
    """Every difference between the runs that makes their figures not comparable as they are."""
    out: list[dict[str, str]] = []

    def warn(kind: WarningKind, what: str, shown: list[str] | None, consequence: str) -> None:
        if shown is not None:
            out.append({"kind": kind, "message": f"{what} differ ({', '.join(shown)}): {consequence}"})

    warn(
        "duration",
        "Simulated durations",
        _differ(runs, lambda r: f"{r.duration_s * 1000:g} ms"),
        "counts and energy are compared per second (energy as average watts)",
    )
    warn(
        "cpus",
        "CPU counts",
        _differ(runs, lambda r: f"{r.cpus} CPUs"),
        "counts and energy are compared per CPU",
    )
    warn(
        "topology",
        "Topologies (sockets x cores x threads)",
        _differ(runs, _topology) if not any(w["kind"] == "cpus" for w in out) else None,
        "the same CPU count is spread differently, so IPI locality and package states differ",
    )
    warn(
        "platform",
        "Platforms",
        _differ(runs, lambda r: r.config.get("platform")),
        "C-state tables, exit latencies and power differ",
    )
    same_platform = len({r.config.get("platform") for r in runs}) == 1
    warn(
        "variant",
        "Platform tables",
        _differ(runs, lambda r: _table_name(r)) if same_platform else None,
        "the same platform name runs different C-state tables",
    )
    warn(
        "engine",
        "Engine versions",
        _differ(runs, lambda r: r.engine_version),
        "the model itself may have changed between them",
    )
    warn(
        "kernel",
        "Governor kernel releases",
        # The release asked for (unset: the newest modelled); different governors at one release
        # are the comparison itself, not a mismatch.
        _differ(runs, lambda r: dotted.get(r.config, "governor.kernel") or "the newest modelled")
        and [f"{r.label} {r.result.get('governor_kernel')}" for r in runs],
        "the governors follow different kernel code",
    )
    warn(
        "hz",
        "Tick rates (HZ)",
        _differ(runs, lambda r: dotted.get(r.config, "wakeups.tick.hz", 1000)),
        "the tick alone changes wake-ups, residency and energy",
    )
    return out


def _table_name(run: RunFacts) -> str:
    table = run.config.get("platform_table")
    if not table:
        return "built-in"
    states = table.get("states", [])
    shown = ", ".join(
        f"{s.get('name')} {s.get('exit_latency_us')}/{s.get('target_residency_us')} us" for s in states
    )
    return f"{table.get('name', 'custom')} [{shown}]"


def measurement_warnings(measurements: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """What each measurement lacks beside a simulated run."""
    return [
        {
            "kind": "measurement",
            "message": f"M{i + 1} ({m['kind']}, {m['title'] or m['id']}) is measured, the runs "
            f"simulated: it has {MEASURED_FIGURES.get(m['kind'], 'only some figures')}; the others "
            "are simulated only, and a measurement has no repeats, so its rows carry no verdict",
        }
        for i, m in enumerate(measurements)
    ]
