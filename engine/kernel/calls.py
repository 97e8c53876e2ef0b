"""Wake-ups sent and received: the sender's side of a call or task wake-up and its cost, the
target's call queue, and the cache-line traffic both pay for (in TSC cycles).
"""

from __future__ import annotations

import numpy as np

from engine.governors import INF
from engine.jit import compiled
from engine.kernel.layout import (
    C_CSD_FREE_AT,
    C_CSD_OWNER,
    C_IDLE_START,
    C_IN_LLC,
    C_IRQ_NEXT,
    C_MODE,
    C_MWAIT_AT,
    C_POLL_CLEAR_AT,
    C_Q_OWNER,
    C_QLEN,
    C_SIGNAL_AT,
    C_SIGNAL_TYPE,
    C_SOCKET,
    C_SPIN_FROM,
    C_STATE,
    C_STUCK,
    C_WOKENUP_AT,
    C_WORD_OWNER,
    C_WORD_READER,
    C_WORD_VER,
    F_LOC_BUSY_CYC,
    F_LOC_CYC,
    F_LOC_IDLE_CYC,
    F_PARTS,
    I_IRQS_OFF,
    I_IS_POLL0,
    I_MECH,
    I_READ_FIRST,
    I_SCHED_WORK_EXP,
    K_AVOIDED,
    K_COALESCED,
    K_IPI_SENT,
    K_LOC_BUSY,
    K_LOC_CALLS,
    K_LOC_IDLE,
    K_LOC_IPIS,
    K_LT_LLC,
    K_LT_SAME,
    K_LT_SENDER,
    K_LT_TARGET,
    K_Q_OVERFLOW,
    K_SAVOIDED,
    K_SIPI_SENT,
    L_IPI,
    L_SCHED,
    MECH_RFC,
    MECH_TIF,
    N_PARTS,
    P_APIC_OTHER_CYC,
    P_APIC_SAME_CYC,
    P_DELIVERY,
    P_IPI_FUNC,
    P_IRQ_ENTRY,
    P_IRQ_HANDLER,
    P_LINE_OTHER,
    P_LINE_SAME,
    P_LLC_HIT,
    P_SCHED_SWITCH,
    P_SCHED_WORK,
    P_SETUP_CYC,
    P_TSC_GHZ,
    PART_APIC,
    PART_CSD_WAIT,
    PART_LINES,
    PART_SETUP,
    Q_CAP,
    Arrivals,
    Cpus,
    Stats,
)
from engine.streams import exponential

# ---------------------------------------------------------------------------- draws and samples


@compiled(inline=True)
def exp_draw(rng: np.ndarray, c: int, mean_ns: float, is_exponential: bool) -> int:
    if mean_ns <= 0.0:
        return 0
    if not is_exponential:
        return int(mean_ns)
    return int(exponential(rng, c, mean_ns))


@compiled(inline=True)
def sample(stats: Stats, src: int, value: int) -> None:
    i = stats.lat_at[src]
    if i < stats.lat_off[src + 1]:
        stats.lat_buf[i] = value
        stats.lat_at[src] = i + 1


@compiled(inline=True)
def sample_from(stats: Stats, src: int, value: int, s: int) -> None:
    """A wake-up's L_WAKE or L_INTR sample, and the state `s` it woke from."""
    i = stats.lat_at[src]
    if i < stats.lat_off[src + 1]:
        stats.lat_buf[i] = value
        stats.lat_state[i] = s
        stats.lat_at[src] = i + 1


# --------------------------------------------------------------------------- cache-line traffic


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
def word_read(
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
def word_write(
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


# ------------------------------------------------------------------------------- the call queue


@compiled(inline=True)
def drain(
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
            sample(stats, L_IPI, tt - q_t[c, i])
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
            sample(stats, L_SCHED, tt + tasks + switch - q_t[c, i])
            tasks += switch + exp_draw(rng, c, fp[P_SCHED_WORK], ip[I_SCHED_WORK_EXP] == 1)
    cs[c, C_QLEN] = 0
    cs[c, C_Q_OWNER] = c
    return tt, tasks


@compiled(inline=True)
def send_wakeup(
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

    Every path counts the line transfers of every party the same way (word_read, word_write):
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
    csd line for csd_unlock()) are counted in drain, as target transfers, at no cost to the sender.
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
        cyc += word_read(cs, seen, ctr, fp, src, dst, False)
        if polling:
            cyc += word_write(cs, seen, ctr, fp, src, dst, False)
            _post(cs, dst, t + int(cyc / ghz), 1)
            send_ipi = False
    elif mech == MECH_RFC:
        idle_word = waiting and not (cs[dst, C_STATE] == 0 and ip[I_IS_POLL0] == 1)
        if ip[I_READ_FIRST] == 1:
            cyc += word_read(cs, seen, ctr, fp, src, dst, False)
        if idle_word or ip[I_READ_FIRST] == 0:
            # atomic_cmpxchg(IDLE -> WAKING): takes the line even when it finds RUNNING.
            cyc += word_write(cs, seen, ctr, fp, src, dst, False)
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
