"""Threads, cores and packages: the arrays the event loop keeps them in, and the hardware view
(turbostat's columns) and energy built from them.

The event loop (`engine.kernel`, `layout.Hw`) closes each interval of a core at a core C-state level,
and of a package group in a package state, as it ends; what is still open at the end of the
run is closed here. Power figures are per-platform estimates, overridable per run (`power`).
"""

from __future__ import annotations

import numpy as np

from engine.config import SimConfig
from engine.kernel import layout as K
from engine.platforms import CORE_CSTATES, PackageState, Platform
from engine.result import Energy, Hardware, HardwareGroup


def socket_starts(config: SimConfig, table: Platform) -> tuple[np.ndarray, np.ndarray]:
    """Each socket's first CPU and first core, the totals last: sockets are ranges of both, of
    `cpus_per_socket` where the sockets differ (with each socket's threads per core), else all alike."""
    cpus = np.array(config.socket_cpus(table), dtype=np.int64)
    cores = np.array(config.socket_cores(table), dtype=np.int64)
    zero = np.zeros(1, dtype=np.int64)
    return np.concatenate([zero, np.cumsum(cpus)]), np.concatenate([zero, np.cumsum(cores)])


def core_layout(core_threads: list[list[int]], threads: int) -> tuple[np.ndarray, np.ndarray]:
    """Each CPU's core and its core's other threads (-1 padded, at least one column), CPUs
    numbered socket by socket and within a socket thread by thread: thread t of every core that
    has it, in core order, then thread t + 1 (so with C cores of T threads, thread t of core k is
    CPU t*C + k of its socket, as `Topology` says)."""
    core_of: list[int] = []
    members: list[list[int]] = []
    for socket in core_threads:
        first_core = len(members)
        members += [[] for _ in socket]
        for t in range(max(socket)):
            for k, n in enumerate(socket):
                if n > t:
                    members[first_core + k].append(len(core_of))
                    core_of.append(first_core + k)
    siblings = np.full((len(core_of), max(threads - 1, 1)), -1, dtype=np.int64)
    for mates in members:
        for t, cpu in enumerate(mates):
            for j in range(1, len(mates)):
                siblings[cpu, j - 1] = mates[(t + j) % len(mates)]
    return np.array(core_of, dtype=np.int64), siblings


def hardware_arrays(config: SimConfig, table: Platform, cores: int, threads: int) -> K.Hw:
    """The event loop's core, module and package state for this config (everything at C0 at the start)."""
    sockets = config.topology.sockets
    cpu_first, core_first = socket_starts(config, table)
    n_cores = int(core_first[-1])
    core_of, siblings = core_layout(config.core_threads(table), threads)
    cpus = np.arange(cpu_first[-1], dtype=np.int64)

    level = np.array(table.request_levels(), dtype=np.int64)
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
    core_cstate = np.array([s.core_level for s in table.states], dtype=np.int64)
    if config.hardware.c1e_promotion and (core_cstate == 2).any() and (core_cstate == 1).any():
        c1e = int(np.argmax(core_cstate == 2))
        promoted = core_cstate == 1
        state_row[promoted] = n_states + c1e
        level = np.where(promoted, level[c1e], level)

    # Module states first, then the package states the limit allows (the kernel does not care
    # which is which; the result does).
    allowed = allowed_hardware_states(config, table)
    n_j = len(allowed)
    per_module = min(config.cores_per_module(table), cores)
    # Modules: runs of per_module cores from each socket's first core (a socket's last may be short).
    module_lo = np.concatenate(
        [np.arange(core_first[s], core_first[s + 1], per_module) for s in range(sockets)]
    ).astype(np.int64)
    socket_end = core_first[np.searchsorted(core_first, module_lo, side="right")]
    module_hi = np.minimum(module_lo + per_module, socket_end)
    n_modules = len(module_lo)
    n_groups = max(sockets, n_modules) if any(p.scope == "module" for p in allowed) else sockets
    pk_group = np.zeros((n_j, n_cores), dtype=np.int64)
    pk_lo = np.zeros((n_j, n_groups), dtype=np.int64)
    pk_hi = np.zeros((n_j, n_groups), dtype=np.int64)
    all_cores = np.arange(n_cores)
    for j, p in enumerate(allowed):
        if p.scope == "module":
            pk_group[j] = np.searchsorted(module_lo, all_cores, side="right") - 1
            pk_lo[j, :n_modules] = module_lo
            pk_hi[j, :n_modules] = module_hi
        elif p.scope == "package":
            pk_group[j] = np.searchsorted(core_first, all_cores, side="right") - 1
            pk_lo[j, :sockets] = core_first[:-1]
            pk_hi[j, :sockets] = core_first[1:]
        else:
            pk_hi[j, 0] = n_cores
    names = table.state_names()
    pk_level = np.array([level[names.index(p.requires)] for p in allowed], dtype=np.int64)
    return K.Hw(
        level=level,
        level_row=level_row,
        state_row=state_row,
        core_of=core_of,
        siblings=siblings,
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
        pk_missing=pk_hi - pk_lo,
        pk_since=np.zeros((n_j, n_groups), dtype=np.int64),
        pk_time=np.zeros((n_j, n_groups), dtype=np.int64),
        pk_out_at=np.zeros((n_j, n_groups), dtype=np.int64),
        flush_level=np.array([flush_level(table, level)], dtype=np.int64),
    )


def flush_level(table: Platform, level: np.ndarray) -> int:
    """The lowest core level whose state flushes the core's L1 and L2 to the LLC: core C3 and
    deeper on Intel (past every level when the table has none)."""
    cc3 = CORE_CSTATES.index("CC3")
    deep = [int(lv) for s, lv in zip(table.states, level, strict=True) if s.core_level >= cc3]
    return min(deep) if deep else int(level.max()) + 1


def allowed_hardware_states(config: SimConfig, table: Platform) -> list[PackageState]:
    """The module states, then the package states the package limit allows, shallow to deep."""
    if table.package is None:
        return []
    allowed = set(table.allows(config.package.limit))
    return [*table.package.module_states, *(p for p in table.package.states if p.name in allowed)]


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
    pk_full = (hw.pk_missing == 0) & (size > 0)
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
    _, core_first = socket_starts(config, table)
    n_cores = int(core_first[-1])
    thread_idle, core_time, pk_time = _close_open(hw, cs, t_end)
    top = core_time.shape[1] - 1
    ranks = table.request_levels()

    # Core time by level; level 0 (C0) is the rest of the run.
    exact = core_time.astype(np.float64)
    exact[:, 0] = t_end - exact[:, 1:].sum(axis=1)
    present = [0, *sorted({r for r in ranks if r > 0})]
    # Each level's core C-state (several levels may share one: SRF's C6S and C6SP are both CC6).
    cstate_of = {0: 0, **{r: s.core_level for r, s in zip(ranks, table.states, strict=True) if r > 0}}
    core_names = list(dict.fromkeys(CORE_CSTATES[cstate_of[k]] for k in present))
    columns = [[k for k in present if CORE_CSTATES[cstate_of[k]] == name] for name in core_names]
    if all(len(c) == 1 for c in columns):
        by_name = exact[:, present]
    else:
        by_name = np.column_stack([exact[:, c].sum(axis=1) for c in columns])
    per_core = by_name / t_end

    # Module states (first in the kernel's arrays) and package states, apart.
    allowed = allowed_hardware_states(config, table)
    n_mod = sum(1 for p in allowed if p.scope == "module")
    pkg_js = list(range(n_mod, len(allowed)))
    pkg = table.package
    # Package shares: the allowed states nest (Platform.validate_package), so state j holds for
    # its own condition's time less the next deeper state's.
    # Every package state the platform has, as turbostat prints them: those past the limit read 0.
    pkg_names = table.package_states()
    cond = np.array(
        [[pk_time[j, hw.pk_group[j, core_first[s]]] for j in pkg_js] for s in range(sockets)],
        dtype=np.float64,
    ).reshape(sockets, len(pkg_js))
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
    # A module state's share is the time its module spent in it (turbostat's Mod%c6), per module.
    mod_names = table.module_states()
    n_modules = int(hw.pk_group[0].max()) + 1 if n_mod else 0
    per_module = np.array([pk_time[j, :n_modules] / t_end for j in range(n_mod)]).reshape(n_mod, n_modules)
    module_socket = (
        np.searchsorted(core_first, hw.pk_lo[0, :n_modules], side="right") - 1
        if n_mod
        else np.zeros(0, dtype=np.int64)
    )

    # Power: a core by its level, an uncore by its package state.
    busy_w = config.power.busy_watts if config.power.busy_watts is not None else table.busy_watts.value
    level_w = np.zeros(top + 1)
    level_w[0] = busy_w
    level_state = {}
    for k in present[1:]:
        first = next(s for s, r in zip(table.states, ranks, strict=True) if r == k)
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
    # turbostat's c1 excludes core c3 and deeper
    deep_from = next((k for k in present if cstate_of[k] >= 3), top + 1)
    core_deep = exact[:, deep_from:].sum(axis=1) / t_end
    cpu_c1 = np.maximum(thread_idle / t_end - core_deep[hw.core_of], 0.0)
    if table.name in CORE_C1_RES_PLATFORMS:
        # The per-core C1 residency counter: the core's time in C1 and C1E, on each of its threads.
        c1_levels = [k for k in present if 0 < k < deep_from]
        cpu_c1 = exact[:, c1_levels].sum(axis=1)[hw.core_of] / t_end
    deep_cols = [i for i, name in enumerate(core_names) if CORE_CSTATES.index(name) >= 3]

    def group(sel_cores: np.ndarray, sel_sockets: np.ndarray, socket: int | None) -> HardwareGroup:
        sel_cpus = np.isin(hw.core_of, sel_cores)
        watts = (core_j[sel_cores].sum() + uncore_j[sel_sockets].sum()) / seconds
        turbostat = {
            "Busy%": 100 * float(busy_thread[sel_cpus].mean()),
            "CPU%c1": 100 * float(cpu_c1[sel_cpus].mean()),
        }
        for i in deep_cols:
            turbostat[f"CPU%c{core_names[i][2:]}"] = 100 * float(by_name[sel_cores, i].mean() / t_end)
        sel_modules = np.isin(module_socket, sel_sockets)
        module = {name: float(per_module[j, sel_modules].mean()) for j, name in enumerate(mod_names)}
        for name, share in module.items():
            turbostat[f"Mod%c{name[2:]}"] = 100 * share
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
            module=module,
        )

    all_sockets = np.arange(sockets)
    hardware = Hardware(
        threads_per_core=threads,
        package_limit=config.package.limit,
        c1e_promotion=config.hardware.c1e_promotion,
        core_states=core_names,
        package_states=pkg_names,
        sockets=[
            group(np.arange(core_first[s], core_first[s + 1]), np.array([s]), s) for s in range(sockets)
        ],
        system=group(np.arange(n_cores), all_sockets, None),
        per_core=per_core.tolist(),
        per_cpu_busy=busy_thread.tolist(),
        per_cpu_c1=cpu_c1.tolist(),
        module_states=mod_names if n_mod else [],
        family_modelled=table.family_modelled,
        model_note=model_note(table),
    )
    core_total, uncore_total = float(core_j.sum()), float(uncore_j.sum())
    joules = core_total + uncore_total
    rank_of = dict(zip(table.state_names(), ranks, strict=True))
    energy = Energy(
        joules=joules,
        mean_watts_per_cpu=joules / (len(hw.core_of) * seconds),
        per_state_joules={
            s.name: float(core_j[:, rank_of[s.name]].sum())
            if rank_of[s.name] > 0 and level_state.get(rank_of[s.name]) == s.name
            else 0.0
            for s in table.states
        },
        busy_joules=float(core_j[:, 0].sum()),
        core_joules=core_total,
        uncore_joules=uncore_total,
        per_package_state_joules={name: float(uncore_j[:, i].sum()) for i, name in enumerate(pkg_names)},
    )
    return hardware, energy


def model_note(table: Platform) -> str:
    """What the hardware view rests on where idlelab has no model of the platform's family."""
    if table.family_modelled:
        return ""
    if table.driver != "intel_idle":
        return (
            f"not modelled for this family: {table.name} is simulated at the OS level ({table.driver}); "
            f"its core and power figures rest on {table.modelled_on}'s estimates as stand-ins, "
            "not a model of the hardware, and it has no package C-states"
        )
    return (
        f"not modelled for this family: costs, power and package-state timings are {table.modelled_on}'s "
        "estimates (labelled in `estimates`); the C-state table itself is the kernel's"
    )
