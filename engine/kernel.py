"""The compiled event loop: every CPU's idle periods, wake paths and wake-up sends, in time order.

Everything here works on plain arrays prepared by `engine.simulate` (which documents them) so
that numba compiles it once (`cache=True`); with NUMBA_DISABLE_JIT=1 the same code runs as
Python, slowly, and gives the same numbers. Times are integer ns.

A tournament tree holds each CPU's next event. A CPU is either running (C0: handlers, work,
wake-up sends, idle-loop entry) or idle in a state; arrivals while running extend its work.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine.governors import (
    G_LAST_RES,
    G_TICK_WAKEUP,
    GOV_ORACLE,
    INF,
    note_rejected,
    poll_time_ns,
    reflect,
    select_state,
)
from engine.jit import compiled
from engine.streams import exponential, lognormal

# Each layout below is declared once, in order: the names are numbered by their place.

# Per-CPU integer state: columns of `cs`.
(
    C_MODE,  # 0 running, 1 idle
    C_BUSY_UNTIL,
    C_FREE_AT,  # running code again (end of the wake path): later interrupts are taken from here
    C_STATE,
    C_IDLE_START,  # cpuidle_enter_state()'s time_start
    C_MWAIT_AT,  # the wait itself starts (after the state's entry cost)
    C_TICK_STOPPED,
    C_TICK_NEXT,
    C_IRQ_PTR,
    C_IRQ_NEXT,  # the next device interrupt (irq_t[C_IRQ_PTR]), INF when there is none
    C_SEND_PTR,
    C_SSEND_PTR,
    C_INC_PTR,
    C_SIGNAL_AT,  # a wake-up signal (IPI or monitored-line write) reaches this CPU
    C_SIGNAL_TYPE,  # 0 interrupt, 1 monitored-line write (no interrupt)
    C_WOKENUP_AT,  # mwait_rfc: when the sender's WOKENUP store lands
    C_STUCK,
    C_POLL_DEADLINE,
    C_QLEN,
    C_Q_OWNER,  # last writer of the call-queue line
    C_CSD_OWNER,  # last writer of this CPU's csd line (the CPU that ran its previous call)
    C_CSD_FREE_AT,  # csd unlocked at (INF while the previous call is pending)
    C_WORD_OWNER,  # the idle word's line: holder in M state, -1 when shared
    C_WORD_VER,
    C_WORD_READER,
    C_POLL_CLEAR_AT,  # the polling flag is cleared at this time after a wake
    C_SPIN_FROM,  # csd_lock() spinning since (INF: not spinning)
    C_SEND_NOT_BEFORE,  # after a csd_lock() spin: the call goes on from here
    C_SPUN_NS,  # csd_lock() spin to charge to the call that was waiting
    C_EV_KIND,
    C_EV_ARG,
    C_SOCKET,  # the CPU's socket
    C_HW_LEVEL,  # the core C-state level this thread requests while idle (0: C0); see Hw
    C_HW_START,  # when its wait started (MWAIT reached), for the core and package accounting
    C_NOHZ_FULL,  # 1 on a `nohz_full` CPU (tick.nohz_full)
    C_IN_LLC,  # 1 while this thread's core is in a core C-state that flushed L1 and L2 (see Hw)
    C_RCU_UNTIL,  # RCU callbacks queued here wait for their grace period until then (rcu_needs_cpu())
    C_RCU_NOCB,  # 1 on an `rcu_nocbs` CPU: its callbacks are offloaded and never keep the tick
    N_CPU_COLS,
) = range(39)

# Event kinds (C_EV_KIND).
EV_BUSY_END, EV_TIMER, EV_TICK, EV_IRQ, EV_SIGNAL, EV_POLL_TIMEOUT, EV_SEND, EV_SSEND = range(8)

# Float parameters: entries of `fp`.
(
    P_TSC_GHZ,
    P_LINE_SAME,
    P_LINE_OTHER,
    P_SETUP_CYC,
    P_APIC_SAME_CYC,
    P_APIC_OTHER_CYC,
    P_DELIVERY,
    P_IRQ_ENTRY,
    P_EXIT_HK,
    P_ENTRY_HK,
    P_DIRECT_SAVING,
    P_SCHED_SWITCH,
    P_TICK_HANDLER,
    P_IRQ_HANDLER,
    P_IRQ_WORK,
    P_IPI_FUNC,
    P_SCHED_WORK,
    P_LLC_HIT,  # a line served from the LLC, same socket (CostModel.llc_hit())
    N_FP,
) = range(19)

# Integer parameters: entries of `ip` (read-only in the loop).
(
    I_GOV,
    I_FIXED_IDX,
    I_LAT_REQ,
    I_TICK_NS,
    I_NOHZ,
    I_MECH,
    I_READ_FIRST,
    I_IRQS_OFF,
    I_POLL_LIMIT,
    I_IRQ_WORK_EXP,
    I_SCHED_WORK_EXP,
    I_TL_CPUS,
    I_TL_END,
    I_T_END,
    I_IS_POLL0,
    I_MAX_SLEEP,
    I_PKG_DEEP,  # the package state whose exit the table's deepest figures include (-1: not allowed)
    I_GOV_VARIANT,  # the governor's release: its behaviour codes (engine.governors.cpuidle.pack_variant)
    I_POLL_CHECK_NS,  # poll_idle() reads the clock once per this many ns (POLL_IDLE_RELAX_COUNT loops)
    I_C1_DEMOTION,  # 1: the firmware demotes requests deeper than core C1 after short stays
    I_RCU_GP_NS,  # tick.rcu_grace_period_us in ns (0: no RCU callbacks modelled)
    N_IP,
) = range(22)

MECH_IPI, MECH_RFC, MECH_TIF = range(3)

# Counters: entries of `ctr`; a pair is indexed by socket locality (+0 same, +1 other).
(
    K_EVENTS,
    K_WAKEUPS,
    K_REQ,
    K_DEFERRED,
    K_COALESCED,
    K_IPI_SENT,
    K_AVOIDED,
    K_SREQ,
    K_SIPI_SENT,
    K_SAVOIDED,
    K_LT_SENDER,
    K_LT_TARGET,
    K_LT_SAME,  # +1: other socket
    _K_LT_OTHER,
    K_STUCK,
    K_CSD_WAIT,
    K_TL,
    K_Q_OVERFLOW,
    K_LOC_CALLS,  # +loc
    _K_LOC_CALLS_OTHER,
    K_LOC_IDLE,
    _K_LOC_IDLE_OTHER,
    K_LOC_BUSY,
    _K_LOC_BUSY_OTHER,
    K_LOC_IPIS,
    _K_LOC_IPIS_OTHER,
    K_SELECTS,  # governor selections (cpuidle_select() calls)
    K_SELECTS_TICK_STOPPED,  # of which with the tick already stopped
    K_RESCHED_EXITS,  # idle-loop exits on NEED_RESCHED (do_idle() -> tick_nohz_idle_exit())
    K_RESCHED_EXITS_STOPPED,  # of which left the tick stopped (nohz_full CPUs)
    K_LT_LLC,  # line transfers served from the LLC: the last writer's core had flushed its caches
    N_CTR,
) = range(32)

# The sender cost's parts (SENDER_PARTS in order), summed per (locality, target idle or busy).
PART_SETUP, PART_CSD_WAIT, PART_LINES, PART_APIC, N_PARTS = range(5)

# Float sums: entries of `fsum`; pairs by locality, then the parts' block.
(
    F_LOC_CYC,  # +loc
    _F_LOC_CYC_OTHER,
    F_LOC_IDLE_CYC,
    _F_LOC_IDLE_CYC_OTHER,
    F_LOC_BUSY_CYC,
    _F_LOC_BUSY_CYC_OTHER,
    F_STUCK_NS,
    F_PARTS,  # + (2 * loc + busy) * N_PARTS + part
) = range(8)
N_FSUM = F_PARTS + 4 * N_PARTS

# Latency sources (rows of the sample buffer), as in engine.result.LATENCY_SOURCES.
L_WAKE, L_INTR, L_TIMER, L_IRQ, L_IPI, L_SCHED = range(6)
# Per-state sums: rows of `ssum`.
S_WAKE_SUM, S_WAKE_N, S_INTR_SUM, S_INTR_N, S_EXIT_SUM, S_EXIT_N = range(6)
# Per-CPU per-state counters: first index of `st`.
ST_USAGE, ST_TIME, ST_ABOVE, ST_BELOW, ST_REJECTED, ST_RESIDENT, N_ST = range(7)

Q_CAP = 64
Z_9999 = 3.719016485455709  # standard normal quantile of 0.9999


# ------------------------------------------------------------------------------- the arrays

class Cpus(NamedTuple):
    """What changes per CPU as the run goes: the kernel's working state."""

    cs: np.ndarray  # (cpu, C_*) integer state
    queue: np.ndarray  # the event queue (new_queue)
    g: np.ndarray  # (cpu, governor column): each governor's per-CPU data
    q_t: np.ndarray  # (cpu, Q_CAP) call queue: when each entry was queued
    q_kind: np.ndarray  # 0 function call, 1 task wake-up
    q_src: np.ndarray  # the CPU that queued it
    seen: np.ndarray  # (reader, cpu): the version of cpu's idle word that reader last read
    rng: np.ndarray  # each CPU's own generator (engine.streams)
    spinners: np.ndarray  # (1,) senders released from csd_lock() spinning, not yet rescheduled


class Table(NamedTuple):
    """Per-state figures of the platform table, with this run's overrides (index = state)."""

    res_ns: np.ndarray  # target residency
    exit_ns: np.ndarray  # exit latency: the table's worst case
    enabled: np.ndarray
    irq_on: np.ndarray  # entered with interrupts enabled (CPUIDLE_FLAG_IRQ_ENABLE, or POLL)
    direct_saving: np.ndarray  # what taking the interrupt in the state saves the woken task
    entry_ns: np.ndarray  # from the start of the state to the wait itself
    exit_extra_ns: np.ndarray  # after the wait, before the state returns (SPEC_CTRL restore)
    # Exit latency distributions by row: row s is state s as the table describes it (package in
    # its deepest state where the figure includes it), row S + s the same state reached by the
    # core alone (its package shallower: SKX C6 92 us, not 133).
    median_ns: np.ndarray  # exit latency median
    sigma: np.ndarray  # exit latency log-normal shape
    exit_quantiles: np.ndarray  # (row, step): the exit latency's quantiles (streams.lognormal_table)


class Hw(NamedTuple):
    """Core and package C-states beneath the OS view.

    A thread idle in state s requests level `level[s]` (a depth rank, `Platform.request_levels()`:
    0 POLL, then deeper states higher) from the time its wait starts (C_HW_START) to its wake
    event. A core is at the shallowest of its threads' levels while all of them wait (one to four
    threads); a module or package state j holds while every core of its group (the module, the
    package, or the whole system for Xeon PC6) is at level >= pk_level[j]. Each interval starts
    at the latest of its members' starts (starts may lie a little ahead of the event being
    processed: taking the latest keeps them exact) and is counted when its first member leaves.
    """

    level: np.ndarray  # (state,) core level requested
    level_row: np.ndarray  # (level,) exit row of a thread whose core only reached that level
    state_row: np.ndarray  # (state,) exit row of the state reached by its core alone
    core_of: np.ndarray  # (cpu,) global core index
    siblings: np.ndarray  # (cpu, threads - 1, at least 1) the core's other threads, -1 padded
    core_level: np.ndarray  # (core,) its level while every thread is in a wait, else 0
    core_since: np.ndarray  # (core,) since when (the later of its threads' starts)
    core_time: np.ndarray  # (core, level) closed time at exactly that level
    thread_idle: np.ndarray  # (cpu,) closed time with a core C-state requested (not C0)
    pk_level: np.ndarray  # (pkg state,) core level every core of the group must be at
    pk_min: np.ndarray  # (1,) the lowest of them (past any level when there are none)
    pk_entry: np.ndarray  # (pkg state,) from the last core's arrival to the package state
    pk_group: np.ndarray  # (pkg state, core) the core's group for that state
    pk_lo: np.ndarray  # (pkg state, group) the group's cores are pk_lo..pk_hi-1
    pk_hi: np.ndarray
    pk_cnt: np.ndarray  # (pkg state, group) cores at >= pk_level
    pk_since: np.ndarray
    pk_time: np.ndarray
    pk_out_at: np.ndarray  # (pkg state, group) when the package's last exit from it completes
    flush_level: np.ndarray  # (1,) the lowest core level that flushes L1 and L2 (core C3 and deeper)


class Arrivals(NamedTuple):
    """Everything that arrives from outside the model: timers and the pre-drawn streams."""

    tm_next: np.ndarray  # (timer, cpu): next expiry, INF where not armed
    tm_period: np.ndarray  # 0: the timer's expiries are drawn in advance (tm_seq_t), not periodic
    tm_handler: np.ndarray
    tm_work: np.ndarray
    tm_keeps_tick: np.ndarray  # (timer,) 1: seen by tick_nohz_next_event() (timer wheel, or no high-res)
    tm_seq_t: np.ndarray  # drawn expiries of every such timer and CPU, back to back
    tm_seq_ptr: np.ndarray  # (timer, cpu): the expiry after tm_next in tm_seq_t
    tm_seq_end: np.ndarray  # (timer, cpu): the end of its expiries
    irq_t: np.ndarray  # device interrupts of all CPUs back to back; CPU c's from irq_off[c]
    irq_work: np.ndarray  # each one's work after the handler (ns); -1: drawn as P_IRQ_WORK says
    irq_off: np.ndarray
    snd_t: np.ndarray  # no-wait calls each CPU makes: request time, target, offsets
    snd_dst: np.ndarray
    snd_off: np.ndarray
    ssnd_t: np.ndarray  # task wake-ups each CPU makes
    ssnd_dst: np.ndarray
    ssnd_off: np.ndarray
    inc_t: np.ndarray  # for the oracle: the requests each CPU will receive, by target
    inc_off: np.ndarray


class Stats(NamedTuple):
    """The counters and samples a result is built from."""

    st: np.ndarray  # (ST_*, cpu, state): cpuidle's per-state counters
    ssum: np.ndarray  # (S_*, state): latency sums
    lat_buf: np.ndarray  # latency samples of every source back to back; source j's from lat_off[j]
    lat_off: np.ndarray
    lat_cnt: np.ndarray
    ctr: np.ndarray  # K_* counters
    fsum: np.ndarray  # F_* float sums
    tl: np.ndarray  # timeline rows (cpu, start, end, state)
    lat_state: np.ndarray  # the state each L_WAKE and L_INTR sample woke from, at its lat_buf index


# ------------------------------------------------------------------------------------------ random


@compiled(inline=True)
def _exp_draw(rng: np.ndarray, c: int, mean_ns: float, is_exponential: bool) -> int:
    if mean_ns <= 0.0:
        return 0
    if not is_exponential:
        return int(mean_ns)
    return int(exponential(rng, c, mean_ns))


@compiled(inline=True)
def _exit_draw(rng: np.ndarray, c: int, tab: Table, row: int) -> int:
    """Log-normal exit latency: the median as given, the worst case at the 99.99th percentile."""
    median = tab.median_ns[row]
    if median <= 0.0:
        return 0
    if tab.sigma[row] <= 0.0:
        return int(median)
    return int(lognormal(rng, c, tab.exit_quantiles, row, median, tab.sigma[row]))


# ------------------------------------------------------------------------ cores and packages


@compiled(inline=True)
def _exit_row(cs: np.ndarray, hw: Hw, ip: np.ndarray, c: int, s: int, t: int) -> int:
    """Which exit distribution a thread waking at t from state s draws from: that of the state
    its core really reached (a sibling in C0 or a shallower state holds the core there), and for
    the deepest states whether the package is in the package state the table's figure includes.
    A request the firmware demoted to core C1 exits like C1."""
    lv = hw.level[s]
    if 0 < cs[c, C_HW_LEVEL] < lv:
        return hw.level_row[cs[c, C_HW_LEVEL]]
    if lv > 0:
        # The shallowest of the other threads' requests holds the core there (C0 if one runs).
        other = lv
        for k in range(hw.siblings.shape[1]):
            sib = hw.siblings[c, k]
            if sib >= 0:
                other = min(other, cs[sib, C_HW_LEVEL] if cs[sib, C_HW_START] <= t else 0)
        if other < lv:
            return hw.level_row[other]
    j = ip[I_PKG_DEEP]
    if j >= 0 and lv >= hw.pk_level[j]:
        g = hw.pk_group[j, hw.core_of[c]]
        if hw.pk_cnt[j, g] == hw.pk_hi[j, g] - hw.pk_lo[j, g] and hw.pk_since[j, g] <= t:
            return s
    return hw.state_row[s]


@compiled(inline=True)
def _exit_latency(
    cs: np.ndarray, hw: Hw, ip: np.ndarray, tab: Table, rng: np.ndarray, c: int, s: int, t: int, mw: int
) -> int:
    """Thread c's exit latency from state s at t. The first waker of a package in the package
    state the table's figure includes takes it out, paying the whole figure; a core of that package
    waking while it is still leaving (or at the same time) gets the core-only exit but cannot run
    before the package is out."""
    row = _exit_row(cs, hw, ip, c, s, t)
    x = _exit_draw(rng, c, tab, row) + tab.exit_extra_ns[s]
    j = ip[I_PKG_DEEP]
    if j >= 0 and hw.level[s] >= hw.pk_level[j]:
        g = hw.pk_group[j, hw.core_of[c]]
        t0 = max(t, mw)
        if row == s:
            hw.pk_out_at[j, g] = t0 + x
        elif hw.pk_out_at[j, g] > t0:
            x = max(x, hw.pk_out_at[j, g] - t0)
    return x


@compiled(inline=True)
def _hw_enter(cs: np.ndarray, hw: Hw, c: int, lv: int, start: int) -> None:
    """Thread c requests core level lv from `start` (its wait begins): with its siblings idle (or
    none), the core is at the shallowest of their levels from the latest of their starts."""
    cs[c, C_HW_LEVEL] = lv
    cs[c, C_HW_START] = start
    level, since = lv, start
    for k in range(hw.siblings.shape[1]):
        sib = hw.siblings[c, k]
        if sib >= 0:
            level = min(level, cs[sib, C_HW_LEVEL])
            since = max(since, cs[sib, C_HW_START])
    if level == 0:
        return
    core = hw.core_of[c]
    hw.core_level[core] = level
    hw.core_since[core] = since
    if level >= hw.flush_level[0]:
        _mark_in_llc(cs, hw, c, 1)
    if level < hw.pk_min[0]:
        return
    for j in range(hw.pk_level.shape[0]):
        if level >= hw.pk_level[j]:
            g = hw.pk_group[j, core]
            m = hw.pk_cnt[j, g] + 1
            hw.pk_cnt[j, g] = m
            if m == hw.pk_hi[j, g] - hw.pk_lo[j, g]:
                latest = since
                for o in range(hw.pk_lo[j, g], hw.pk_hi[j, g]):
                    latest = max(latest, hw.core_since[o])
                hw.pk_since[j, g] = latest + hw.pk_entry[j]


@compiled(inline=True)
def _mark_in_llc(cs: np.ndarray, hw: Hw, c: int, value: int) -> None:
    """Thread c's core flushed its caches (1) or is running again (0): for all its threads."""
    cs[c, C_IN_LLC] = value
    for k in range(hw.siblings.shape[1]):
        sib = hw.siblings[c, k]
        if sib >= 0:
            cs[sib, C_IN_LLC] = value


@compiled(inline=True)
def _hw_leave(cs: np.ndarray, hw: Hw, c: int, t: int, t_out: int) -> None:
    """Thread c's wake event at t: close its request at t_out (its thread is out of the C-state,
    the hardware exit done), and its core's and packages' intervals at t."""
    lv = cs[c, C_HW_LEVEL]
    if lv == 0:
        return
    cs[c, C_HW_LEVEL] = 0
    hw.thread_idle[c] += max(t_out - cs[c, C_HW_START], 0)
    core = hw.core_of[c]
    level = hw.core_level[core]
    if level == 0:
        return
    hw.core_level[core] = 0
    hw.core_time[core, level] += max(t - hw.core_since[core], 0)
    if level >= hw.flush_level[0]:
        _mark_in_llc(cs, hw, c, 0)
    if level < hw.pk_min[0]:
        return
    for j in range(hw.pk_level.shape[0]):
        if level >= hw.pk_level[j]:
            g = hw.pk_group[j, core]
            if hw.pk_cnt[j, g] == hw.pk_hi[j, g] - hw.pk_lo[j, g]:
                hw.pk_time[j, g] += max(t - hw.pk_since[j, g], 0)
            hw.pk_cnt[j, g] -= 1


# ------------------------------------------------------------------------------- the event queue
# A tournament tree over the CPUs' next events: leaf P + c (P, a power of four >= the CPU count)
# holds CPU c's key, (time << CPU_BITS) | c with the time capped at T_CAP (past any run), and
# every inner node the smaller of its two children. The root is the next event, ties going to
# the lower CPU; changing a CPU's event replays the log2(P) matches on its leaf's path, with no
# data-dependent branch (a binary heap's sifting took ~40% of the loop).
CPU_BITS = 10  # config.MAX_CPUS = 512 fits
CPU_MASK = (1 << CPU_BITS) - 1
T_CAP = 1 << 52
NO_CPU = (1 << 63) - 1  # the key of a leaf with no CPU behind it


def new_queue(n_cpus: int) -> np.ndarray:
    """An event queue for n_cpus CPUs, none of them scheduled yet."""
    bits = max(n_cpus - 1, 0).bit_length()
    leaves = 1 << (bits + (bits & 1))  # a power of 4, so _queue_set climbs two levels per turn
    return np.full(2 * leaves, NO_CPU, dtype=np.int64)


@compiled(inline=True)
def _queue_set(queue: np.ndarray, c: int, t: int) -> None:
    i = queue.shape[0] // 2 + c
    key = (min(t, T_CAP) << CPU_BITS) | c
    queue[i] = key
    while i > 1:
        key = min(key, queue[i ^ 1])
        i >>= 1
        queue[i] = key
        key = min(key, queue[i ^ 1])
        i >>= 1
        queue[i] = key


# ---------------------------------------------------------------------------------- per-CPU events


@compiled(inline=True)
def _take_irq(cs: np.ndarray, c: int, arr: Arrivals) -> None:
    """CPU c's next device interrupt has been taken: the one after it is next."""
    p = cs[c, C_IRQ_PTR] + 1
    cs[c, C_IRQ_PTR] = p
    cs[c, C_IRQ_NEXT] = arr.irq_t[p] if p < arr.irq_off[c + 1] else INF


@compiled(inline=True)
def _irq_work(cs: np.ndarray, c: int, arr: Arrivals, rng: np.ndarray, fp: np.ndarray, ip: np.ndarray) -> int:
    """The work after CPU c's current device interrupt: its own when the load drew it."""
    w = arr.irq_work[cs[c, C_IRQ_PTR]]
    if w >= 0:
        return int(w)
    return _exp_draw(rng, c, fp[P_IRQ_WORK], ip[I_IRQ_WORK_EXP] == 1)


@compiled(inline=True)
def _rearm_timer(arr: Arrivals, k: int, c: int, t: int) -> None:
    """Timer k of CPU c expired at t: its next expiry, a period later or the next one drawn."""
    period = arr.tm_period[k]
    if period > 0:
        arr.tm_next[k, c] += period * ((t - arr.tm_next[k, c]) // period + 1)
        return
    p = arr.tm_seq_ptr[k, c]
    arr.tm_next[k, c] = arr.tm_seq_t[p] if p < arr.tm_seq_end[k, c] else INF
    arr.tm_seq_ptr[k, c] = p + 1


@compiled(inline=True)
def _tick_after(cs: np.ndarray, c: int, t: int, tick_ns: int) -> int:
    """The first tick after t (ticks fall on multiples of tick_ns): from CPU c's next tick, which is
    usually at most one period off, without a division."""
    g = cs[c, C_TICK_NEXT]
    if g <= t < g + tick_ns:
        return g + tick_ns
    if g - tick_ns <= t < g:
        return g
    return (t // tick_ns + 1) * tick_ns


@compiled(inline=True)
def _tick_stays(
    cs: np.ndarray, c: int, t: int, tm_next: np.ndarray, tm_keeps_tick: np.ndarray, tick_ns: int
) -> bool:
    """tick_nohz_idle_stop_tick() keeps a running tick, whatever the governor asked, when the next
    timer it looks at is due within one tick period of the last jiffy (tick_nohz_next_event() in
    kernel/time/tick-sched.c: `next_tick - basemono <= TICK_NSEC`, a bail-out only while the tick
    still runs). It looks at timer-wheel timers, and at hrtimers only without high-resolution
    timers (get_next_timer_interrupt()); `tm_keeps_tick` says which. Here the last jiffy is the
    last tick boundary. rcu_needs_cpu() (RCU callbacks waiting on a CPU that does not offload
    them) makes the next event a tick away, so it keeps the tick too; irq_work and pending timer
    softirqs, the other reasons, have no source in the model."""
    if cs[c, C_TICK_STOPPED] != 0:
        return False
    if cs[c, C_RCU_UNTIL] > t and cs[c, C_RCU_NOCB] == 0:
        return True
    horizon = _tick_after(cs, c, t, tick_ns)
    for k in range(tm_next.shape[0]):
        if tm_keeps_tick[k] != 0 and tm_next[k, c] <= horizon:
            return True
    return False


@compiled(inline=True)
def _next_timer(tm_next: np.ndarray, c: int) -> tuple[int, int]:
    best = INF
    k_best = -1
    for k in range(tm_next.shape[0]):
        if tm_next[k, c] < best:
            best = tm_next[k, c]
            k_best = k
    return best, k_best


@compiled(inline=True)
def _schedule(
    cs: np.ndarray,
    queue: np.ndarray,
    c: int,
    ip: np.ndarray,
    arr: Arrivals,
) -> None:
    """Compute CPU c's next event and put it in the queue. Ties: arrivals before the end of work."""
    snd_t, snd_off, ssnd_t, ssnd_off = arr.snd_t, arr.snd_off, arr.ssnd_t, arr.ssnd_off
    t, k = _next_timer(arr.tm_next, c)
    kind = EV_TIMER
    arg = k
    if cs[c, C_TICK_STOPPED] == 0 and cs[c, C_TICK_NEXT] < t:
        t = cs[c, C_TICK_NEXT]
        kind = EV_TICK
    if cs[c, C_IRQ_NEXT] < t:
        t = cs[c, C_IRQ_NEXT]
        kind = EV_IRQ
    if cs[c, C_SIGNAL_AT] < t:
        t = cs[c, C_SIGNAL_AT]
        kind = EV_SIGNAL
    if cs[c, C_MODE] == 1:
        if cs[c, C_STATE] == 0 and ip[I_IS_POLL0] == 1 and cs[c, C_POLL_DEADLINE] < t:
            t = cs[c, C_POLL_DEADLINE]
            kind = EV_POLL_TIMEOUT
    else:
        ready = cs[c, C_FREE_AT]
        p = cs[c, C_SEND_PTR]
        if p < snd_off[c + 1] and cs[c, C_SPIN_FROM] == INF:
            ts = max(snd_t[p], ready, cs[c, C_SEND_NOT_BEFORE])
            if ts <= cs[c, C_BUSY_UNTIL] and ts < t:
                t = ts
                kind = EV_SEND
        p = cs[c, C_SSEND_PTR]
        if p < ssnd_off[c + 1]:
            ts = max(ssnd_t[p], ready)
            if ts <= cs[c, C_BUSY_UNTIL] and ts < t:
                t = ts
                kind = EV_SSEND
        if cs[c, C_BUSY_UNTIL] < t and cs[c, C_SPIN_FROM] == INF:
            t = cs[c, C_BUSY_UNTIL]
            kind = EV_BUSY_END
    cs[c, C_EV_KIND] = kind
    cs[c, C_EV_ARG] = arg
    _queue_set(queue, c, t)


@compiled()
def schedule_all(
    cs: np.ndarray,
    queue: np.ndarray,
    ip: np.ndarray,
    arr: Arrivals,
) -> None:
    """Every CPU's first event."""
    for c in range(cs.shape[0]):
        _schedule(cs, queue, c, ip, arr)


# ------------------------------------------------------------------------------ cache-line traffic


@compiled(inline=True)
def _transfer(cs: np.ndarray, ctr: np.ndarray, fp: np.ndarray, a: int, b: int, by_target: bool) -> float:
    """One coherence round trip: CPU a takes a line CPU b last wrote; its cost in TSC cycles.

    While b's core is in core C3 or deeper its L1 and L2 are flushed, so the line comes from the
    LLC with no snoop of b's core: an LLC hit on the same socket, and across sockets the remote
    transfer less the same saving. A line b's core flushed before waking again still counts as a
    core-to-core transfer (lines are not tracked between their writes): an upper bound there."""
    loc = 0 if cs[a, C_SOCKET] == cs[b, C_SOCKET] else 1
    ctr[K_LT_SAME + loc] += 1
    ctr[K_LT_TARGET if by_target else K_LT_SENDER] += 1
    ns = fp[P_LINE_SAME] if loc == 0 else fp[P_LINE_OTHER]
    if cs[b, C_IN_LLC] == 1 and a != b:
        ctr[K_LT_LLC] += 1
        ns -= fp[P_LINE_SAME] - fp[P_LLC_HIT]
    return ns * fp[P_TSC_GHZ]


@compiled(inline=True)
def _word_read(
    cs: np.ndarray,
    seen: np.ndarray,
    ctr: np.ndarray,
    fp: np.ndarray,
    r: int,
    t: int,
    by_target: bool,
) -> float:
    owner = cs[t, C_WORD_OWNER]
    if owner == r or (owner == -1 and seen[r, t] == cs[t, C_WORD_VER]):
        return 0.0
    holder = owner if owner >= 0 else cs[t, C_WORD_READER]
    cyc = _transfer(cs, ctr, fp, r, holder, by_target)
    cs[t, C_WORD_OWNER] = -1
    seen[r, t] = cs[t, C_WORD_VER]
    # The holder keeps its copy (shared): remember it as a sharer other than this reader, whose
    # copy a write by the reader must invalidate.
    cs[t, C_WORD_READER] = holder
    return cyc


@compiled(inline=True)
def _word_write(
    cs: np.ndarray,
    seen: np.ndarray,
    ctr: np.ndarray,
    fp: np.ndarray,
    w: int,
    t: int,
    by_target: bool,
) -> float:
    owner = cs[t, C_WORD_OWNER]
    cyc = 0.0
    if owner != w:
        # Pull the line exclusive, or invalidate the other sharers' copies: one round trip either
        # way, also when the writer itself holds a shared copy (it read the word first, as
        # set_nr_if_polling() does): the copy the target MONITORs is what the write must
        # invalidate to end its MWAIT.
        holder = owner if owner >= 0 else cs[t, C_WORD_READER]
        if holder == w:
            holder = -1
            if t != w and seen[t, t] == cs[t, C_WORD_VER]:
                holder = t
            else:
                for r in range(cs.shape[0]):  # rare: the writer was the sharer remembered
                    if r != w and seen[r, t] == cs[t, C_WORD_VER]:
                        holder = r
                        break
        if holder >= 0:
            cyc = _transfer(cs, ctr, fp, w, holder, by_target)
    cs[t, C_WORD_OWNER] = w
    cs[t, C_WORD_VER] += 1
    seen[w, t] = cs[t, C_WORD_VER]
    return cyc


# ------------------------------------------------------------------------------------- statistics


@compiled(inline=True)
def _sample(stats: Stats, src: int, value: int) -> None:
    i = stats.lat_cnt[src]
    if stats.lat_off[src] + i < stats.lat_off[src + 1]:
        stats.lat_buf[stats.lat_off[src] + i] = value
        stats.lat_cnt[src] = i + 1


@compiled(inline=True)
def _sample_from(stats: Stats, src: int, value: int, s: int) -> None:
    """A wake-up's L_WAKE or L_INTR sample, and the state `s` it woke from."""
    i = stats.lat_off[src] + stats.lat_cnt[src]
    if i < stats.lat_off[src + 1]:
        stats.lat_state[i] = s
    _sample(stats, src, value)


@compiled(inline=True)
def _account_idle(
    st: np.ndarray,
    c: int,
    s: int,
    start: int,
    ret: int,
    t_end: int,
    tab: Table,
) -> int:
    """cpuidle_enter_state()'s bookkeeping after the state returns; gives last_residency_ns."""
    res_ns, exit_ns, enabled = tab.res_ns, tab.exit_ns, tab.enabled
    diff = ret - start
    st[ST_USAGE, c, s] += 1
    st[ST_TIME, c, s] += diff
    st[ST_RESIDENT, c, s] += max(min(ret, t_end) - start, 0)
    n = res_ns.shape[0]
    if diff < res_ns[s]:
        for i in range(s - 1, -1, -1):
            if enabled[i]:
                st[ST_ABOVE, c, s] += 1
                break
    elif diff > exit_ns[s]:
        for i in range(s + 1, n):
            if not enabled[i]:
                continue
            if diff - exit_ns[s] >= res_ns[i]:
                st[ST_BELOW, c, s] += 1
            break
    return diff


# ---------------------------------------------------------------------------------- the call queue


@compiled(inline=True)
def _drain(
    cpus: Cpus,
    c: int,
    t: int,
    fp: np.ndarray,
    ip: np.ndarray,
    stats: Stats,
) -> tuple[int, int]:
    """flush_smp_call_function_queue() at t: run the calls, then the woken tasks.

    Returns (end of the call functions, CPU time of the woken tasks including the switch).
    """
    cs, q_t, q_kind, q_src, rng = cpus.cs, cpus.q_t, cpus.q_kind, cpus.q_src, cpus.rng
    tt = t
    func_ns = int(fp[P_IPI_FUNC])
    n = cs[c, C_QLEN]
    if n > 0 and cs[c, C_Q_OWNER] != c:
        # llist_del_all() on our call queue: the line its last writer (a sender) holds comes back.
        _transfer(cs, stats.ctr, fp, c, cs[c, C_Q_OWNER], True)
    for i in range(n):
        if q_kind[c, i] == 0:
            _sample(stats, L_IPI, tt - q_t[c, i])
            tt += func_ns
            src = q_src[c, i]
            # csd_unlock() on this CPU: the sender's csd line is now ours, and free.
            if cs[src, C_CSD_OWNER] != c:
                _transfer(cs, stats.ctr, fp, c, cs[src, C_CSD_OWNER], True)
            cs[src, C_CSD_FREE_AT] = tt
            cs[src, C_CSD_OWNER] = c
            if cs[src, C_SPIN_FROM] != INF:
                cpus.spinners[0] += 1
    tasks = 0
    switch = int(fp[P_SCHED_SWITCH])
    for i in range(n):
        if q_kind[c, i] == 1:
            _sample(stats, L_SCHED, tt + tasks + switch - q_t[c, i])
            tasks += switch + _exp_draw(rng, c, fp[P_SCHED_WORK], ip[I_SCHED_WORK_EXP] == 1)
    cs[c, C_QLEN] = 0
    cs[c, C_Q_OWNER] = c
    return tt, tasks


@compiled(inline=True)
def _call(
    cpus: Cpus,
    src: int,
    dst: int,
    t: int,
    kind: int,
    spun_cyc: float,
    fp: np.ndarray,
    ip: np.ndarray,
    stats: Stats,
    arr: Arrivals,
) -> float:
    """The sender's side of one wake-up (kind 0: no-wait smp_call_function_single, 1: ttwu).

    Returns the sender's cost in TSC cycles (csd_lock() wait included: `spun_cyc` is a wait
    already spent spinning) and posts the signal that will wake the target.

    Every path counts the line transfers of every party the same way (_word_read, _word_write):
    the locked write that wakes a target out of MWAIT pays for invalidating the copy the target
    MONITORs, also after the sender's own read of the word (set_nr_if_polling() reads, then
    cmpxchg's). Counting that transfer (once missed on the polling-flag path) gives, for the
    sender's cycles to an idle target (mainline-tif-polling's load, targets in POLL or C1, 2 x 6
    cores, one thread each), polling flag against IPI, same / other socket: skx 1928 / 2704
    against 2017 / 2365; icx 1851 / 2333 against 1915 / 2168; wsm 1570 / 1856 against 1952 / 2151.
    So on skx and icx the polling flag costs the sender more than an IPI across sockets (five
    transfers a call: two for the csd, the call queue, the read and the invalidation, against the
    IPI's three and its x2APIC write), and less on the same socket and on Westmere (cheaper
    remote lines). The RFC word's target side gains its own missed transfer (its RUNNING write
    invalidates the sender's copy of WOKENUP), not the sender's cost.

    The target's C-state (DESIGN section 6): a line whose last writer's core is in core C3 or deeper
    comes from the LLC (_transfer), so a sender pays less for a target idle in C6: skx, 2 x 4 cores,
    200 calls/s per CPU, targets mostly in C6, the idle-target line part per call same / other
    socket falls from 676 / 920 cycles (C6 disabled) to 552 / 776 under the IPI and from 955 / 1724
    to 738 / 1495 under the polling flag. The finding above stands with C6 targets too (setup +
    lines + APIC, other socket: polling flag 2395 against the IPI's 2120 cycles; same socket 1643
    against 1800). Westmere's calibration (wsm.json) counts the RFC's idle target's lines from the
    LLC, so its call setup is 899.5 cycles, not the 606.3 of the core-to-core fit. Package states:
    Xeon PC6 (and PC3 where the tables have it) needs every core of the system idle, so a running
    sender never finds it; but a per-package state (PC2 on the Xeons, PC3 on Westmere) can hold the
    target's package while the sender runs on the other socket, and then the access must first wake
    that package's uncore. No table gives that wake a figure, so it is the transfer alone there: a
    lower bound. The target's own transfers (its call-queue line back from the sender, the sender's
    csd line for csd_unlock()) are counted in _drain, as target transfers, at no cost to the sender.
    """
    cs, seen, ctr, fsum = cpus.cs, cpus.seen, stats.ctr, stats.fsum
    q_t, q_kind, q_src = cpus.q_t, cpus.q_kind, cpus.q_src
    ghz = fp[P_TSC_GHZ]
    loc = 0 if cs[src, C_SOCKET] == cs[dst, C_SOCKET] else 1
    cyc = fp[P_SETUP_CYC]
    wait_cyc = spun_cyc
    if kind == 0:
        owner = cs[src, C_CSD_OWNER]
        if owner != src:
            # csd_lock_wait() reads the flags the target wrote; csd_lock() then takes the line.
            cyc += _transfer(cs, ctr, fp, src, owner, False)
            cyc += _transfer(cs, ctr, fp, src, owner, False)
        cs[src, C_CSD_OWNER] = src
        cs[src, C_CSD_FREE_AT] = INF
    # Queue on the target's call list: one locked operation on a line its last writer holds.
    if cs[dst, C_Q_OWNER] != src:
        cyc += _transfer(cs, ctr, fp, src, cs[dst, C_Q_OWNER], False)
        cs[dst, C_Q_OWNER] = src
    was_empty = cs[dst, C_QLEN] == 0
    n = cs[dst, C_QLEN]
    if n < Q_CAP:
        q_t[dst, n] = t
        q_kind[dst, n] = kind
        q_src[dst, n] = src
        cs[dst, C_QLEN] = n + 1
    else:
        ctr[K_Q_OVERFLOW] += 1
        if kind == 0:
            cs[src, C_CSD_FREE_AT] = t  # not tracked: do not leave the sender spinning on it
    target_idle = cs[dst, C_MODE] == 1
    waiting = target_idle and t >= cs[dst, C_MWAIT_AT]
    if not was_empty:
        ctr[K_COALESCED] += 1
        if kind == 1:
            return cyc
        return _account_call(ctr, fsum, fp, loc, cyc, wait_cyc, 0.0, target_idle)

    mech = ip[I_MECH]
    send_ipi = True
    if mech == MECH_TIF:
        # set_nr_if_polling(): a plain read, then the cmpxchg only if the polling flag is set.
        # The idle loop polls from its entry (do_idle()'s __current_set_polling()) through the
        # governor's selection until call_cpuidle() clears the flag; the wait sets it again.
        selecting = target_idle and t < cs[dst, C_IDLE_START]
        polling = waiting or selecting or (not target_idle and t < cs[dst, C_POLL_CLEAR_AT])
        cyc += _word_read(cs, seen, ctr, fp, src, dst, False)
        if polling:
            cyc += _word_write(cs, seen, ctr, fp, src, dst, False)
            _post(cs, dst, t + int(cyc / ghz), 1)
            send_ipi = False
    elif mech == MECH_RFC:
        idle_word = waiting and not (cs[dst, C_STATE] == 0 and ip[I_IS_POLL0] == 1)
        if ip[I_READ_FIRST] == 1:
            cyc += _word_read(cs, seen, ctr, fp, src, dst, False)
        if idle_word or ip[I_READ_FIRST] == 0:
            # atomic_cmpxchg(IDLE -> WAKING): takes the line even when it finds RUNNING.
            cyc += _word_write(cs, seen, ctr, fp, src, dst, False)
        if idle_word:
            t_waking = t + int(cyc / ghz)
            pend = _transfer(cs, ctr, fp, src, dst, False)  # set_tsk_ipi_pending() on the idle task
            cyc += pend
            # The target spins on WAKING and pulls the word back: the WOKENUP store moves it again.
            cyc += _transfer(cs, ctr, fp, src, dst, False)
            cs[dst, C_WORD_OWNER] = src
            t_wokenup = t + int(cyc / ghz)
            cs[dst, C_STUCK] = 0
            if ip[I_IRQS_OFF] == 0:
                if t_waking < cs[src, C_IRQ_NEXT] <= t_waking + int(pend / ghz):
                    # An interrupt between WAKING and WOKENUP: the target waits for its handler.
                    stall = int(fp[P_IRQ_ENTRY] + fp[P_IRQ_HANDLER])
                    t_wokenup += stall
                    cs[dst, C_STUCK] = 1
            _post(cs, dst, t_waking, 1)
            cs[dst, C_WOKENUP_AT] = t_wokenup
            send_ipi = False
    apic_cyc = 0.0
    if send_ipi:
        apic_cyc = fp[P_APIC_SAME_CYC] if loc == 0 else fp[P_APIC_OTHER_CYC]
        cyc += apic_cyc
        flight = fp[P_DELIVERY] + (0.0 if loc == 0 else fp[P_LINE_OTHER] - fp[P_LINE_SAME])
        _post(cs, dst, t + int(cyc / ghz + flight), 0)
        if kind == 0:
            ctr[K_IPI_SENT] += 1
            ctr[K_LOC_IPIS + loc] += 1
        else:
            ctr[K_SIPI_SENT] += 1
    else:
        ctr[K_AVOIDED if kind == 0 else K_SAVOIDED] += 1
    if kind == 1:
        return cyc
    return _account_call(ctr, fsum, fp, loc, cyc, wait_cyc, apic_cyc, target_idle)


@compiled(inline=True)
def _account_call(
    ctr: np.ndarray,
    fsum: np.ndarray,
    fp: np.ndarray,
    loc: int,
    cyc: float,
    wait_cyc: float,
    apic_cyc: float,
    idle: bool,
) -> float:
    """Count one no-wait call's sender cost (`cyc` without the csd_lock() wait) and its parts."""
    total = cyc + wait_cyc
    ctr[K_LOC_CALLS + loc] += 1
    fsum[F_LOC_CYC + loc] += total
    if idle:
        ctr[K_LOC_IDLE + loc] += 1
        fsum[F_LOC_IDLE_CYC + loc] += total
    else:
        ctr[K_LOC_BUSY + loc] += 1
        fsum[F_LOC_BUSY_CYC + loc] += total
    base = F_PARTS + (2 * loc + (0 if idle else 1)) * N_PARTS
    fsum[base + PART_SETUP] += fp[P_SETUP_CYC]
    fsum[base + PART_CSD_WAIT] += wait_cyc
    fsum[base + PART_LINES] += cyc - fp[P_SETUP_CYC] - apic_cyc
    fsum[base + PART_APIC] += apic_cyc
    return total


@compiled(inline=True)
def _post(cs: np.ndarray, dst: int, t: int, signal_type: int) -> None:
    if t < cs[dst, C_SIGNAL_AT]:
        cs[dst, C_SIGNAL_AT] = t
        cs[dst, C_SIGNAL_TYPE] = signal_type


@compiled(inline=True)
def _poll_handles(cs: np.ndarray, c: int, kind: int, q_kind: np.ndarray) -> bool:
    """Whether an event may be an interrupt that wakes no task (so POLL goes on): the tick, a
    device interrupt (if its draw has no work), an IPI whose queue holds no task wake-up. Timer
    expiries wake their thread; a monitored-line write is NEED_RESCHED itself."""
    if kind == EV_TICK or kind == EV_IRQ:
        return True
    if kind != EV_SIGNAL or cs[c, C_SIGNAL_TYPE] != 0:
        return False
    for i in range(cs[c, C_QLEN]):
        if q_kind[c, i] == 1:
            return False
    return True


# ------------------------------------------------------------------------------------- the loop


@compiled()
def run_until(
    t_stop: int,
    cpus: Cpus,
    tab: Table,
    arr: Arrivals,
    stats: Stats,
    fp: np.ndarray,
    ip: np.ndarray,
    hw: Hw,
) -> None:
    """Process every event before t_stop (the caller steps t_stop to report progress)."""
    queue = cpus.queue
    while True:
        c = queue[1] & CPU_MASK
        t = queue[1] >> CPU_BITS  # the event's time, from its key (below T_CAP in any run)
        if t >= t_stop:
            break
        stats.ctr[K_EVENTS] += 1
        if cpus.cs[c, C_MODE] == 1:
            _wake_from_idle(c, t, cpus, tab, arr, stats, fp, ip, hw)
        else:
            _while_running(c, t, cpus, tab, arr, stats, fp, ip, hw)
        _schedule(cpus.cs, queue, c, ip, arr)
        if cpus.spinners[0] > 0:
            _release_spinners(cpus, ip, arr)


@compiled(inline=True)
def _wake_from_idle(
    c: int,
    t: int,
    cpus: Cpus,
    tab: Table,
    arr: Arrivals,
    stats: Stats,
    fp: np.ndarray,
    ip: np.ndarray,
    hw: Hw,
) -> None:
    """CPU c's idle period meets its event at t: the wake path, cpuidle's counters, the governor's
    reflect, and what runs after the idle loop exits (or, in POLL, a handler inside the stay)."""
    cs, g, seen, rng = cpus.cs, cpus.g, cpus.seen, cpus.rng
    irq_on, direct_saving = tab.irq_on, tab.direct_saving
    tm_handler, tm_work = arr.tm_handler, arr.tm_work
    st, ssum, ctr, fsum, tl = stats.st, stats.ssum, stats.ctr, stats.fsum, stats.tl
    tick_ns = ip[I_TICK_NS]
    t_end = ip[I_T_END]
    e_ns = int(fp[P_IRQ_ENTRY])
    h_ns = int(fp[P_EXIT_HK])
    sw_ns = int(fp[P_SCHED_SWITCH])
    mech = ip[I_MECH]
    uses_word = mech != MECH_IPI
    is_poll0 = ip[I_IS_POLL0] == 1
    kind = cs[c, C_EV_KIND]
    arg = cs[c, C_EV_ARG]
    s = cs[c, C_STATE]
    start = cs[c, C_IDLE_START]
    mw = cs[c, C_MWAIT_AT]
    poll = s == 0 and is_poll0
    if t < start and kind == EV_SIGNAL and cs[c, C_SIGNAL_TYPE] == 1:
        # NEED_RESCHED set while the idle task still polled (selection): call_cpuidle()'s
        # current_clr_polling_and_test() returns -EBUSY before the driver runs
        # (kernel/sched/idle.c). Nothing is counted (`rejected` is only a driver's
        # refusal), no reflect, last_residency_ns = 0; the signal is handled running.
        note_rejected(g, c)
        _hw_leave(cs, hw, c, t, t)  # the wait never started: an empty interval
        if mech == MECH_TIF:
            _word_write(cs, seen, ctr, fp, c, c, True)  # the clear takes the line back
        cs[c, C_MODE] = 0
        cs[c, C_BUSY_UNTIL] = start
        cs[c, C_FREE_AT] = start
        cs[c, C_POLL_CLEAR_AT] = start
        _idle_loop_exit(cs, ctr, c, start, tick_ns)
        return
    irq_work = -1
    if poll and kind != EV_POLL_TIMEOUT and _poll_handles(cs, c, kind, cpus.q_kind):
        # poll_idle() runs with interrupts on and ends only on need_resched() or its time
        # limit (drivers/cpuidle/poll_state.c): an interrupt that wakes no task is handled
        # inside the loop, its handler inside POLL's residency.
        handler = int(fp[P_TICK_HANDLER])
        if kind == EV_IRQ:
            irq_work = _irq_work(cs, c, arr, rng, fp, ip)
            handler = int(fp[P_IRQ_HANDLER])
        if irq_work <= 0:
            t_irq = max(t, mw, cs[c, C_FREE_AT]) + e_ns
            t_hend = t_irq + handler
            if kind == EV_SIGNAL:
                t_hend, _ = _drain(cpus, c, t_irq, fp, ip, stats)  # call functions only
                cs[c, C_SIGNAL_AT] = INF
            elif kind == EV_IRQ:
                _sample(stats, L_IRQ, t_irq - t)
                _take_irq(cs, c, arr)
            else:
                cs[c, C_TICK_NEXT] = _tick_after(cs, c, t, tick_ns)
                g[c, G_TICK_WAKEUP] = 1  # tick_nohz_idle_got_tick() at the next reflect
            cs[c, C_FREE_AT] = t_hend  # not a wake-up: no WakeLatency or IntrLatency sample
            # The loop checks its time limit after the handler returns.
            cs[c, C_POLL_DEADLINE] = max(cs[c, C_POLL_DEADLINE], t_hend)
            return
    x = 0
    if not poll and t >= mw:
        x = _exit_latency(cs, hw, ip, tab, rng, c, s, t, mw)
        ssum[S_EXIT_SUM, s] += x
        ssum[S_EXIT_N, s] += 1
    # The thread is not in C0 before its hardware exit ends (turbostat's Busy%: MPERF stops in a
    # C-state and through its exit); its core and package leave their states at the event (their
    # residency counters stop there), so the exit shows in the derived CPU%c1.
    hw_exit = x - tab.exit_extra_ns[s] if x > 0 else 0
    _hw_leave(cs, hw, c, t, min(t + hw_exit, t_end) if t >= mw else t)
    # Before the wait an interrupt stays pending and the state returns at once (MWAIT does
    # not sleep with one pending; POLL takes it at once): a short stay, counted as usual.
    # In POLL, one taken after a handler the loop ran for another.
    t_hw = max(t, mw) + x
    if poll:
        t_hw = max(t_hw, cs[c, C_FREE_AT])
    interrupt = kind == EV_TIMER or kind == EV_TICK or kind == EV_IRQ
    if kind == EV_SIGNAL:
        interrupt = cs[c, C_SIGNAL_TYPE] == 0
        cs[c, C_SIGNAL_AT] = INF
    handler = 0
    if kind == EV_TIMER:
        handler = tm_handler[arg]
    elif kind == EV_TICK:
        handler = int(fp[P_TICK_HANDLER])
    elif kind == EV_IRQ:
        handler = int(fp[P_IRQ_HANDLER])
    task_ns = 0  # CPU time of what runs after the idle loop exits
    wakes_task = False
    drained_end = -1
    if kind == EV_POLL_TIMEOUT:
        ret = t
        t_after = t
    elif interrupt:
        if irq_on[s]:
            t_irq = t_hw + e_ns
            if kind == EV_SIGNAL:
                t_hend, task_ns = _drain(cpus, c, t_irq, fp, ip, stats)
                drained_end = t_hend
            else:
                t_hend = t_irq + handler
            ret = t_hend  # the handler runs inside the state's residency
            t_after = ret + h_ns
            t_task = max(t_after, t_after + sw_ns - direct_saving[s])
        else:
            ret = t_hw
            t_irq = ret + h_ns + e_ns
            if kind == EV_SIGNAL:
                t_hend, task_ns = _drain(cpus, c, t_irq, fp, ip, stats)
                drained_end = t_hend
            else:
                t_hend = t_irq + handler
            t_after = t_hend
            t_task = t_after + sw_ns
        ssum[S_INTR_SUM, s] += t_irq - t
        ssum[S_INTR_N, s] += 1
        _sample_from(stats, L_INTR, t_irq - t, s)
        if kind == EV_TIMER:
            _sample(stats, L_TIMER, t_task - t)
            task_ns = (t_task - t_after) + tm_work[arg]
            wakes_task = True
        elif kind == EV_IRQ:
            _sample(stats, L_IRQ, t_irq - t)
            task_ns = irq_work  # drawn already when POLL had to know
            if task_ns < 0:
                task_ns = _irq_work(cs, c, arr, rng, fp, ip)
            wakes_task = task_ns > 0
    else:
        # Woken through the monitored line: no interrupt; RFC targets wait for WOKENUP.
        ret = t_hw
        if mech == MECH_RFC:
            if cs[c, C_WOKENUP_AT] > ret:
                if cs[c, C_STUCK] == 1:
                    ctr[K_STUCK] += 1
                    fsum[F_STUCK_NS] += cs[c, C_WOKENUP_AT] - ret
                ret = cs[c, C_WOKENUP_AT]
            _word_read(cs, seen, ctr, fp, c, c, True)
        t_after = ret + h_ns
    if kind != EV_POLL_TIMEOUT:
        wake = ret - t if interrupt and irq_on[s] else t_hw - t
        if mech == MECH_RFC and not interrupt:
            wake = ret - t
        ssum[S_WAKE_SUM, s] += wake
        ssum[S_WAKE_N, s] += 1
        _sample_from(stats, L_WAKE, wake, s)
        ctr[K_WAKEUPS] += 1
    if kind == EV_TIMER:
        _rearm_timer(arr, arg, c, t)
    elif kind == EV_IRQ:
        _take_irq(cs, c, arr)
    elif kind == EV_TICK:
        cs[c, C_TICK_NEXT] = _tick_after(cs, c, t, tick_ns)
    last_res = _account_idle(st, c, s, start, ret, t_end, tab)
    got_tick = kind == EV_TICK or g[c, G_TICK_WAKEUP] != 0  # a tick handled in POLL counts too
    reflect(ip[I_GOV], g, c, s, last_res, got_tick, kind == EV_POLL_TIMEOUT)
    if c < ip[I_TL_CPUS] and start < ip[I_TL_END] and ctr[K_TL] < tl.shape[0]:
        i = ctr[K_TL]
        tl[i, 0] = c
        tl[i, 1] = start
        tl[i, 2] = ret
        tl[i, 3] = s
        ctr[K_TL] = i + 1
    if uses_word and not (mech == MECH_RFC and poll):
        _word_write(cs, seen, ctr, fp, c, c, True)  # RUNNING / clear polling
    cs[c, C_MODE] = 0
    cs[c, C_POLL_CLEAR_AT] = t_hw
    # The idle loop's exit flushes the call queue (flush_smp_call_function_queue()).
    if drained_end < 0 and cs[c, C_QLEN] > 0 and kind != EV_POLL_TIMEOUT:
        t_d, tasks = _drain(cpus, c, t_after, fp, ip, stats)
        task_ns += (t_d - t_after) + tasks
        wakes_task = wakes_task or tasks > 0
        if cs[c, C_SIGNAL_TYPE] == 1:
            cs[c, C_SIGNAL_AT] = INF
    elif task_ns > 0 and drained_end >= 0:
        wakes_task = True
    # NEED_RESCHED ends do_idle()'s loop: a woken task, or the polling flag's wake-up itself
    # (set_nr_if_polling() sets it, whatever the queue holds). An interrupt that wakes no task
    # returns to the loop, which selects again with the tick as it was.
    if wakes_task or (kind == EV_SIGNAL and not interrupt and mech == MECH_TIF):
        _idle_loop_exit(cs, ctr, c, t_after, tick_ns)
        if ip[I_RCU_GP_NS] > 0:
            # The task queues an RCU callback (call_rcu()): it waits on this CPU for a grace period.
            cs[c, C_RCU_UNTIL] = t_after + task_ns + ip[I_RCU_GP_NS]
    cs[c, C_FREE_AT] = t_after
    cs[c, C_BUSY_UNTIL] = t_after + task_ns


@compiled(inline=True)
def _poll_timeout_after(limit_ns: int, check_ns: int) -> int:
    """poll_idle() (drivers/cpuidle/poll_state.c) reads the clock only after every
    POLL_IDLE_RELAX_COUNT + 1 = 201 cpu_relax() loops and stops at the first read more than the
    limit past its start: the time-out lands on that read, up to one period late."""
    if check_ns <= 0:
        return limit_ns
    return (limit_ns // check_ns + 1) * check_ns


@compiled(inline=True)
def _idle_loop_exit(cs: np.ndarray, ctr: np.ndarray, c: int, t: int, tick_ns: int) -> None:
    """do_idle() leaves its loop on NEED_RESCHED: tick_nohz_idle_exit() restarts a stopped tick
    (kernel/time/tick-sched.c), except on a nohz_full CPU, where __tick_nohz_full_update_tick()
    re-evaluates it and, with one task to run, it stays stopped."""
    ctr[K_RESCHED_EXITS] += 1
    if cs[c, C_TICK_STOPPED] == 1:
        if cs[c, C_NOHZ_FULL] == 1:
            ctr[K_RESCHED_EXITS_STOPPED] += 1
            return
        cs[c, C_TICK_STOPPED] = 0
        cs[c, C_TICK_NEXT] = _tick_after(cs, c, t, tick_ns)


@compiled(inline=True)
def _while_running(
    c: int,
    t: int,
    cpus: Cpus,
    tab: Table,
    arr: Arrivals,
    stats: Stats,
    fp: np.ndarray,
    ip: np.ndarray,
    hw: Hw,
) -> None:
    """CPU c is running at its event t: the end of its work (idle entry), an interrupt taken
    running, a wake-up signal, or a call or task wake-up it sends."""
    cs, queue, rng, ctr = cpus.cs, cpus.queue, cpus.rng, stats.ctr
    tm_handler, tm_work = arr.tm_handler, arr.tm_work
    snd_t, snd_dst, ssnd_dst = arr.snd_t, arr.snd_dst, arr.ssnd_dst
    tick_ns = ip[I_TICK_NS]
    e_ns = int(fp[P_IRQ_ENTRY])
    sw_ns = int(fp[P_SCHED_SWITCH])
    kind = cs[c, C_EV_KIND]
    arg = cs[c, C_EV_ARG]
    take = max(t, cs[c, C_FREE_AT])
    busy = max(cs[c, C_BUSY_UNTIL], t)
    if kind == EV_BUSY_END:
        _enter_idle(cpus, c, t, fp, ip, tab, arr, ctr, tick_ns, hw)
    elif kind == EV_TIMER:
        t_task = take + e_ns + tm_handler[arg] + sw_ns
        _sample(stats, L_TIMER, t_task - t)
        cs[c, C_BUSY_UNTIL] = busy + e_ns + tm_handler[arg] + sw_ns + tm_work[arg]
        _rearm_timer(arr, arg, c, t)
    elif kind == EV_TICK:
        cs[c, C_BUSY_UNTIL] = busy + e_ns + int(fp[P_TICK_HANDLER])
        cs[c, C_TICK_NEXT] = _tick_after(cs, c, t, tick_ns)
    elif kind == EV_IRQ:
        _sample(stats, L_IRQ, take + e_ns - t)
        work = _irq_work(cs, c, arr, rng, fp, ip)
        cs[c, C_BUSY_UNTIL] = busy + e_ns + int(fp[P_IRQ_HANDLER]) + work
        _take_irq(cs, c, arr)
    elif kind == EV_SIGNAL:
        at = take + (e_ns if cs[c, C_SIGNAL_TYPE] == 0 else 0)
        t_d, tasks = _drain(cpus, c, at, fp, ip, stats)
        cs[c, C_BUSY_UNTIL] = busy + (at - take) + (t_d - at) + tasks
        cs[c, C_SIGNAL_AT] = INF
    elif kind == EV_SEND:
        p = cs[c, C_SEND_PTR]
        free = cs[c, C_CSD_FREE_AT]
        if free == INF:
            # csd_lock(): our previous call has not run yet; spin until it has.
            cs[c, C_SPIN_FROM] = t
        elif free > t:
            # It has run by `free`: spin until then, then make the call.
            cs[c, C_BUSY_UNTIL] = busy + (free - t)
            cs[c, C_SEND_NOT_BEFORE] = free
            cs[c, C_SPUN_NS] += free - t
        else:
            if snd_t[p] < cs[c, C_FREE_AT] and snd_t[p] < t:
                ctr[K_DEFERRED] += 1
            ctr[K_REQ] += 1
            ctr[K_CSD_WAIT] += cs[c, C_SPUN_NS]
            spun = cs[c, C_SPUN_NS] * fp[P_TSC_GHZ]
            cs[c, C_SPUN_NS] = 0
            cyc = _call(cpus, c, snd_dst[p], t, 0, spun, fp, ip, stats, arr)
            cs[c, C_BUSY_UNTIL] = busy + int((cyc - spun) / fp[P_TSC_GHZ])
            cs[c, C_SEND_PTR] = p + 1
            _schedule(cs, queue, snd_dst[p], ip, arr)
    elif kind == EV_SSEND:
        p = cs[c, C_SSEND_PTR]
        ctr[K_SREQ] += 1
        cyc = _call(cpus, c, ssnd_dst[p], t, 1, 0.0, fp, ip, stats, arr)
        cs[c, C_BUSY_UNTIL] = busy + int(cyc / fp[P_TSC_GHZ])
        cs[c, C_SSEND_PTR] = p + 1
        _schedule(cs, queue, ssnd_dst[p], ip, arr)


@compiled()
def _release_spinners(cpus: Cpus, ip: np.ndarray, arr: Arrivals) -> None:
    """Senders spinning in csd_lock() whose previous call has now run may go on."""
    cs, queue = cpus.cs, cpus.queue
    cpus.spinners[0] = 0
    n = cs.shape[0]
    for src in range(n):
        if cs[src, C_SPIN_FROM] != INF and cs[src, C_CSD_FREE_AT] != INF:
            spun = max(cs[src, C_CSD_FREE_AT] - cs[src, C_SPIN_FROM], 0)
            cs[src, C_BUSY_UNTIL] = max(cs[src, C_BUSY_UNTIL], cs[src, C_SPIN_FROM]) + spun
            cs[src, C_SEND_NOT_BEFORE] = cs[src, C_CSD_FREE_AT]
            cs[src, C_SPUN_NS] += spun
            cs[src, C_SPIN_FROM] = INF
            _schedule(cs, queue, src, ip, arr)


@compiled(inline=True)
def _enter_idle(
    cpus: Cpus,
    c: int,
    t: int,
    fp: np.ndarray,
    ip: np.ndarray,
    tab: Table,
    arr: Arrivals,
    ctr: np.ndarray,
    tick_ns: int,
    hw: Hw,
) -> None:
    """do_idle() -> cpuidle_idle_call(): select a state, maybe stop the tick, enter it."""
    cs, g, seen = cpus.cs, cpus.g, cpus.seen
    inc_t, inc_off = arr.inc_t, arr.inc_off
    t_start = t + int(fp[P_ENTRY_HK])
    timer, _ = _next_timer(arr.tm_next, c)
    sleep_length = min(max(timer - t_start, 0), ip[I_MAX_SLEEP])
    tick_stopped = cs[c, C_TICK_STOPPED] == 1
    delta_tick = sleep_length
    if not tick_stopped or ip[I_NOHZ] == 0:
        delta_tick = _tick_after(cs, c, t_start, tick_ns) - t_start
    if ip[I_NOHZ] == 0:
        sleep_length = min(sleep_length, delta_tick)
    tick_stays = ip[I_NOHZ] == 1 and _tick_stays(cs, c, t_start, arr.tm_next, arr.tm_keeps_tick, tick_ns)
    if tick_stays:
        # tick_nohz_next_event() bails out (returns 0), so tick_nohz_get_sleep_length() gives the
        # governor the time to the next tick, `delta_next` (kernel/time/tick-sched.c).
        sleep_length = delta_tick
    oracle = INF
    if ip[I_GOV] == GOV_ORACLE:
        # The next wake-up this CPU will see: timers, device interrupts, signals in flight and
        # the calls other CPUs are due to make to it.
        oracle = timer
        oracle = min(oracle, cs[c, C_IRQ_NEXT])
        oracle = min(oracle, cs[c, C_SIGNAL_AT])
        p = cs[c, C_INC_PTR]
        while p < inc_off[c + 1] and inc_t[p] < t_start:
            p += 1
        cs[c, C_INC_PTR] = p
        if p < inc_off[c + 1]:
            oracle = min(oracle, inc_t[p])
        oracle = max(oracle - t_start, 0)
    idx, stop = select_state(
        ip[I_GOV], ip[I_GOV_VARIANT], g, c, tab.res_ns, tab.exit_ns, tab.enabled, ip[I_IS_POLL0] == 1,
        ip[I_LAT_REQ], sleep_length, delta_tick, tick_stopped, tick_ns, ip[I_FIXED_IDX], oracle,
        cs[c, C_NOHZ_FULL] == 1,
    )
    g[c, G_TICK_WAKEUP] = 0  # read by the governor's update above; set again by a tick in POLL
    ctr[K_SELECTS] += 1
    ctr[K_SELECTS_TICK_STOPPED] += int(tick_stopped)
    if ip[I_NOHZ] == 1 and (stop or tick_stopped) and not tick_stays:
        cs[c, C_TICK_STOPPED] = 1
    else:
        cs[c, C_TICK_STOPPED] = 0
        if cs[c, C_TICK_NEXT] <= t:
            cs[c, C_TICK_NEXT] = _tick_after(cs, c, t, tick_ns)
    cs[c, C_MODE] = 1
    cs[c, C_STATE] = idx
    cs[c, C_IDLE_START] = t_start
    cs[c, C_MWAIT_AT] = t_start + tab.entry_ns[idx]
    level = hw.level[idx]
    if ip[I_C1_DEMOTION] == 1 and level > 1 and g[c, G_LAST_RES] < tab.res_ns[idx]:
        level = 1  # C1 demotion: the core stays in C1; cpuidle still counts state idx
    if level > 0:
        _hw_enter(cs, hw, c, level, t_start + tab.entry_ns[idx])
    poll_limit = poll_time_ns(g, c, ip[I_POLL_LIMIT])
    cs[c, C_POLL_DEADLINE] = t_start + _poll_timeout_after(poll_limit, ip[I_POLL_CHECK_NS])
    mech = ip[I_MECH]
    if mech == MECH_TIF or (mech == MECH_RFC and not (idx == 0 and ip[I_IS_POLL0] == 1)):
        _word_write(cs, seen, ctr, fp, c, c, True)  # IDLE / set polling
