"""The event loop's arrays: every column, entry and row of them declared once, and the tuples
that carry them into compiled code.

Each layout is a run of names numbered by their place; numba reads these module-level integers
as constants when it compiles (changing one means compiling again, which the cache key sees).
`engine.simulate` fills the arrays and reads the counters back by these names.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Per-CPU integer state: columns of `cs`.
(
    C_MODE,  # 0 running, 1 idle
    C_BUSY_UNTIL,
    C_FREE_AT,  # running code again (end of the wake path): later interrupts are taken from here
    C_STATE,
    C_IDLE_START,  # cpuidle_enter_state()'s time_start
    C_MWAIT_AT,  # the wait itself starts (after the state's entry cost)
    C_TICK_STOPPED,  # 0 running, 1 stopped, TICK_REARMED: stopped, its timer re-armed for one jiffy
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
    C_IRQ_WORK,  # the work drawn for the next device interrupt (irq_tw[C_IRQ_PTR, 1])
    C_SEND_NEXT,  # snd_t[C_SEND_PTR], INF past the last: read by every schedule() while running
    C_SSEND_NEXT,  # ssnd_t[C_SSEND_PTR], likewise
    C_HOLD_PTR,  # the first of the load's latency holds (hold_*) not yet over at the last selection
    N_CPU_COLS,
) = range(43)

# C_TICK_STOPPED with RCU callbacks waiting on a CPU whose tick is already stopped:
# tick_nohz_next_event() takes the next event a jiffy after the last one and, the tick being
# stopped, does not bail out, so the stopped tick's timer is programmed there (one wake-up).
TICK_REARMED = 2

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


# ----------------------------------------------------------------------------------- the arrays

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
    # cpuidle_enter_state()'s above and below tests by state, their neighbours found once per run:
    # 1 when an enabled state lies below it; the next enabled state's residency above it (INF: none).
    has_shallower: np.ndarray
    deeper_res_ns: np.ndarray


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
    # (pkg state, group) cores not at >= pk_level (the state holds at 0): counting down, entering
    # and leaving compare with 0, not with the group's size
    pk_missing: np.ndarray
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
    # Device interrupts of all CPUs back to back, CPU c's from irq_off[c]: each one's time and its
    # work after the handler (ns; -1: drawn as P_IRQ_WORK says) side by side, so that taking the
    # next one reads one cache line, not one in each of two arrays.
    irq_tw: np.ndarray
    irq_off: np.ndarray
    snd_t: np.ndarray  # no-wait calls each CPU makes: request time, target, offsets
    snd_dst: np.ndarray
    snd_off: np.ndarray
    ssnd_t: np.ndarray  # task wake-ups each CPU makes
    ssnd_dst: np.ndarray
    ssnd_off: np.ndarray
    inc_t: np.ndarray  # for the oracle: the requests each CPU will receive, by target
    inc_off: np.ndarray
    # The load's latency holds (engine.load.HeldLimits): CPU c's spans from hold_off[c], each
    # holding the latency limit at hold_limit from hold_start (inclusive) to hold_end.
    hold_start: np.ndarray
    hold_end: np.ndarray
    hold_limit: np.ndarray
    hold_off: np.ndarray


class Stats(NamedTuple):
    """The counters and samples a result is built from."""

    st: np.ndarray  # (ST_*, cpu, state): cpuidle's per-state counters
    ssum: np.ndarray  # (S_*, state): latency sums
    lat_buf: np.ndarray  # latency samples of every source back to back; source j's from lat_off[j]
    lat_off: np.ndarray
    lat_at: np.ndarray  # (source,) where its next sample goes in lat_buf (its count: lat_at - lat_off)
    ctr: np.ndarray  # K_* counters
    fsum: np.ndarray  # F_* float sums
    tl: np.ndarray  # timeline rows (cpu, start, end, state)
    lat_state: np.ndarray  # the state each L_WAKE and L_INTR sample woke from, at its lat_buf index
