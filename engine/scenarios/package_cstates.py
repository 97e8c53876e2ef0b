"""Beneath the OS view: package C6 disabled in the BIOS, and a busy SMT sibling.

Neither has a published figure to reproduce: their checks are the signs and sizes the hardware
implies (intel_idle's skx table update for a package limit below PC6, commit 64233338; core and
package C-states as turbostat counts them).
"""

from __future__ import annotations

from typing import Any

from engine import metrics
from engine.scenarios.framework import M_BUSY, Check, Role, Scenario, _merge

SOURCE_PC6 = (
    "intel_idle skx_idle_state_table_update() (commit 64233338: C6 92/276 us when PC6 is disabled) "
    "and Xeon package C-states (expected direction)"
)
SOURCE_SMT = "core and package C-states beneath cpuidle's per-thread view (expected direction)"


M_PKG_PC6 = metrics.get("turbostat.Pkg%pc6")
M_PKG_PC2 = metrics.get("turbostat.Pkg%pc2")
M_CPU_C6 = metrics.get("turbostat.CPU%c6")
M_CPU_C1 = metrics.get("turbostat.CPU%c1")
M_PKG_WATT = metrics.get("hardware.PkgWatt")  # per socket, as turbostat prints it per package
M_C6_EXIT = metrics.get("exit_latency_mean.C6")
M_C6_TABLE = metrics.get("exit_latency.C6")
M_WAKE_MEAN = metrics.get("latency.wake.mean_ns")
M_WAKE_P99 = metrics.get("latency.wake.p99_ns")
M_IDLE_THREAD_C6 = metrics.get("idle_thread_residency.C6")

# An idle two-socket skx: every CPU woken a few times a second, so all 96 threads are often idle
# together and the packages can reach PC6.
_IDLE_SKX: dict[str, Any] = {
    "platform": "skx",
    "seed": 11,
    "duration_ms": 300,
    "governor": {"name": "menu"},
    "wakeups": {
        "tick": {"hz": 250, "nohz": True},
        "timers": [{"period_us": 100_000, "work_us": 20}],
        "interrupts": {"rate_hz": 5, "work_us": 10},
        "ipis": {"rate_hz": 0},
        "sched_wakeups": {"rate_hz": 0},
    },
}


def _check(**fields: Any) -> Check:
    return Check(published=False, published_value=None, **fields)


def _pc6_disabled() -> Scenario:
    roles = (
        Role(
            "pc6",
            "Package C6 allowed (BIOS limit PC6): C6 133/600 us",
            _merge(_IDLE_SKX, package={"limit": "PC6"}),
        ),
        Role(
            "pc2",
            "Package C6 disabled (BIOS limit PC2): C6 92/276 us",
            _merge(_IDLE_SKX, package={"limit": "PC2"}),
        ),
    )
    checks = (
        _check(
            id="pc6-disabled-c6-table",
            source=SOURCE_PC6,
            metric="C6 exit latency in the registered table",
            metric_ref=M_C6_TABLE,
            mode="value",
            role="pc2",
            accept=(92.0, 92.0),
            tolerance="exactly 92 us",
            published_text="92 us (skx_idle_state_table_update())",
            kind="consistency",
            note="Echoes the kernel's table update: an input, not a result.",
        ),
        _check(
            id="pc6-disabled-c6-exit",
            source=SOURCE_PC6,
            metric="mean C6 exit latency drawn, PC2 vs PC6 limit",
            metric_ref=M_C6_EXIT,
            mode="change_pct",
            baseline="pc6",
            role="pc2",
            accept=(None, -10.0),
            tolerance="at least 10% lower",
            published_text="lower: the package no longer leaves PC6",
            kind="consistency",
            note="Follows from the core-only exit (92 us worst, median an estimate) against PC6+CC6 (133).",
        ),
        _check(
            id="pc6-disabled-pc6-reached",
            source=SOURCE_PC6,
            metric="Pkg%pc6 with PC6 allowed",
            metric_ref=M_PKG_PC6,
            mode="value",
            role="pc6",
            accept=(5.0, None),
            tolerance="above 5%",
            published_text="a mostly idle server reaches PC6",
            kind="predicted",
        ),
        _check(
            id="pc6-disabled-pc6-gone",
            source=SOURCE_PC6,
            metric="Pkg%pc6 with the limit at PC2",
            metric_ref=M_PKG_PC6,
            mode="value",
            role="pc2",
            accept=(0.0, 0.0),
            tolerance="exactly 0",
            published_text="none",
            kind="consistency",
            note="The limit forbids it.",
        ),
        _check(
            id="pc6-disabled-pc2-grows",
            source=SOURCE_PC6,
            metric="Pkg%pc2, PC2 vs PC6 limit",
            metric_ref=M_PKG_PC2,
            mode="diff",
            baseline="pc6",
            role="pc2",
            accept=(1.0, None),
            tolerance="at least 1 percentage point more",
            published_text="PC6 time becomes PC2 time",
            kind="predicted",
        ),
        _check(
            id="pc6-disabled-pkgwatt",
            source=SOURCE_PC6,
            metric="PkgWatt, PC2 vs PC6 limit",
            metric_ref=M_PKG_WATT,
            mode="change_pct",
            baseline="pc6",
            role="pc2",
            accept=(1e-6, None),
            tolerance="any increase",
            published_text="higher",
            kind="consistency",
            note="Follows from the uncore power estimates (PC2 above PC6).",
        ),
    )
    return Scenario(
        name="pc6-disabled-skx",
        title="Package C6 disabled in the BIOS on Skylake Xeon (skx)",
        description=(
            "The same idle two-socket skx with the package C-state limit at PC6 and at PC2. With PC6 not "
            "allowed intel_idle registers C6 as 92/276 us instead of 133/600 (the table's figure includes "
            "the PC6 exit): C6 exits get faster, package C6 residency goes to zero and package power rises."
        ),
        source=SOURCE_PC6,
        roles=roles,
        metrics=(
            M_C6_TABLE,
            M_C6_EXIT,
            M_WAKE_MEAN,
            M_WAKE_P99,
            M_CPU_C6,
            M_PKG_PC2,
            M_PKG_PC6,
            M_PKG_WATT,
            M_BUSY,
        ),
        checks=checks,
        charts=("hardware", "residency", "latency_cdf"),
        details=(
            "A C6 exit is drawn from the state the core and package really reached: with the package in PC6, "
            "the table's PC6+CC6 figure (133 us worst case, median an estimate); with only the core in C6, "
            "the core's 92 us (wult, 99.99th percentile, commit 64233338). PC6 has system scope on Xeon: "
            "every core of both sockets must be in CC6. Package entry times and uncore power are estimates."
        ),
    )


def _smt_sibling() -> Scenario:
    # skx: 24 cores x 2 threads per socket; thread 1 of core k on socket s is CPU 48 s + 24 + k.
    second_threads = [s * 48 + 24 + k for s in range(2) for k in range(24)]
    light = _merge(_IDLE_SKX, wakeups={"interrupts": {"rate_hz": 50, "work_us": 10}})
    roles = (
        Role("both-idle", "Both threads of every core idle", light),
        Role(
            "sibling-busy",
            "One thread of every core runs a CPU-bound task, the other idles",
            _merge(light, wakeups={"busy_cpus": second_threads}),
        ),
    )
    checks = (
        _check(
            id="smt-os-c6-stays",
            source=SOURCE_SMT,
            metric="OS C6 residency of the idle threads",
            metric_ref=M_IDLE_THREAD_C6,
            mode="change_pct",
            baseline="both-idle",
            role="sibling-busy",
            accept=(-10.0, None),
            tolerance="within 10% of the all-idle figure",
            published_text="unchanged: cpuidle sees its own thread only",
            kind="predicted",
        ),
        _check(
            id="smt-core-c6-collapses",
            source=SOURCE_SMT,
            metric="CPU%c6 with a busy sibling",
            metric_ref=M_CPU_C6,
            mode="value",
            role="sibling-busy",
            accept=(0.0, 1.0),
            tolerance="below 1%",
            published_text="near zero: the core stays in C0",
            kind="predicted",
        ),
        _check(
            id="smt-pc6-collapses",
            source=SOURCE_SMT,
            metric="Pkg%pc6 with busy siblings",
            metric_ref=M_PKG_PC6,
            mode="value",
            role="sibling-busy",
            accept=(0.0, 0.0),
            tolerance="exactly 0",
            published_text="none: no core reaches CC6",
            kind="predicted",
        ),
        _check(
            id="smt-c1-shows-it",
            source=SOURCE_SMT,
            metric="CPU%c1 (turbostat, per thread) with busy siblings",
            metric_ref=M_CPU_C1,
            mode="diff",
            baseline="both-idle",
            role="sibling-busy",
            accept=(20.0, None),
            tolerance="at least 20 percentage points more",
            published_text="the idle threads show up as c1",
            kind="predicted",
        ),
        _check(
            id="smt-wake-faster",
            source=SOURCE_SMT,
            metric="mean WakeLatency with busy siblings",
            metric_ref=M_WAKE_MEAN,
            mode="change_pct",
            baseline="both-idle",
            role="sibling-busy",
            accept=(None, -50.0),
            tolerance="at least 50% lower",
            published_text="lower: a thread whose core stayed in C0 exits like C1",
            kind="predicted",
        ),
    )
    return Scenario(
        name="smt-sibling",
        title="A busy SMT sibling: the OS says C6, the core says C0",
        description=(
            "A two-socket skx with one thread of every core running a CPU-bound task, against all threads "
            "idle. cpuidle's per-thread view barely changes (the idle threads still request C6), while the "
            "cores never reach CC6 and the packages never reach PC2 or PC6: turbostat shows the idle threads "
            "in CPU%c1, and their wake-ups are C1 exits."
        ),
        source=SOURCE_SMT,
        roles=roles,
        metrics=(
            M_IDLE_THREAD_C6,
            M_CPU_C1,
            M_CPU_C6,
            M_PKG_PC2,
            M_PKG_PC6,
            M_PKG_WATT,
            M_WAKE_MEAN,
            M_WAKE_P99,
        ),
        checks=checks,
        charts=("hardware", "residency", "latency_cdf"),
        details=(
            "A core is in the shallowest C-state its threads request; a thread whose core is held in C0 by "
            "its sibling exits like C1. With SMT on, skx's C6 (an IBRS state) also writes SPEC_CTRL before "
            "and after MWAIT (intel_idle_ibrs()): costs.spec_ctrl_write_ns, an estimate, on entry and exit."
        ),
    )


def scenarios() -> list[Scenario]:
    return [_pc6_disabled(), _smt_sibling()]
