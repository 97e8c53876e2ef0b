"""Threads, cores and packages: the arrays the event loop keeps them in, and the hardware view
(turbostat's columns) and energy built from them.

The event loop (`engine.kernel`, `Hw`) closes each interval of a core at a core C-state level,
and of a package group in a package state, as it ends; what is still open at the end of the
run is closed here. Power figures are per-platform estimates, overridable per run (`power`).
"""

from __future__ import annotations

import numpy as np

from engine import kernel as K
from engine.config import SimConfig
from engine.platforms import PackageState, Platform
from engine.result import Energy, Hardware, HardwareGroup

# Core levels (CState.core_level) as turbostat names them.
LEVEL_NAMES = ("CC0", "CC1", "CC1E", "CC3", "CC6", "CC7")


def hardware_arrays(config: SimConfig, table: Platform, cores: int, threads: int) -> K.Hw:
    """The event loop's core and package state for this config (everything at C0 at the start)."""
    sockets = config.topology.sockets
    n_cores = sockets * cores
    per_socket = cores * threads
    cpus = np.arange(n_cores * threads, dtype=np.int64)
    socket, rest = cpus // per_socket, cpus % per_socket
    thread, core = rest // cores, rest % cores
    core_of = socket * cores + core
    sibling = socket * per_socket + (1 - thread) * cores + core if threads == 2 else np.full_like(cpus, -1)

    level = np.array([s.core_level for s in table.states], dtype=np.int64)
    top = int(level.max())
    # A thread whose core only reached level k (always one of the table's: a core is at one of its
    # threads' levels) exits like the first state at level k, and one whose sibling holds the
    # core in C0 exits like C1 (the thread itself did stop in MWAIT).
    level_row = np.array([np.argmax(level == k) for k in range(top + 1)], dtype=np.int64)
    level_row[0] = level_row[1] if top >= 1 else 0
    # Each state's row when its core reaches the state's own level without the package state the
    # table's figure includes; with C1E promotion a C1 request reaches C1E and exits like it.
    n_states = len(level)
    state_row = n_states + np.arange(n_states, dtype=np.int64)
    if config.hardware.c1e_promotion and top >= 2 and (level == 2).any():
        promoted = level == 1
        state_row[promoted] = n_states + level_row[2]
        level = np.where(promoted, 2, level)

    allowed = _allowed_package_states(config, table)
    n_j = len(allowed)
    pk_group = np.zeros((n_j, n_cores), dtype=np.int64)
    pk_lo = np.zeros((n_j, sockets), dtype=np.int64)
    pk_hi = np.zeros((n_j, sockets), dtype=np.int64)
    for j, p in enumerate(allowed):
        if p.scope == "package":
            pk_group[j] = np.arange(n_cores) // cores
            pk_lo[j] = np.arange(sockets) * cores
            pk_hi[j] = pk_lo[j] + cores
        else:
            pk_hi[j, 0] = n_cores
    names = table.state_names()
    pk_level = np.array([level[names.index(p.requires)] for p in allowed], dtype=np.int64)
    return K.Hw(
        level=level,
        level_row=level_row,
        state_row=state_row,
        core_of=core_of,
        sibling=sibling,
        core_level=np.zeros(n_cores, dtype=np.int64),
        core_since=np.zeros(n_cores, dtype=np.int64),
        core_time=np.zeros((n_cores, top + 1), dtype=np.int64),
        thread_idle=np.zeros(len(cpus), dtype=np.int64),
        pk_level=pk_level,
        pk_min=np.array([pk_level.min() if n_j else top + 1], dtype=np.int64),
        pk_entry=np.array([int(p.entry_ns.value) for p in allowed], dtype=np.int64),
        pk_group=pk_group,
        pk_lo=pk_lo,
        pk_hi=pk_hi,
        pk_cnt=np.zeros((n_j, sockets), dtype=np.int64),
        pk_since=np.zeros((n_j, sockets), dtype=np.int64),
        pk_time=np.zeros((n_j, sockets), dtype=np.int64),
        pk_out_at=np.zeros((n_j, sockets), dtype=np.int64),
    )


def _allowed_package_states(config: SimConfig, table: Platform) -> list[PackageState]:
    if table.package is None:
        return []
    return table.package.states[: table.package_states().index(config.package.limit)]


def _close_open(hw: K.Hw, cs: np.ndarray, t_end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thread, core and package times with the intervals still open at t_end closed there."""
    thread_idle = hw.thread_idle.copy()
    core_time = hw.core_time.copy()
    pk_time = hw.pk_time.copy()
    idle = cs[:, K.C_HW_LEVEL] > 0
    thread_idle[idle] += np.maximum(t_end - cs[idle, K.C_HW_START], 0)
    down = np.flatnonzero(hw.core_level > 0)
    core_time[down, hw.core_level[down]] += np.maximum(t_end - hw.core_since[down], 0)
    size = hw.pk_hi - hw.pk_lo
    pk_full = (hw.pk_cnt == size) & (size > 0)
    pk_time[pk_full] += np.maximum(t_end - hw.pk_since[pk_full], 0)
    return thread_idle, core_time, pk_time


# turbostat reads MSR_CORE_C1_RES for CPU%c1 on these models (its `has_msr_core_c1_res`: Ice Lake-X
# and -D, Sapphire and Emerald Rapids, Granite Rapids and -D); elsewhere it derives CPU%c1 as
# 100 - Busy% - the deeper core columns.
CORE_C1_RES_PLATFORMS = frozenset({"icx", "spr", "emr", "gnr", "gnrd"})
# No RAPL before Sandy Bridge (turbostat: no PkgWatt on Nehalem and Westmere): the package power
# is reported only under its own name, pkg_watts, an estimate.
NO_RAPL_PLATFORMS = frozenset({"wsm"})


def hardware_result(
    config: SimConfig, table: Platform, hw: K.Hw, cs: np.ndarray, t_end: int, cores: int, threads: int
) -> tuple[Hardware, Energy]:
    """The turbostat view of the run and its energy."""
    sockets = config.topology.sockets
    n_cores = sockets * cores
    thread_idle, core_time, pk_time = _close_open(hw, cs, t_end)
    top = core_time.shape[1] - 1

    # Core time by level; level 0 (C0) is the rest of the run.
    exact = core_time.astype(np.float64)
    exact[:, 0] = t_end - exact[:, 1:].sum(axis=1)
    present = [0, *sorted({s.core_level for s in table.states if s.core_level > 0})]
    core_names = [LEVEL_NAMES[k] for k in present]
    per_core = exact[:, present] / t_end

    # Package shares: the allowed states nest (Platform.validate_package), so state j holds for
    # its own condition's time less the next deeper state's.
    # Every package state the platform has, as turbostat prints them: those past the limit read 0.
    pkg_names = table.package_states()
    group_of_socket = np.array(
        [[hw.pk_group[j, s * cores] for s in range(sockets)] for j in range(len(hw.pk_level))], dtype=np.int64
    ).reshape(len(hw.pk_level), sockets)
    cond = np.array(
        [[pk_time[j, group_of_socket[j, s]] for j in range(len(hw.pk_level))] for s in range(sockets)],
        dtype=np.float64,
    ).reshape(sockets, len(hw.pk_level))
    pkg = table.package
    if pkg is not None and cond.shape[1] == len(pkg.states) and cond.shape[1]:
        # Traffic pulls the package out of its deepest state now and then: each visit costs its exit
        # and the state's entry again. An expectation applied to the time, not drawn per event.
        rate = config.package.snoop_rate_hz
        rate = pkg.snoop_rate_hz.value if rate is None else rate
        lost = rate * 1e-9 * (pkg.snoop_exit_ns.value + pkg.states[-1].entry_ns.value)
        cond[:, -1] *= max(0.0, 1.0 - lost)
    deeper = np.concatenate([cond[:, 1:], np.zeros((sockets, 1))], axis=1)
    pc0 = t_end - (cond[:, 0] if cond.shape[1] else np.zeros(sockets))
    past_limit = np.zeros((sockets, len(pkg_names) - 1 - cond.shape[1]))
    pkg_exact = np.column_stack([pc0, np.maximum(cond - deeper, 0.0), past_limit])
    per_pkg = pkg_exact / t_end

    # Power: a core by its level, an uncore by its package state.
    busy_w = config.power.busy_watts if config.power.busy_watts is not None else table.busy_watts.value
    level_w = np.zeros(top + 1)
    level_w[0] = busy_w
    level_state = {}
    for k in present[1:]:
        first = next(s for s in table.states if s.core_level == k)
        level_w[k] = config.power.state_watts.get(first.name, first.power_watts.value)
        level_state[k] = first.name
    uncore_w = np.array(
        [pkg.pc0_uncore_watts.value, *(p.uncore_watts.value for p in pkg.states)] if pkg else [0.0]
    )
    for i, name in enumerate(pkg_names):
        if name in config.power.uncore_watts:
            uncore_w[i] = config.power.uncore_watts[name]
    core_j = exact * level_w[None, :] * 1e-9  # (core, level)
    uncore_j = pkg_exact * uncore_w[None, :] * 1e-9  # (socket, pkg state)
    seconds = t_end * 1e-9

    busy_thread = 1.0 - thread_idle / t_end
    deep_from = next((k for k in present if k >= 3), top + 1)  # turbostat's c1 excludes core c3 and deeper
    core_deep = exact[:, deep_from:].sum(axis=1) / t_end
    cpu_c1 = np.maximum(thread_idle / t_end - core_deep[hw.core_of], 0.0)
    if table.name in CORE_C1_RES_PLATFORMS:
        # The per-core C1 residency counter: the core's time in C1 and C1E, on each of its threads.
        c1_levels = [k for k in present if 1 <= k < deep_from]
        cpu_c1 = exact[:, c1_levels].sum(axis=1)[hw.core_of] / t_end
    deep_cols = [k for k in present if k >= 3]

    def group(sel_cores: np.ndarray, sel_sockets: np.ndarray, socket: int | None) -> HardwareGroup:
        sel_cpus = np.isin(hw.core_of, sel_cores)
        watts = (core_j[sel_cores].sum() + uncore_j[sel_sockets].sum()) / seconds
        turbostat = {
            "Busy%": 100 * float(busy_thread[sel_cpus].mean()),
            "CPU%c1": 100 * float(cpu_c1[sel_cpus].mean()),
        }
        for k in deep_cols:
            turbostat[f"CPU%c{LEVEL_NAMES[k][2:]}"] = 100 * float(exact[sel_cores, k].mean() / t_end)
        for i, name in enumerate(pkg_names[1:], start=1):
            turbostat[f"Pkg%pc{name[2:]}"] = 100 * float(per_pkg[sel_sockets, i].mean())
        if table.name not in NO_RAPL_PLATFORMS:
            # turbostat's summary row sums the packages' RAPL energy.
            turbostat["PkgWatt"] = float(watts if socket is None else watts / len(sel_sockets))
        return HardwareGroup(
            socket=socket,
            core={name: float(per_core[sel_cores, i].mean()) for i, name in enumerate(core_names)},
            package={name: float(per_pkg[sel_sockets, i].mean()) for i, name in enumerate(pkg_names)},
            turbostat=turbostat,
            pkg_watts=float(watts / len(sel_sockets)),
        )

    all_sockets = np.arange(sockets)
    hardware = Hardware(
        threads_per_core=threads,
        package_limit=config.package.limit,
        c1e_promotion=config.hardware.c1e_promotion,
        core_states=core_names,
        package_states=pkg_names,
        sockets=[group(np.arange(s * cores, (s + 1) * cores), np.array([s]), s) for s in range(sockets)],
        system=group(np.arange(n_cores), all_sockets, None),
        per_core=per_core.tolist(),
        per_cpu_busy=busy_thread.tolist(),
        per_cpu_c1=cpu_c1.tolist(),
    )
    core_total, uncore_total = float(core_j.sum()), float(uncore_j.sum())
    joules = core_total + uncore_total
    energy = Energy(
        joules=joules,
        mean_watts_per_cpu=joules / (len(hw.core_of) * seconds),
        per_state_joules={
            s.name: float(core_j[:, s.core_level].sum()) if level_state.get(s.core_level) == s.name else 0.0
            for s in table.states
        },
        busy_joules=float(core_j[:, 0].sum()),
        core_joules=core_total,
        uncore_joules=uncore_total,
        per_package_state_joules={name: float(uncore_j[:, i].sum()) for i, name in enumerate(pkg_names)},
    )
    return hardware, energy
