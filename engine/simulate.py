"""simulate(): config in, result out.

This module prepares the arrays the compiled kernel works on (arrival streams drawn up front,
one random stream per CPU and per source), steps the kernel through time chunks when the caller
wants progress, and turns the kernel's counters into a `SimResult`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np

from engine.config import SimConfig
from engine.drawn_timers import drawn_timer_rows
from engine.governors import GOVERNOR_IDS, INF, init_governor_state, releases
from engine.hardware import hardware_arrays, hardware_result
from engine.kernel import layout as K
from engine.kernel.cores import Z_9999
from engine.kernel.events import schedule_all
from engine.kernel.loop import run_until
from engine.kernel.queue import new_queue
from engine.load import TimerRow, draw_load, merge_wakeups
from engine.platforms import CState, Platform
from engine.result import (
    LATENCY_SOURCES,
    SENDER_PARTS,
    IdleLoopStats,
    IpiStats,
    LatencyFigures,
    LocalityCost,
    SimResult,
    StateStats,
    Timeline,
)
from engine.streams import (
    QUANTILE_STEPS,
    SRC_CALLS,
    SRC_IRQ,
    SRC_KERNEL,
    SRC_SCHED,
    SRC_TIMERS,
    arrival_streams,
    first_uniforms,
    lognormal_table,
    stream_seeds,
)
from engine.summary import latency_stats

ENGINE_VERSION = "0.8.0"

CPUIDLE_POLL_MIN_NS = 10_000
# With no timer queued, the governor's sleep length is capped here (a real system always has
# some timer within a few seconds).
MAX_SLEEP_NS = 4_000_000_000
CHUNKS = 50
# poll_idle() reads the clock once per POLL_IDLE_RELAX_COUNT + 1 cpu_relax() loops
# (drivers/cpuidle/poll_state.c: POLL_IDLE_RELAX_COUNT 200).
POLL_RELAX_LOOPS = 201
# cpu_relax() is PAUSE: "about 10 cycles" before Skylake, "as many as 140 cycles" from Skylake on
# (Intel 64 and IA-32 Architectures Optimization Reference Manual, "Pause Latency in Skylake
# Microarchitecture"). An estimate per platform; unknown platforms take the Skylake figure.
PAUSE_CYCLES = {"wsm": 10}
PAUSE_CYCLES_DEFAULT = 140


def engine_version() -> str:
    """The engine's version with the numpy and numba versions its bytes depend on."""
    return f"{ENGINE_VERSION}+numpy{np.__version__}+numba{numba.__version__}"


def simulate(config: SimConfig, *, progress: Callable[[float], None] | None = None) -> SimResult:
    """Run one simulation. `progress` receives the simulated fraction done (0..1)."""
    run = _Prepared(config)
    chunks = CHUNKS if progress is not None else 1  # stepping in chunks changes nothing but the reports
    for i in range(1, chunks + 1):
        run.step(run.t_end * i // chunks)
        if progress is not None:
            progress(i / chunks)
    return run.result()


def idle_counters(config: SimConfig) -> np.ndarray:
    """Run `config` and return only cpuidle's per-CPU counters: shape (4, cpus, states), rows
    usage, time (ns), above, below, as `cpuidle_enter_state()` counts them (stays still open at
    the end are not counted, as in sysfs). Skips building the result (a twin's fit needs
    thousands of these)."""
    run = _Prepared(config)
    run.step(run.t_end)
    return run.st[[K.ST_USAGE, K.ST_TIME, K.ST_ABOVE, K.ST_BELOW]].copy()


def _cpu_set(spec: str | list[int], n: int) -> np.ndarray:
    if isinstance(spec, str):  # "all", the only string the config accepts
        return np.arange(n, dtype=np.int64)
    return np.array(sorted(set(spec)), dtype=np.int64)


def _rates(rate_hz: float, cpus: str | list[int], n: int) -> np.ndarray:
    """rate_hz on the CPUs of `cpus`, 0 elsewhere."""
    out = np.zeros(n)
    out[_cpu_set(cpus, n)] = rate_hz
    return out


def _cost(config: SimConfig, table: Platform, name: str) -> float:
    override = getattr(config.costs, name)
    return float(override if override is not None else table.costs.param(name).value)


class _Prepared:
    """The kernel's arrays for one config, and the result built from them."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        table = config.resolve_platform().for_sockets(config.topology.sockets)
        table = self.table = table.under_package_limit(config.package.limit)
        # What the result says about the config itself, worked out with it: after the event
        # loop has filled the caches with its own data, the same Python ran 2-3x slower.
        self.config_hash = config.config_hash()
        self.estimates = _estimates(config, table)
        states = table.states
        n = self.n = config.n_cpus(table)
        cores = self.cores = config.cores_per_socket(table)
        threads = self.threads = config.threads_per_core(table)
        # Sockets are ranges of CPUs, alike unless the machine's differ (topology.cpus_per_socket).
        socket_of = np.repeat(np.arange(config.topology.sockets), config.socket_cpus(table)).astype(np.int64)
        self.t_end = t_end = int(round(config.duration_ms * 1e6))
        w = config.wakeups
        S = len(states)
        names = table.state_names()

        self.enabled = np.array(
            [s.name not in config.states.disabled and "CPUIDLE_FLAG_UNUSABLE" not in s.flags for s in states]
        )
        self.irq_on = np.array([_irq_on(s, config) for s in states])
        self.res_ns = np.array([int(round(s.target_residency_us * 1000)) for s in states], dtype=np.int64)
        self.exit_ns = np.array([int(round(s.exit_latency_us * 1000)) for s in states], dtype=np.int64)
        self.entry_ns = np.array([int(s.entry_cost_ns.value) for s in states], dtype=np.int64)
        # intel_idle_ibrs() clears SPEC_CTRL before MWAIT and restores it after, only with SMT on.
        ibrs = np.array([threads >= 2 and "CPUIDLE_FLAG_IBRS" in s.flags for s in states])
        spec_ctrl_ns = int(_cost(config, table, "spec_ctrl_write_ns"))
        self.exit_extra_ns = np.where(ibrs, spec_ctrl_ns, 0).astype(np.int64)
        self.entry_ns += self.exit_extra_ns
        # Exit rows: the table's figures, then each state reached by the core alone (K.Table).
        rows = [(s.hw_exit_us().value, s.median_exit_us()) for s in states]
        rows += [(s.core_exit_us().value, s.core_median_exit_us()) for s in states]
        self.median_ns = np.array([m.value * 1000 for _, m in rows], dtype=np.float64)
        self.sigma = np.array(
            [
                math.log(worst * 1000 / m) / Z_9999 if m > 0 and worst * 1000 > m else 0.0
                for (worst, _), m in zip(rows, self.median_ns, strict=True)
            ]
        )
        saving = _cost(config, table, "irq_direct_saving_ns")
        self.direct_saving = np.array(
            [int(saving) if self.irq_on[i] and not s.is_poll else 0 for i, s in enumerate(states)],
            dtype=np.int64,
        )
        is_poll0 = states[0].is_poll
        tick_ns = 1_000_000_000 // w.tick.hz

        fp = np.zeros(K.N_FP)
        fp[K.P_TSC_GHZ] = _cost(config, table, "tsc_mhz") / 1000.0
        fp[K.P_LINE_SAME] = _cost(config, table, "line_same_socket_ns")
        fp[K.P_LINE_OTHER] = _cost(config, table, "line_other_socket_ns")
        fp[K.P_LLC_HIT] = _cost(config, table, "llc_hit_ns")
        fp[K.P_SETUP_CYC] = _cost(config, table, "call_setup_cycles")
        fp[K.P_APIC_SAME_CYC] = _cost(config, table, "apic_send_same_socket_cycles")
        fp[K.P_APIC_OTHER_CYC] = _cost(config, table, "apic_send_other_socket_cycles")
        fp[K.P_DELIVERY] = _cost(config, table, "ipi_delivery_ns")
        fp[K.P_IRQ_ENTRY] = _cost(config, table, "irq_entry_ns")
        fp[K.P_EXIT_HK] = _cost(config, table, "exit_housekeeping_ns")
        fp[K.P_ENTRY_HK] = _cost(config, table, "entry_housekeeping_ns")
        fp[K.P_DIRECT_SAVING] = saving
        fp[K.P_SCHED_SWITCH] = _cost(config, table, "sched_switch_ns")
        fp[K.P_TICK_HANDLER] = w.tick.handler_us * 1000
        fp[K.P_IRQ_HANDLER] = w.interrupts.handler_us * 1000
        fp[K.P_IRQ_WORK] = w.interrupts.work_us * 1000
        fp[K.P_IPI_FUNC] = w.ipis.function_us * 1000
        fp[K.P_SCHED_WORK] = w.sched_wakeups.work_us * 1000
        self.fp = fp

        gov = config.governor.name
        enabled_idx = [i for i in range(S) if self.enabled[i]]
        fixed = config.governor.fixed_state
        fixed_idx = names.index(fixed) if fixed is not None else enabled_idx[-1]
        qos = config.states.latency_limit_us
        ip = np.zeros(K.N_IP, dtype=np.int64)
        ip[K.I_GOV] = GOVERNOR_IDS[gov]
        self.kernel = releases.resolve(gov, config.governor.kernel)
        ip[K.I_GOV_VARIANT] = self.kernel.variant
        ip[K.I_FIXED_IDX] = fixed_idx
        ip[K.I_LAT_REQ] = INF if qos is None else int(round(qos * 1000))
        ip[K.I_TICK_NS] = tick_ns
        ip[K.I_NOHZ] = int(w.tick.nohz)
        ip[K.I_MECH] = {"ipi": K.MECH_IPI, "mwait_rfc": K.MECH_RFC, "tif_polling": K.MECH_TIF}[
            config.ipi_wakeup.mechanism
        ]
        ip[K.I_READ_FIRST] = int(config.ipi_wakeup.read_before_cmpxchg)
        ip[K.I_IRQS_OFF] = int(config.ipi_wakeup.irqs_off_across_wake)
        ip[K.I_POLL_LIMIT] = _poll_limit_ns(self.res_ns, self.enabled, tick_ns)
        ip[K.I_POLL_CHECK_NS] = _poll_check_ns(table.name, fp[K.P_TSC_GHZ])
        ip[K.I_C1_DEMOTION] = int(config.hardware.c1_demotion)
        gp_us = w.tick.rcu_grace_period_us
        ip[K.I_RCU_GP_NS] = 0 if gp_us is None else int(round(gp_us * 1000))
        ip[K.I_IRQ_WORK_EXP] = int(w.interrupts.work_distribution == "exponential")
        ip[K.I_SCHED_WORK_EXP] = int(w.sched_wakeups.work_distribution == "exponential")
        ip[K.I_TL_CPUS] = min(config.output.timeline_cpus, n)
        ip[K.I_TL_END] = int(config.output.timeline_ms * 1e6)
        ip[K.I_T_END] = t_end
        ip[K.I_IS_POLL0] = int(is_poll0)
        ip[K.I_MAX_SLEEP] = MAX_SLEEP_NS
        self.ip = ip

        # Periodic timers: a random phase per timer and CPU; INF where the timer is not armed.
        # The load's timers follow (engine.load), with period 0 and their expiries drawn.
        load = draw_load(config, n, t_end)
        n_timers = len(w.timers)
        # Config timers with drawn intervals are timer rows too (period 0), in their own place.
        drawn = drawn_timer_rows(config, n, t_end)
        self.tm_next = np.full((n_timers + len(load.timers), n), INF, dtype=np.int64)
        periods = [0 if k in drawn else int(round(t.period_us * 1000)) for k, t in enumerate(w.timers)]
        periods += [0] * len(load.timers)
        handlers = [int(round(t.handler_us * 1000)) for t in w.timers] + [r.handler_ns for r in load.timers]
        works = [int(round(t.work_us * 1000)) for t in w.timers] + [r.work_ns for r in load.timers]
        self.tm_period = np.array(periods, dtype=np.int64)
        self.tm_handler = np.array(handlers, dtype=np.int64)
        self.tm_work = np.array(works, dtype=np.int64)
        # With high-resolution timers on, only timer-wheel timers keep the tick.
        wheel = [t.kind == "timer_wheel" for t in w.timers] + [r.timer_wheel for r in load.timers]
        self.tm_keeps_tick = np.array([int(k or not w.tick.highres) for k in wheel], dtype=np.int64)
        seeds = stream_seeds(config.seed, n)
        phases = first_uniforms(seeds[:, SRC_TIMERS], n_timers)
        for k, timer in enumerate(w.timers):
            if k in drawn:
                continue
            cpus = _cpu_set(timer.cpus, n)
            first = (phases[cpus, k] * self.tm_period[k]).astype(np.int64)
            self.tm_next[k, cpus] = np.where(first == 0, self.tm_period[k], first)
        timer_rows = [*sorted(drawn.items()), *((n_timers + j, r) for j, r in enumerate(load.timers))]
        self.tm_seq_t, self.tm_seq_ptr, self.tm_seq_end = _timer_sequences(self.tm_next, timer_rows)
        # Expiries of each timer row over the run, on all its CPUs (buffer sizes below).
        expiries = [
            len(drawn[k].times) + n if k in drawn else (t_end // p + 1) * n
            for k, p in enumerate(periods[:n_timers])
        ]
        expiries += [len(r.times) + n for r in load.timers]
        self.tm_expiries = np.array(expiries, dtype=np.int64)

        self.irq_t, _, self.irq_off = arrival_streams(
            seeds[:, SRC_IRQ], _rates(w.interrupts.rate_hz, w.interrupts.cpus, n), t_end
        )
        self.irq_work = np.full(len(self.irq_t), -1, dtype=np.int64)
        if len(load.wake_t):
            self.irq_t, self.irq_work, self.irq_off = merge_wakeups(self.irq_t, self.irq_off, load)
        calls, sched = w.ipis, w.sched_wakeups
        self.snd_t, self.snd_dst, self.snd_off = arrival_streams(
            seeds[:, SRC_CALLS], _rates(calls.rate_hz, calls.senders, n), t_end,
            socket_of, calls.same_socket_share, _cpu_set(calls.targets, n),
        )
        self.ssnd_t, self.ssnd_dst, self.ssnd_off = arrival_streams(
            seeds[:, SRC_SCHED], _rates(sched.rate_hz, sched.senders, n), t_end,
            socket_of, sched.same_socket_share, _cpu_set(sched.targets, n),
        )
        # What each CPU will be asked for, for the oracle governor (the only one that looks).
        if gov == "oracle":
            inc_dst = np.concatenate([self.snd_dst, self.ssnd_dst])
            inc_times = np.concatenate([self.snd_t, self.ssnd_t])
            order = np.lexsort((inc_times, inc_dst))
            self.inc_t = inc_times[order]
            self.inc_off = np.searchsorted(inc_dst[order], np.arange(n + 1)).astype(np.int64)
        else:
            self.inc_t, self.inc_off = np.empty(0, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)

        # The per-CPU kernel state.
        cs = np.zeros((n, K.N_CPU_COLS), dtype=np.int64)
        cpus = np.arange(n, dtype=np.int64)
        cs[:, K.C_TICK_NEXT] = tick_ns
        cs[:, K.C_IRQ_PTR] = self.irq_off[:-1]
        has_irq = self.irq_off[1:] > self.irq_off[:-1]
        cs[:, K.C_IRQ_NEXT] = INF
        cs[has_irq, K.C_IRQ_NEXT] = self.irq_t[self.irq_off[:-1][has_irq]]
        cs[has_irq, K.C_IRQ_WORK] = self.irq_work[self.irq_off[:-1][has_irq]]
        cs[:, K.C_SEND_PTR] = self.snd_off[:-1]
        cs[:, K.C_SSEND_PTR] = self.ssnd_off[:-1]
        sends = ((K.C_SEND_NEXT, self.snd_t, self.snd_off), (K.C_SSEND_NEXT, self.ssnd_t, self.ssnd_off))
        for col, times, off in sends:  # each CPU's first request, INF without one
            cs[:, col] = INF
            has = off[1:] > off[:-1]
            cs[has, col] = times[off[:-1][has]]
        cs[:, K.C_INC_PTR] = self.inc_off[:-1]
        cs[:, K.C_HOLD_PTR] = load.holds.off[:-1]
        cs[:, K.C_SIGNAL_AT] = INF
        cs[:, K.C_Q_OWNER] = cpus
        cs[:, K.C_SOCKET] = socket_of
        cs[w.tick.nohz_full, K.C_NOHZ_FULL] = 1
        # A nohz_full CPU running its one task has no tick (tick_nohz_full_update_tick()): it
        # enters its first idle period with the tick stopped.
        cs[w.tick.nohz_full, K.C_TICK_STOPPED] = 1
        cs[w.tick.rcu_nocbs, K.C_RCU_NOCB] = 1
        # A CPU-bound task on these CPUs for the whole run: never idle, still interrupted.
        cs[_cpu_set(w.busy_cpus, n), K.C_BUSY_UNTIL] = INF
        cs[:, K.C_CSD_OWNER] = cpus
        cs[:, K.C_WORD_OWNER] = cpus
        cs[:, K.C_WORD_READER] = cpus
        cs[:, K.C_SPIN_FROM] = INF
        self.cs = cs
        self.queue = new_queue(n)
        self.g = init_governor_state(n, S, 1 if is_poll0 else 0)
        self.q_t = np.zeros((n, K.Q_CAP), dtype=np.int64)
        self.q_kind = np.zeros((n, K.Q_CAP), dtype=np.int64)
        self.q_src = np.zeros((n, K.Q_CAP), dtype=np.int64)
        self.seen = np.full((n, n), -1, dtype=np.int64)
        np.fill_diagonal(self.seen, 0)  # each CPU holds its own idle word's line at the start
        self.rng = seeds[:, SRC_KERNEL].copy()
        self.st = np.zeros((K.N_ST, n, S), dtype=np.int64)
        self.ssum = np.zeros((K.S_EXIT_N + 1, S), dtype=np.int64)
        timer_expiries = int(self.tm_expiries.sum())
        ticks = n * (t_end // tick_ns + 2)
        arrivals = len(self.irq_t) + len(self.snd_t) + len(self.ssnd_t) + timer_expiries + ticks
        caps = [arrivals, arrivals, timer_expiries + n, len(self.irq_t), len(self.snd_t), len(self.ssnd_t)]
        self.lat_off = np.zeros(len(caps) + 1, dtype=np.int64)
        self.lat_off[1:] = np.cumsum(caps)
        self.lat_buf = np.empty(int(self.lat_off[-1]), dtype=np.int64)
        self.lat_at = self.lat_off[:-1].copy()
        # The state of each wake and intr sample (sources 0 and 1), for the per-state figures.
        self.lat_state = np.empty(int(self.lat_off[K.L_INTR + 1]), dtype=np.int8)
        self.ctr = np.zeros(K.N_CTR, dtype=np.int64)
        self.fsum = np.zeros(K.N_FSUM, dtype=np.float64)
        self.tl = np.empty((self._timeline_rows(), 4), dtype=np.int64)
        self.cpus = K.Cpus(
            cs=cs, queue=self.queue, g=self.g, q_t=self.q_t, q_kind=self.q_kind, q_src=self.q_src,
            seen=self.seen, rng=self.rng, spinners=np.zeros(1, dtype=np.int64),
        )
        exit_quantiles = np.empty((2 * S, QUANTILE_STEPS + 1))
        lognormal_table(self.median_ns, self.sigma, exit_quantiles)
        self.tab = K.Table(
            res_ns=self.res_ns, exit_ns=self.exit_ns, enabled=self.enabled, irq_on=self.irq_on,
            direct_saving=self.direct_saving, entry_ns=self.entry_ns, exit_extra_ns=self.exit_extra_ns,
            median_ns=self.median_ns, sigma=self.sigma, exit_quantiles=exit_quantiles,
            has_shallower=np.array([int(self.enabled[:i].any()) for i in range(S)], dtype=np.int64),
            deeper_res_ns=np.array(
                [next((self.res_ns[j] for j in range(i + 1, S) if self.enabled[j]), INF) for i in range(S)],
                dtype=np.int64,
            ),
        )
        self.arr = K.Arrivals(
            tm_next=self.tm_next, tm_period=self.tm_period, tm_handler=self.tm_handler, tm_work=self.tm_work,
            tm_keeps_tick=self.tm_keeps_tick,
            tm_seq_t=self.tm_seq_t, tm_seq_ptr=self.tm_seq_ptr, tm_seq_end=self.tm_seq_end,
            irq_tw=np.stack([self.irq_t, self.irq_work], axis=1), irq_off=self.irq_off,
            snd_t=self.snd_t, snd_dst=self.snd_dst,
            snd_off=self.snd_off, ssnd_t=self.ssnd_t, ssnd_dst=self.ssnd_dst, ssnd_off=self.ssnd_off,
            inc_t=self.inc_t, inc_off=self.inc_off,
            hold_start=load.holds.start, hold_end=load.holds.end, hold_limit=load.holds.limit_ns,
            hold_off=load.holds.off,
        )
        self.stats = K.Stats(
            st=self.st, ssum=self.ssum, lat_buf=self.lat_buf, lat_off=self.lat_off, lat_at=self.lat_at,
            ctr=self.ctr, fsum=self.fsum, tl=self.tl, lat_state=self.lat_state,
        )
        self.hw = hardware_arrays(config, table, cores, threads)
        # The table's deepest figures include the deepest package state only where it is allowed
        # (package states follow the module states in the kernel's arrays).
        pkg_states = len(table.package_states()) - 1
        all_allowed = pkg_states > 0 and len(table.allows(config.package.limit)) == pkg_states
        ip[K.I_PKG_DEEP] = len(self.hw.pk_level) - 1 if all_allowed else -1
        schedule_all(cs, self.queue, ip, self.arr)

    @property
    def lat_cnt(self) -> np.ndarray:
        """(source,) how many latency samples each source has."""
        return self.lat_at - self.lat_off[:-1]

    def _timeline_rows(self) -> int:
        """Room for every idle period the timeline can record.

        Each one started before the window's end and ends with a wake-up by something that
        arrives before that end (a device interrupt, tick, timer expiry, or a call or wake-up
        requested of the CPU) or with a POLL time-out; one more per CPU may still be open. A
        tight bound keeps the buffer small: a large one, freed after every run, made the
        allocator return memory to the system and fault it in again on the next run.
        """
        cpus, end = int(self.ip[K.I_TL_CPUS]), int(min(self.ip[K.I_TL_END], self.t_end))
        rows = cpus * (
            2 + end // int(self.ip[K.I_TICK_NS]) + end // int(self.ip[K.I_POLL_LIMIT])
            + sum(end // int(p) + 1 for p in self.tm_period if p > 0)
        )
        for k in np.flatnonzero(self.tm_period == 0):  # drawn expiries: count those before the end
            rows += int(np.count_nonzero(self.tm_next[k, :cpus] < end))
            for c in range(cpus):
                later = self.tm_seq_t[self.tm_seq_ptr[k, c] : self.tm_seq_end[k, c]]
                rows += int(np.searchsorted(later, end))
        for c in range(cpus):
            rows += int(np.searchsorted(self.irq_t[self.irq_off[c] : self.irq_off[c + 1]], end))
        for times, dst in ((self.snd_t, self.snd_dst), (self.ssnd_t, self.ssnd_dst)):
            rows += int(np.count_nonzero((dst < cpus) & (times < end)))
        return rows

    def step(self, t_stop: int) -> None:
        run_until(t_stop, self.cpus, self.tab, self.arr, self.stats, self.fp, self.ip, self.hw)

    # ------------------------------------------------------------------------------------ result

    def result(self) -> SimResult:
        config, table, n, t_end = self.config, self.table, self.n, self.t_end
        states = table.states
        resident = self.st[K.ST_RESIDENT].astype(np.float64)
        # CPUs still idle at the end: their open idle period counts towards residency.
        idle = np.flatnonzero(self.cs[:, K.C_MODE] == 1)
        resident[idle, self.cs[idle, K.C_STATE]] += np.maximum(t_end - self.cs[idle, K.C_IDLE_START], 0)
        per_cpu = resident / t_end
        busy_per_cpu = 1.0 - per_cpu.sum(axis=1)
        total = float(n * t_end)
        counts = self.st.sum(axis=1).tolist()  # (ST_*, state), every CPU's counters added up
        by_state = self._per_state_latency(len(states))
        state_stats = []
        for i, s in enumerate(states):
            state_stats.append(
                StateStats(
                    index=i,
                    name=s.name,
                    exit_latency_us=s.exit_latency_us,
                    target_residency_us=s.target_residency_us,
                    irq_enable=bool(self.irq_on[i]),
                    disabled=not bool(self.enabled[i]),
                    usage=counts[K.ST_USAGE][i],
                    time_ns=counts[K.ST_TIME][i],
                    residency=float(resident[:, i].sum() / total),
                    above=counts[K.ST_ABOVE][i],
                    below=counts[K.ST_BELOW][i],
                    rejected=counts[K.ST_REJECTED][i],
                    wake_latency_mean_ns=_mean(self.ssum[K.S_WAKE_SUM, i], self.ssum[K.S_WAKE_N, i]),
                    intr_latency_mean_ns=_mean(self.ssum[K.S_INTR_SUM, i], self.ssum[K.S_INTR_N, i]),
                    exit_latency_mean_ns=_mean(self.ssum[K.S_EXIT_SUM, i], self.ssum[K.S_EXIT_N, i]),
                    wake_latency=by_state[K.L_WAKE][i],
                    intr_latency=by_state[K.L_INTR][i],
                )
            )
        latency = {
            name: latency_stats(self.lat_buf[self.lat_off[j] : self.lat_off[j] + self.lat_cnt[j]])
            for j, name in enumerate(LATENCY_SOURCES)
        }
        ctr, fsum = self.ctr, self.fsum
        mech = config.ipi_wakeup.mechanism
        ipi = IpiStats(
            mechanism=mech,
            requested=int(ctr[K.K_REQ]),
            deferred=int(ctr[K.K_DEFERRED]),
            coalesced=int(ctr[K.K_COALESCED]),
            ipis_sent=int(ctr[K.K_IPI_SENT]),
            ipis_avoided=int(ctr[K.K_AVOIDED]),
            sched_requested=int(ctr[K.K_SREQ]),
            sched_ipis_sent=int(ctr[K.K_SIPI_SENT]),
            sched_ipis_avoided=int(ctr[K.K_SAVOIDED]),
            same_socket=_locality(ctr, fsum, 0),
            other_socket=_locality(ctr, fsum, 1),
            line_transfers_sender=int(ctr[K.K_LT_SENDER]),
            line_transfers_target=int(ctr[K.K_LT_TARGET]),
            line_transfers_same_socket=int(ctr[K.K_LT_SAME]),
            line_transfers_other_socket=int(ctr[K.K_LT_SAME + 1]),
            line_transfers_from_llc=int(ctr[K.K_LT_LLC]),
            stuck_wakeups=int(ctr[K.K_STUCK]),
            stuck_mean_ns=_mean(fsum[K.F_STUCK_NS], ctr[K.K_STUCK]),
            csd_wait_ns=int(ctr[K.K_CSD_WAIT]),
        )
        hardware, energy = hardware_result(config, table, self.hw, self.cs, t_end, self.cores, self.threads)
        return SimResult(
            engine_version=engine_version(),
            config_hash=self.config_hash,
            platform=table.name,
            governor=config.governor.name,
            governor_kernel=self.kernel.description,
            mechanism=mech,
            cpus=n,
            sockets=config.topology.sockets,
            duration_ns=t_end,
            events=int(ctr[K.K_EVENTS]),
            wakeups=int(ctr[K.K_WAKEUPS]),
            states=state_stats,
            busy_share=float(busy_per_cpu.sum() / n),
            per_cpu_state_names=[s.name for s in states] + ["busy"],
            per_cpu_residency=np.column_stack((per_cpu, busy_per_cpu)).tolist(),
            per_cpu_usage=self.st[K.ST_USAGE].tolist(),
            per_cpu_above=self.st[K.ST_ABOVE].tolist(),
            per_cpu_below=self.st[K.ST_BELOW].tolist(),
            latency=latency,
            ipi=ipi,
            timeline=self._timeline(),
            hardware=hardware,
            energy=energy,
            idle_loop=IdleLoopStats(
                selections=int(ctr[K.K_SELECTS]),
                selections_tick_stopped=int(ctr[K.K_SELECTS_TICK_STOPPED]),
                resched_exits=int(ctr[K.K_RESCHED_EXITS]),
                resched_exits_tick_left_stopped=int(ctr[K.K_RESCHED_EXITS_STOPPED]),
            ),
            estimates=self.estimates,
        )

    def _per_state_latency(self, n_states: int) -> dict[int, list[LatencyFigures | None]]:
        """WakeLatency and IntrLatency per state woken from (None: no wake-up from it)."""
        out: dict[int, list[LatencyFigures | None]] = {}
        for src in (K.L_WAKE, K.L_INTR):
            lo, cnt = int(self.lat_off[src]), int(self.lat_cnt[src])
            woke_from = self.lat_state[lo : lo + cnt]
            # The samples grouped by state in one pass: a stable sort of int8 is numpy's radix sort
            # (5x faster than on the same values as int64; the same permutation).
            grouped = self.lat_buf[lo : lo + cnt][np.argsort(woke_from, kind="stable")]
            ends = np.cumsum(np.bincount(woke_from, minlength=n_states))
            figures: list[LatencyFigures | None] = []
            for i in range(n_states):
                mine = grouped[(ends[i - 1] if i else 0) : ends[i]]
                stats = latency_stats(mine).model_dump(exclude={"histogram"}) if len(mine) else None
                figures.append(None if stats is None else LatencyFigures(**stats))
            out[src] = figures
        return out

    def _timeline(self) -> list[Timeline]:
        rows = self.tl[: self.ctr[K.K_TL]]
        end = min(int(self.ip[K.I_TL_END]), self.t_end)
        out = []
        for c in range(int(self.ip[K.I_TL_CPUS])):
            mine = rows[rows[:, 0] == c]
            mine = mine[np.argsort(mine[:, 1], kind="stable")]
            segments: list[list[int]] = []
            t = 0
            for _, start, stop, state in mine.tolist():
                if start >= end:
                    break
                if start > t:
                    segments.append([t, start, -1])
                segments.append([start, min(stop, end), state])
                t = min(stop, end)
            if t < end:
                last_idle = self.cs[c, K.C_MODE] == 1 and self.cs[c, K.C_IDLE_START] < end
                if last_idle and self.cs[c, K.C_IDLE_START] >= t:
                    start = int(self.cs[c, K.C_IDLE_START])
                    if start > t:
                        segments.append([t, start, -1])
                    segments.append([start, end, int(self.cs[c, K.C_STATE])])
                else:
                    segments.append([t, end, -1])
            out.append(Timeline(cpu=c, segments=segments))
        return out


def _timer_sequences(
    tm_next: np.ndarray, rows: list[tuple[int, TimerRow]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drawn timer rows (row k of tm_next, its expiries): each CPU's first expiry into tm_next,
    the rest back to back, with where each (row, CPU)'s next one and its end are."""
    n_rows, n = tm_next.shape
    ptr = np.zeros((n_rows, n), dtype=np.int64)
    end = np.zeros((n_rows, n), dtype=np.int64)
    chunks = []
    base = 0
    for k, row in rows:
        counts = np.diff(row.off)
        armed = counts > 0
        tm_next[k, armed] = row.times[row.off[:-1][armed]]
        ptr[k] = base + row.off[:-1] + 1
        end[k] = base + row.off[1:]
        chunks.append(row.times)
        base += len(row.times)
    seq = np.concatenate(chunks) if chunks else np.empty(0, dtype=np.int64)
    return seq, ptr, end


def _irq_on(state: CState, config: SimConfig) -> bool:
    if state.is_poll:
        return True
    return config.states.irq_enable.get(state.name, state.irq_enable)


def _poll_check_ns(platform: str, core_ghz: float) -> int:
    """How often poll_idle() reads the clock: 201 PAUSEs at the core clock (the TSC rate taken for it)."""
    return int(POLL_RELAX_LOOPS * PAUSE_CYCLES.get(platform, PAUSE_CYCLES_DEFAULT) / core_ghz)


def _poll_limit_ns(res_ns: np.ndarray, enabled: np.ndarray, tick_ns: int) -> int:
    """cpuidle_poll_time() (drivers/cpuidle/cpuidle.c): the target residency of the first enabled
    state after POLL whose residency is at least CPUIDLE_POLL_MIN (10 us; shorter ones are skipped),
    capped at CPUIDLE_POLL_MAX = TICK_NSEC/16, which is also the limit when no state qualifies."""
    limit = tick_ns // 16
    for i in range(1, len(res_ns)):
        if not enabled[i] or res_ns[i] < CPUIDLE_POLL_MIN_NS:
            continue
        return min(int(res_ns[i]), limit)
    return limit


def _mean(total: float, count: float) -> float | None:
    return float(total / count) if count else None


def _locality(ctr: np.ndarray, fsum: np.ndarray, loc: int) -> LocalityCost:
    return LocalityCost(
        calls=int(ctr[K.K_LOC_CALLS + loc]),
        mean_cycles=_mean(fsum[K.F_LOC_CYC + loc], ctr[K.K_LOC_CALLS + loc]) or 0.0,
        idle_target_calls=int(ctr[K.K_LOC_IDLE + loc]),
        idle_target_mean_cycles=_mean(fsum[K.F_LOC_IDLE_CYC + loc], ctr[K.K_LOC_IDLE + loc]),
        busy_target_calls=int(ctr[K.K_LOC_BUSY + loc]),
        busy_target_mean_cycles=_mean(fsum[K.F_LOC_BUSY_CYC + loc], ctr[K.K_LOC_BUSY + loc]),
        ipis_sent=int(ctr[K.K_LOC_IPIS + loc]),
        idle_target_parts_cycles=_parts(fsum, loc, 0, int(ctr[K.K_LOC_IDLE + loc])),
        busy_target_parts_cycles=_parts(fsum, loc, 1, int(ctr[K.K_LOC_BUSY + loc])),
    )


def _parts(fsum: np.ndarray, loc: int, busy: int, calls: int) -> dict[str, float] | None:
    if not calls:
        return None
    base = K.F_PARTS + (2 * loc + busy) * K.N_PARTS
    return {name: float(fsum[base + i] / calls) for i, name in enumerate(SENDER_PARTS)}


def _estimates(config: SimConfig, table: Platform) -> list[str]:
    """Every parameter of this run that is an estimate or calibrated, in words."""
    out = []
    for name in type(table.costs).model_fields:
        if getattr(config.costs, name) is not None:
            out.append(f"costs.{name}: set by this run")
            continue
        cost = table.costs.param(name)
        if cost.kind in ("estimate", "calibrated"):
            out.append(f"costs.{name} = {cost.value:g} ({cost.kind}: {cost.source})")
    for s in table.states:
        if s.is_poll:
            continue
        med = s.median_exit_us()
        if med.kind == "estimate":
            out.append(f"{s.name} median exit latency = {med.value:g} us (estimate: {med.source})")
        if s.entry_cost_ns.kind == "estimate" and s.entry_cost_ns.value:
            entry = s.entry_cost_ns
            out.append(f"{s.name} entry cost = {entry.value:g} ns (estimate: {entry.source})")
        if s.core_exit_latency_us is not None:
            core, core_med = s.core_exit_us(), s.core_median_exit_us()
            out.append(
                f"{s.name} exit with only the core in it = {core.value:g} us worst case ({core.kind}: "
                f"{core.source}), median {core_med.value:g} us ({core_med.kind})"
            )
    pause = PAUSE_CYCLES.get(table.name, PAUSE_CYCLES_DEFAULT)
    out.append(
        f"POLL reads the clock every {POLL_RELAX_LOOPS} cpu_relax() loops of {pause} cycles (estimate: PAUSE "
        f"latency, Intel optimization manual) at the TSC rate: a POLL time-out up to "
        f"{_poll_check_ns(table.name, _cost(config, table, 'tsc_mhz') / 1000.0) / 1000:.1f} us late"
    )
    if config.hardware.c1_demotion:
        out.append(
            "hardware.c1_demotion is on: a request deeper than C1 stays in core C1 when the CPU's previous "
            "stay was shorter than its target residency (estimate: the firmware's rule is not documented)"
        )
    if config.hardware.c1e_promotion:
        out.append(
            "hardware.c1e_promotion is on: C1 requests enter C1E in hardware (intel_idle turns this off "
            "on these platforms)"
        )
    if not table.family_modelled:
        out.append(
            f"{table.name}: no hardware model of this family; costs, power and package timings are "
            f"{table.modelled_on}'s estimates"
        )
    if table.package is not None:
        for p in [*table.package.module_states, *table.package.states]:
            out.append(f"{p.name} entry = {p.entry_ns.value:g} ns ({p.entry_ns.kind}: {p.entry_ns.source})")
        snoop = table.package.snoop_rate_hz
        rate = config.package.snoop_rate_hz if config.package.snoop_rate_hz is not None else snoop.value
        out.append(
            f"traffic out of the deepest package state: {rate:g} per second per package, "
            f"{table.package.snoop_exit_ns.value:g} ns each ({snoop.kind}; applied to the residency as an "
            "expectation)"
        )
        out.append(
            "core power per core C-state and uncore power per package C-state are estimates: PkgWatt "
            "is indicative only"
        )
    out.append(
        "sender cycles are TSC cycles at the nominal clock (tsc_mhz): the 2012 RFC does not say how it "
        "counted cycles, and rdtsc at the nominal clock is the likely reading"
    )
    w = config.wakeups
    out.append(
        f"handler and work times are run inputs: tick {w.tick.handler_us:g} us, device interrupt "
        f"{w.interrupts.handler_us:g} us, call function {w.ipis.function_us:g} us"
    )
    return out
