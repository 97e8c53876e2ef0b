"""The 2021 intel_idle patch: C1 entered with interrupts enabled (CPUIDLE_FLAG_IRQ_ENABLE, 5.16)."""

from __future__ import annotations

import math
from typing import Any

from engine.kernel.cores import Z_9999
from engine.platforms import BUILTIN_PLATFORMS
from engine.scenarios.framework import (
    M_BUSY,
    M_C1_INTR,
    M_C1_RESIDENCY,
    M_C1_WAKE,
    M_TIMER_MEAN,
    M_TIMER_P99,
    Check,
    Role,
    Scenario,
    Sensitivity,
    _merge,
)

SOURCE_IRQ = 'linux-pm 2021: "intel_idle: enable interrupts before C1 on Xeons" (applied for 5.16)'

# --- 1. IRQ_ENABLE on C1 (2021) ------------------------------------------------------------------


def _irq_enable_base(platform: str) -> dict[str, Any]:
    return {
        "platform": platform,
        "seed": 1,
        "duration_ms": 300,
        "topology": {"sockets": 1, "cores_per_socket": 8, "threads_per_core": 1},
        "governor": {"name": "menu"},
        "states": {"disabled": ["POLL", "C1E", "C6"], "irq_enable": {"C1": False}},
        "wakeups": {
            "timers": [{"period_us": 1000, "handler_us": 0.5, "work_us": 2}],
            "interrupts": {"rate_hz": 100, "work_us": 0},
            "ipis": {"rate_hz": 0},
            "sched_wakeups": {"rate_hz": 0},
        },
    }


def _irq_enable(platform: str, chip: str) -> Scenario:
    base = _irq_enable_base(platform)
    off = Role("irq-off", "C1 entered with interrupts off (before 5.16)", base)
    on = Role(
        "irq-on", "C1 with CPUIDLE_FLAG_IRQ_ENABLE (5.16+)", _merge(base, states={"irq_enable": {"C1": True}})
    )
    src = f"{SOURCE_IRQ}, {chip}"
    icx = platform == "icx"
    cyclictest = Check(
        id=f"{platform}-cyclictest-mean",
        source=src,
        metric="cyclictest average latency, C1 only, with vs without IRQ_ENABLE",
        metric_ref=M_TIMER_MEAN,
        mode="change_pct",
        baseline="irq-off",
        role="irq-on",
        published=True,
        **(
            dict(
                published_value=-5.1,
                published_text="-5.1% (Ice Lake Xeon, only C1 enabled)",
                accept=(-6.1, -4.1),
                tolerance="+-1 percentage point",
                kind="calibrated",
                note="The model's irq_direct_saving_ns term was fitted to this figure.",
            )
            if icx
            else dict(
                published_value=None,
                published_text='"similar single-digit percentage improvements" (no Skylake figure given)',
                accept=(-9.9, -1.0),
                tolerance="a single-digit reduction: -9.9% .. -1%",
                kind="predicted",
                note="skx follows from the icx-calibrated saving and skx's own exit latencies.",
            )
        ),
    )
    checks = (
        Check(
            id=f"{platform}-c1-intr-latency",
            source=src,
            metric="average C1 IntrLatency (wult), with vs without IRQ_ENABLE",
            metric_ref=M_C1_INTR,
            mode="change_pct",
            baseline="irq-off",
            role="irq-on",
            published_value=[-10.0, -5.0],
            published_text="5-10% lower",
            accept=(-10.0, -5.0),
            tolerance="the change lies in the published 5-10% reduction",
            kind="consistency",
            published=True,
            note=(
                "In the model the change is -h / (x + h + e): exit housekeeping h moves after the handler. "
                "Nothing was fitted to it, but it follows from the labelled estimates alone: the table "
                "below gives the range of each over which the row still holds."
            ),
            sensitivity=intr_latency_sensitivity(platform, (-10.0, -5.0)),
        ),
        cyclictest,
        Check(
            id=f"{platform}-c1-residency",
            source=src,
            metric="C1 residency, with vs without IRQ_ENABLE",
            metric_ref=M_C1_RESIDENCY,
            mode="diff",
            baseline="irq-off",
            role="irq-on",
            published_value=None,
            published_text="higher: C1 residency now includes interrupt handling time",
            accept=(1e-9, None),
            tolerance="any increase",
            kind="consistency",
            published=True,
            note="Holds for any handler time above zero: with IRQ_ENABLE the handler runs inside the stay.",
            sensitivity=(
                Sensitivity("wakeups.timers.0.handler_us", 0.5, "us", 1e-3, None, "a run input"),
            ),
        ),
    )
    title_chip = "Ice Lake Xeon (icx)" if icx else "Skylake Xeon (skx)"
    return Scenario(
        name=f"irq-enable-c1-{platform}",
        title=f"C1 with interrupts enabled on {title_chip}",
        description=(
            f"Only C1 enabled on one {platform} socket, a cyclictest-like 1 ms timer and a few device "
            "interrupts, with C1 entered with interrupts off (before 5.16) and with CPUIDLE_FLAG_IRQ_ENABLE. "
            "The 2021 intel_idle patch reported average C1 interrupt latency 5-10% lower"
            + (
                " and cyclictest's average 5.1% lower on Ice Lake"
                if icx
                else " and similar single-digit cyclictest gains"
            )
            + "; the simulation shows both reductions and C1 residency growing by the handler time."
        ),
        source=SOURCE_IRQ,
        roles=(off, on),
        metrics=(M_C1_INTR, M_C1_WAKE, M_TIMER_MEAN, M_TIMER_P99, M_C1_RESIDENCY, M_BUSY),
        checks=checks,
        charts=("wake_vs_intr", "latency_cdf", "residency"),
        details=(
            "With interrupts off, MWAIT returns, cpuidle does its exit housekeeping, re-enables interrupts "
            "and only then takes the interrupt: IntrLatency = exit latency + housekeeping + entry. With "
            "IRQ_ENABLE the interrupt is taken straight out of MWAIT, so the housekeeping moves after the "
            "handler (and the handler's time is counted as C1 residency). The cyclictest thread still waits "
            "for the housekeeping; its gain comes from the model's irq_direct_saving_ns term, a labelled "
            "estimate calibrated on the icx cyclictest figure. The patch's dbench +0.8% is not modelled."
        ),
    )



def _mean_exit_ns(median_ns: float, worst_ns: float) -> float:
    """Mean of the engine's exit latency draw: log-normal, median given, worst case at p99.99."""
    sigma = math.log(worst_ns / median_ns) / Z_9999 if worst_ns > median_ns > 0 else 0.0
    return median_ns * math.exp(sigma * sigma / 2)


def _bisect(f: Any, lo: float, hi: float) -> float:
    """The x in [lo, hi] where the increasing f crosses 0."""
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def intr_latency_sensitivity(platform: str, accept_pct: tuple[float, float]) -> tuple[Sensitivity, ...]:
    """Where the C1 IntrLatency row holds, one estimate at a time.

    In the model an interrupt that wakes C1 reaches its handler after x + h + e with interrupts
    off and x + e with IRQ_ENABLE (x the drawn exit latency, h the exit housekeeping, e the
    interrupt entry; a delivery delay d, 0 in the model, would add to both). The mean change is
    -h / (x + h + e + d), so the row holds while x + e + d lies in [h(1/b - 1), h(1/a - 1)]
    for an accepted reduction between a and b.
    """
    table = BUILTIN_PLATFORMS[platform]
    c1 = next(s for s in table.states if s.name == "C1")
    h = table.costs.exit_housekeeping_ns.value
    e = table.costs.irq_entry_ns.value
    worst = c1.exit_latency_us * 1000
    median = c1.median_exit_us().value * 1000
    x = _mean_exit_ns(median, worst)
    a, b = -accept_pct[1] / 100, -accept_pct[0] / 100  # smallest and largest reduction accepted
    rest_lo, rest_hi = h * (1 / b - 1), h * (1 / a - 1)  # the range of x + e + d

    def clip(v: float) -> float:
        return max(v, 0.0)

    def median_where(mean_x: float) -> float:
        # x's mean grows with its median over (worst / 1000, worst]: solve for the median.
        return _bisect(lambda m: _mean_exit_ns(m, worst) - mean_x, worst / 1000, worst)

    low = worst / 1000
    median_from = 0.0 if _mean_exit_ns(low, worst) >= rest_lo - e else median_where(rest_lo - e)
    median_to = worst if _mean_exit_ns(worst, worst) <= rest_hi - e else median_where(rest_hi - e)
    return (
        Sensitivity("costs.exit_housekeeping_ns (h)", h, "ns", (x + e) * a / (1 - a), (x + e) * b / (1 - b)),
        Sensitivity("costs.irq_entry_ns (e)", e, "ns", clip(rest_lo - x), rest_hi - x),
        Sensitivity(
            "C1 median exit latency (x)",
            median,
            "ns",
            median_from,
            median_to,
            f"an estimate; the table's {worst:g} ns worst case bounds it; mean x = {x:.0f} ns",
        ),
        Sensitivity(
            "interrupt delivery delay (d)", 0.0, "ns", clip(rest_lo - x - e), rest_hi - x - e,
            "not modelled (0): wult's hrt, tdt and nic methods deliver differently",
        ),
    )


def scenarios() -> list[Scenario]:
    return [_irq_enable("icx", "Ice Lake Xeon"), _irq_enable("skx", "Skylake Xeon")]
