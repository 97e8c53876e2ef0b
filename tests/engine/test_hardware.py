"""Threads, cores and packages: hand-worked runs, and the invariants turbostat's counters obey."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given

from engine import SimConfig, custom_platform, load_platform, simulate
from engine.platforms import Param
from engine.simulate import CHUNKS, _Prepared

from .conftest import exact_state
from .test_simulate import PROPERTY_SETTINGS, run_with_internals, small_configs

US = 1_000
MS = 1_000_000

# skx's table with exact exits (median = worst case): C6 133 us with the package in PC6, 92 us
# when only the core is in C6. Everything else (costs, package states, power) is skx's.
_C6 = exact_state("C6", 133, 600, 5500).model_copy(
    update={
        "core_exit_latency_us": Param(value=92, kind="measured", source="test"),
        "core_exit_latency_median_us": Param(value=92, kind="measured", source="test"),
    }
)
EXACT = custom_platform(
    "exact", [exact_state("C1", 2, 2, entry_ns=50), exact_state("C1E", 10, 20, entry_ns=150), _C6],
    based_on=load_platform("skx"),
)
PERIOD = 12 * MS
# One wake path from C6 on a timer, with skx's costs (ns): the exit, exit housekeeping, interrupt
# entry, the timer handler, the switch to the woken thread and its work; then, back in the
# idle loop, entry housekeeping and C6's entry cost before MWAIT.
EXIT_TO_IDLE = 100 + 300 + 500 + 1000 + 20 * US
ENTRY = 600 + 5500
PC2_ENTRY, PC6_ENTRY = 2000, 15000  # skx's package entry estimates
# Traffic takes the package out of PC6 20 times a second for 30 us plus PC6's entry again (skx's
# estimates): an expected share of PC6 time, moved to PC2.
PC6_KEPT = 1 - 20 * 1e-9 * (30_000 + PC6_ENTRY)


def exact_config(threads: int = 1, limit: str = "PC6", **over: Any) -> SimConfig:
    data: dict[str, Any] = {
        "platform": "exact",
        "platform_table": EXACT.model_dump(mode="json"),
        "seed": 4,
        "duration_ms": 60,
        "topology": {"sockets": 1, "cores_per_socket": 1, "threads_per_core": threads},
        "governor": {"name": "fixed", "fixed_state": "C6"},
        "package": {"limit": limit},
        "wakeups": {
            # A 100 Hz tick, stopped while idle: the 12 ms timer is more than a tick away.
            "tick": {"hz": 100},
            "timers": [{"period_us": PERIOD / US, "cpus": [0], "handler_us": 0.5, "work_us": 20}],
            "interrupts": {"rate_hz": 0},
            "ipis": {"rate_hz": 0},
            "sched_wakeups": {"rate_hz": 0},
        },
    }
    data.update(over)
    return SimConfig.model_validate(data)


def first_expiry(config: SimConfig) -> int:
    return int(_Prepared(config).tm_next[0, 0])


@pytest.mark.parametrize(("limit", "exit_ns"), [("PC6", 133 * US), ("PC2", 92 * US)])
def test_one_core_alone_takes_its_package_down_with_it(limit: str, exit_ns: int) -> None:
    """One core, one thread, woken only by its timer: every interval worked out by hand.

    The first stay runs from MWAIT at ENTRY to the first expiry T1; each later one from
    (expiry + exit + EXIT_TO_IDLE + ENTRY) to the next expiry; the last stays open to the end.
    The package follows the core into PC2 2 us and into PC6 15 us after it reaches CC6. With
    PC6 allowed the core exits with the table's 133 us; limited to PC2, intel_idle registers
    C6 as 92/276 and the core exits with its own 92 us.
    """
    config = exact_config(limit=limit)
    t1, t_end = first_expiry(config), 60 * MS
    expiries = list(range(t1, t_end, PERIOD))
    starts = [ENTRY] + [t + exit_ns + EXIT_TO_IDLE + ENTRY for t in expiries]
    ends = [*expiries, t_end]
    cc6 = sum(e - s for s, e in zip(starts, ends, strict=True))
    stays = len(starts)

    r = simulate(config)
    c6 = next(s for s in r.states if s.name == "C6")
    assert (c6.exit_latency_us, c6.target_residency_us) == ((133, 600) if limit == "PC6" else (92, 276))
    assert r.latency["wake"].count == len(expiries)
    assert r.latency["wake"].max_ns == r.latency["wake"].p50_ns == exit_ns
    hw = r.hardware.system
    assert hw.core["CC6"] * t_end == pytest.approx(cc6, abs=1e-6)
    assert hw.core["CC0"] * t_end == pytest.approx(t_end - cc6, abs=1e-6)
    if limit == "PC6":
        pc6 = (cc6 - stays * PC6_ENTRY) * PC6_KEPT
        assert hw.package["PC6"] * t_end == pytest.approx(pc6, abs=1e-6)
        assert hw.package["PC2"] * t_end == pytest.approx(cc6 - stays * PC2_ENTRY - pc6, abs=1e-6)
    else:
        assert hw.package["PC2"] * t_end == pytest.approx(cc6 - stays * PC2_ENTRY, abs=1e-6)
        assert hw.package["PC6"] == 0.0
    assert hw.turbostat["CPU%c6"] == pytest.approx(100 * cc6 / t_end)
    # No C1: c1 = idle - c6, the hardware exits only (not C0 for Busy%, not in the C6 counter).
    assert hw.turbostat["CPU%c1"] == pytest.approx(100 * len(expiries) * exit_ns / t_end, abs=1e-9)


def test_a_busy_sibling_holds_the_core_in_c0() -> None:
    """The same thread with a sibling running a CPU-bound task: the OS still sees long C6 stays,
    but the core never leaves C0, nor the package PC0, and each exit is a C1 exit (2 us)."""
    config = exact_config(threads=2, wakeups={**exact_config().wakeups.model_dump(), "busy_cpus": [1]})
    r = simulate(config)
    os_c6 = r.per_cpu_residency[0][r.per_cpu_state_names.index("C6")]
    hw = r.hardware
    assert os_c6 > 0.95
    assert hw.system.core == {"CC0": 1.0, "CC1": 0.0, "CC1E": 0.0, "CC6": 0.0}
    assert hw.system.package == {"PC0": 1.0, "PC2": 0.0, "PC6": 0.0}
    assert r.latency["wake"].max_ns == r.latency["wake"].p50_ns == 2 * US
    # turbostat: thread 0 shows its idle time as CPU%c1 (no core c6 beneath it); thread 1 is busy.
    assert hw.per_cpu_busy[1] == 1.0
    assert hw.per_cpu_c1[0] == pytest.approx(1.0 - hw.per_cpu_busy[0]) and hw.per_cpu_c1[0] > 0.95
    assert hw.system.turbostat["CPU%c6"] == 0.0


def test_pc6_waits_for_every_core_of_every_socket() -> None:
    """Xeon PC6 has system scope: with socket 1's core busy, socket 0's package gets PC2, never PC6."""
    config = exact_config(topology={"sockets": 2, "cores_per_socket": 1, "threads_per_core": 1})
    config = SimConfig.model_validate(
        {**config.model_dump(mode="json"), "wakeups": {**config.wakeups.model_dump(), "busy_cpus": [1]}}
    )
    r = simulate(config)
    s0, s1 = r.hardware.sockets
    assert s0.core["CC6"] > 0.9 and s0.package["PC2"] > 0.9 and s0.package["PC6"] == 0.0
    assert s1.core["CC0"] == 1.0 and s1.package["PC0"] == 1.0
    # Socket 0's core exits from core C6 alone: 92 us, not the table's 133.
    assert r.latency["wake"].max_ns == 92 * US


@PROPERTY_SETTINGS
@given(small_configs())
def test_hardware_invariants(config: SimConfig) -> None:
    """turbostat's counters, on any config: each breakdown sums to 1; a core is in a core state
    no longer than each of its threads asks for it (OS residency, open stays included); a package
    is in a package state no longer than every core of its scope is deep enough."""
    run, r = run_with_internals(config)
    hw = r.hardware
    names = r.per_cpu_state_names
    levels = {s.name: s.core_level for s in run.table.states}
    for row in hw.per_core:
        assert sum(row) == pytest.approx(1.0, abs=1e-9) and min(row) >= -1e-12
    for g in [*hw.sockets, hw.system]:
        assert sum(g.core.values()) == pytest.approx(1.0, abs=1e-9)
        assert sum(g.package.values()) == pytest.approx(1.0, abs=1e-9)
        assert min(g.package.values()) >= -1e-12
    cores = run.cores
    threads = run.threads
    per_socket = cores * threads
    core_names = hw.core_states
    deep_levels = sorted({lv for lv in levels.values() if lv > 0})
    for cpu, row in enumerate(r.per_cpu_residency):
        socket, core = divmod(cpu, per_socket)
        core_row = hw.per_core[socket * cores + core % cores]
        # C0 in hardware covers at least what the OS calls busy (plus POLL, entry and exit paths).
        assert hw.per_cpu_busy[cpu] >= row[-1] - 1e-9
        for k in deep_levels:
            os_share = sum(v for name, v in zip(names, row, strict=False) if levels.get(name, 0) >= k)
            core_share = sum(
                v for name, v in zip(core_names, core_row, strict=True) if _level_of(name) >= k
            )
            assert core_share <= os_share + 1e-9
    deepest = core_names[-1]
    cc_deep = np.array([row[-1] for row in hw.per_core])
    for s, g in enumerate(hw.sockets):
        mine = cc_deep[s * cores : (s + 1) * cores]
        pkg_states = list(g.package)
        if len(pkg_states) > 1 and deepest == "CC6":
            at_least_first = sum(g.package[p] for p in pkg_states[1:])
            assert at_least_first <= mine.min() + 1e-9 or pkg_states[1] == "PC3"
        if "PC6" in g.package:
            assert g.package["PC6"] <= cc_deep.min() + 1e-9  # system scope


def _level_of(core_state: str) -> int:
    return ("CC0", "CC1", "CC1E", "CC3", "CC6", "CC7").index(core_state)


def test_chunks_change_nothing_in_the_hardware_view() -> None:
    config = exact_config(threads=2)
    run = _Prepared(config)
    for i in range(1, CHUNKS + 1):
        run.step(run.t_end * i // CHUNKS)
    assert run.result().hardware == simulate(config).hardware


@pytest.mark.parametrize("promotion", [False, True])
def test_c1e_promotion_turns_c1_requests_into_c1e(promotion: bool) -> None:
    """MSR_IA32_POWER_CTL bit 1: the OS asks for C1 and sees C1, the core goes to C1E and exits
    from it (10 us in the exact table, against C1's 2 us)."""
    fixed_c1 = {"name": "fixed", "fixed_state": "C1"}
    config = exact_config(governor=fixed_c1, hardware={"c1e_promotion": promotion})
    r = simulate(config)
    c1 = next(s for s in r.states if s.name == "C1")
    assert c1.residency > 0.9  # the OS view is the same either way
    core = r.hardware.system.core
    assert (core["CC1E"] > 0.9, core["CC1"] > 0.9) == (promotion, not promotion)
    assert r.latency["wake"].max_ns == (10 if promotion else 2) * US
    assert r.hardware.c1e_promotion is promotion


def test_traffic_takes_time_from_the_deepest_package_state_only() -> None:
    quiet = simulate(exact_config(package={"limit": "PC6", "snoop_rate_hz": 0}))
    busy = simulate(exact_config(package={"limit": "PC6", "snoop_rate_hz": 2000}))
    q, b = quiet.hardware.system, busy.hardware.system
    assert b.core == q.core  # the cores never notice
    assert b.package["PC6"] == pytest.approx(q.package["PC6"] * (1 - 2000 * 1e-9 * (30_000 + PC6_ENTRY)))
    assert b.package["PC2"] + b.package["PC6"] == pytest.approx(q.package["PC2"] + q.package["PC6"])
    assert busy.hardware.system.pkg_watts > quiet.hardware.system.pkg_watts
