"""The compiled event loop: every CPU's idle periods, wake paths and wake-up sends, in time order.

Everything here works on plain arrays prepared by `engine.simulate` (which documents them) so
that numba compiles it once (`cache=True`); with NUMBA_DISABLE_JIT=1 the same code runs as
Python, slowly, and gives the same numbers. Times are integer ns.

A tournament tree (`engine.kernel.queue`) holds each CPU's next event. A CPU is either running
(C0: handlers, work, wake-up sends, idle-loop entry) or idle in a state; arrivals while running
extend its work. What a wake-up sent costs is in `engine.kernel.calls`, the core and package
states beneath the OS view in `engine.kernel.cores`, the arrays' layouts in
`engine.kernel.layout`.
"""

from __future__ import annotations

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
from engine.kernel.calls import drain, sample, sample_from, send_wakeup, word_read, word_write
from engine.kernel.cores import exit_latency, hw_enter, hw_leave
from engine.kernel.events import (
    irq_work_ns,
    next_timer,
    rcu_needs_cpu,
    rearm_timer,
    schedule,
    take_irq,
    take_send,
    take_ssend,
    tick_after,
    tick_fired,
    tick_kept,
)
from engine.kernel.layout import (
    C_BUSY_UNTIL,
    C_CSD_FREE_AT,
    C_EV_ARG,
    C_EV_KIND,
    C_FREE_AT,
    C_HOLD_PTR,
    C_IDLE_START,
    C_INC_PTR,
    C_IRQ_NEXT,
    C_MODE,
    C_MWAIT_AT,
    C_NOHZ_FULL,
    C_POLL_CLEAR_AT,
    C_POLL_DEADLINE,
    C_QLEN,
    C_RCU_UNTIL,
    C_SEND_NEXT,
    C_SEND_NOT_BEFORE,
    C_SEND_PTR,
    C_SIGNAL_AT,
    C_SIGNAL_TYPE,
    C_SPIN_FROM,
    C_SPUN_NS,
    C_SSEND_PTR,
    C_STATE,
    C_STUCK,
    C_TICK_NEXT,
    C_TICK_STOPPED,
    C_WOKENUP_AT,
    EV_BUSY_END,
    EV_IRQ,
    EV_POLL_TIMEOUT,
    EV_SEND,
    EV_SIGNAL,
    EV_SSEND,
    EV_TICK,
    EV_TIMER,
    F_STUCK_NS,
    I_C1_DEMOTION,
    I_FIXED_IDX,
    I_GOV,
    I_GOV_VARIANT,
    I_IS_POLL0,
    I_LAT_REQ,
    I_MAX_SLEEP,
    I_MECH,
    I_NOHZ,
    I_POLL_CHECK_NS,
    I_POLL_LIMIT,
    I_RCU_GP_NS,
    I_T_END,
    I_TICK_NS,
    I_TL_CPUS,
    I_TL_END,
    K_CSD_WAIT,
    K_DEFERRED,
    K_EVENTS,
    K_REQ,
    K_RESCHED_EXITS,
    K_RESCHED_EXITS_STOPPED,
    K_SELECTS,
    K_SELECTS_TICK_STOPPED,
    K_SREQ,
    K_STUCK,
    K_TL,
    K_WAKEUPS,
    L_INTR,
    L_IRQ,
    L_TIMER,
    L_WAKE,
    MECH_IPI,
    MECH_RFC,
    MECH_TIF,
    P_ENTRY_HK,
    P_EXIT_HK,
    P_IRQ_ENTRY,
    P_IRQ_HANDLER,
    P_SCHED_SWITCH,
    P_TICK_HANDLER,
    P_TSC_GHZ,
    S_EXIT_N,
    S_EXIT_SUM,
    S_INTR_N,
    S_INTR_SUM,
    S_WAKE_N,
    S_WAKE_SUM,
    ST_ABOVE,
    ST_BELOW,
    ST_RESIDENT,
    ST_TIME,
    ST_USAGE,
    TICK_REARMED,
    Arrivals,
    Cpus,
    Hw,
    Stats,
    Table,
)
from engine.kernel.queue import CPU_BITS, CPU_MASK

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
        schedule(cpus.cs, queue, c, ip, arr)
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
        hw_leave(cs, hw, c, t, t)  # the wait never started: an empty interval
        if mech == MECH_TIF:
            word_write(cs, seen, ctr, fp, c, c, True)  # the clear takes the line back
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
            irq_work = irq_work_ns(cs, c, arr, rng, fp, ip)
            handler = int(fp[P_IRQ_HANDLER])
        if irq_work <= 0:
            t_irq = max(t, mw, cs[c, C_FREE_AT]) + e_ns
            t_hend = t_irq + handler
            if kind == EV_SIGNAL:
                t_hend, _ = drain(cpus, c, t_irq, fp, ip, stats)  # call functions only
                cs[c, C_SIGNAL_AT] = INF
            elif kind == EV_IRQ:
                sample(stats, L_IRQ, t_irq - t)
                take_irq(cs, c, arr)
            else:
                tick_fired(cs, c, t, tick_ns)
                g[c, G_TICK_WAKEUP] = 1  # tick_nohz_idle_got_tick() at the next reflect
            cs[c, C_FREE_AT] = t_hend  # not a wake-up: no WakeLatency or IntrLatency sample
            # The loop checks its time limit after the handler returns.
            cs[c, C_POLL_DEADLINE] = max(cs[c, C_POLL_DEADLINE], t_hend)
            return
    x = 0
    if not poll and t >= mw:
        x = exit_latency(cs, hw, ip, tab, rng, c, s, t, mw)
        ssum[S_EXIT_SUM, s] += x
        ssum[S_EXIT_N, s] += 1
    # The thread is not in C0 before its hardware exit ends (turbostat's Busy%: MPERF stops in a
    # C-state and through its exit); its core and package leave their states at the event (their
    # residency counters stop there), so the exit shows in the derived CPU%c1.
    hw_exit = x - tab.exit_extra_ns[s] if x > 0 else 0
    hw_leave(cs, hw, c, t, min(t + hw_exit, t_end) if t >= mw else t)
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
                t_hend, task_ns = drain(cpus, c, t_irq, fp, ip, stats)
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
                t_hend, task_ns = drain(cpus, c, t_irq, fp, ip, stats)
                drained_end = t_hend
            else:
                t_hend = t_irq + handler
            t_after = t_hend
            t_task = t_after + sw_ns
        ssum[S_INTR_SUM, s] += t_irq - t
        ssum[S_INTR_N, s] += 1
        sample_from(stats, L_INTR, t_irq - t, s)
        if kind == EV_TIMER:
            sample(stats, L_TIMER, t_task - t)
            task_ns = (t_task - t_after) + tm_work[arg]
            wakes_task = True
        elif kind == EV_IRQ:
            sample(stats, L_IRQ, t_irq - t)
            task_ns = irq_work  # drawn already when POLL had to know
            if task_ns < 0:
                task_ns = irq_work_ns(cs, c, arr, rng, fp, ip)
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
            word_read(cs, seen, ctr, fp, c, c, True)
        t_after = ret + h_ns
    if kind != EV_POLL_TIMEOUT:
        wake = ret - t if interrupt and irq_on[s] else t_hw - t
        if mech == MECH_RFC and not interrupt:
            wake = ret - t
        ssum[S_WAKE_SUM, s] += wake
        ssum[S_WAKE_N, s] += 1
        sample_from(stats, L_WAKE, wake, s)
        ctr[K_WAKEUPS] += 1
    if kind == EV_TIMER:
        rearm_timer(arr, arg, c, t)
    elif kind == EV_IRQ:
        take_irq(cs, c, arr)
    elif kind == EV_TICK:
        tick_fired(cs, c, t, tick_ns)
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
        word_write(cs, seen, ctr, fp, c, c, True)  # RUNNING / clear polling
    cs[c, C_MODE] = 0
    cs[c, C_POLL_CLEAR_AT] = t_hw
    # The idle loop's exit flushes the call queue (flush_smp_call_function_queue()).
    if drained_end < 0 and cs[c, C_QLEN] > 0 and kind != EV_POLL_TIMEOUT:
        t_d, tasks = drain(cpus, c, t_after, fp, ip, stats)
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
    snd_dst, ssnd_dst = arr.snd_dst, arr.ssnd_dst
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
        sample(stats, L_TIMER, t_task - t)
        cs[c, C_BUSY_UNTIL] = busy + e_ns + tm_handler[arg] + sw_ns + tm_work[arg]
        rearm_timer(arr, arg, c, t)
    elif kind == EV_TICK:
        cs[c, C_BUSY_UNTIL] = busy + e_ns + int(fp[P_TICK_HANDLER])
        tick_fired(cs, c, t, tick_ns)
    elif kind == EV_IRQ:
        sample(stats, L_IRQ, take + e_ns - t)
        work = irq_work_ns(cs, c, arr, rng, fp, ip)
        cs[c, C_BUSY_UNTIL] = busy + e_ns + int(fp[P_IRQ_HANDLER]) + work
        take_irq(cs, c, arr)
    elif kind == EV_SIGNAL:
        at = take + (e_ns if cs[c, C_SIGNAL_TYPE] == 0 else 0)
        t_d, tasks = drain(cpus, c, at, fp, ip, stats)
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
            if cs[c, C_SEND_NEXT] < cs[c, C_FREE_AT] and cs[c, C_SEND_NEXT] < t:
                ctr[K_DEFERRED] += 1
            ctr[K_REQ] += 1
            ctr[K_CSD_WAIT] += cs[c, C_SPUN_NS]
            spun = cs[c, C_SPUN_NS] * fp[P_TSC_GHZ]
            cs[c, C_SPUN_NS] = 0
            cyc = send_wakeup(cpus, c, snd_dst[p], t, 0, spun, fp, ip, stats, arr)
            cs[c, C_BUSY_UNTIL] = busy + int((cyc - spun) / fp[P_TSC_GHZ])
            take_send(cs, c, arr)
            schedule(cs, queue, snd_dst[p], ip, arr)
    elif kind == EV_SSEND:
        p = cs[c, C_SSEND_PTR]
        ctr[K_SREQ] += 1
        cyc = send_wakeup(cpus, c, ssnd_dst[p], t, 1, 0.0, fp, ip, stats, arr)
        cs[c, C_BUSY_UNTIL] = busy + int(cyc / fp[P_TSC_GHZ])
        take_ssend(cs, c, arr)
        schedule(cs, queue, ssnd_dst[p], ip, arr)


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
            schedule(cs, queue, src, ip, arr)


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
    timer, _ = next_timer(arr.tm_next, c)
    sleep_length = min(max(timer - t_start, 0), ip[I_MAX_SLEEP])
    tick_stopped = cs[c, C_TICK_STOPPED] != 0
    delta_tick = sleep_length
    if not tick_stopped or ip[I_NOHZ] == 0:
        delta_tick = tick_after(cs, c, t_start, tick_ns) - t_start
    if ip[I_NOHZ] == 0:
        sleep_length = min(sleep_length, delta_tick)
    # The tick already stopped and RCU callbacks waiting here: tick_nohz_next_event() takes the
    # next event a jiffy after the last one (`basemono + TICK_NSEC`) and, the tick being stopped,
    # does not bail out, so the governor is told that and the stopped tick's timer is programmed
    # there (kernel/time/tick-sched.c).
    rearm = tick_stopped and ip[I_NOHZ] == 1 and rcu_needs_cpu(cs, c, t_start)
    if rearm:
        jiffy = tick_after(cs, c, t_start, tick_ns)
        sleep_length = min(sleep_length, jiffy - t_start)
        delta_tick = min(delta_tick, jiffy - t_start)
    tick_stays = ip[I_NOHZ] == 1 and tick_kept(cs, c, t_start, arr.tm_next, arr.tm_keeps_tick, tick_ns)
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
    latency_req = _latency_req(cs, c, t_start, ip[I_LAT_REQ], arr)
    idx, stop = select_state(
        ip[I_GOV], ip[I_GOV_VARIANT], g, c, tab.res_ns, tab.exit_ns, tab.enabled, ip[I_IS_POLL0] == 1,
        latency_req, sleep_length, delta_tick, tick_stopped, tick_ns, ip[I_FIXED_IDX], oracle,
        cs[c, C_NOHZ_FULL] == 1,
    )
    g[c, G_TICK_WAKEUP] = 0  # read by the governor's update above; set again by a tick in POLL
    ctr[K_SELECTS] += 1
    ctr[K_SELECTS_TICK_STOPPED] += int(tick_stopped)
    if ip[I_NOHZ] == 1 and (stop or tick_stopped) and not tick_stays:
        cs[c, C_TICK_STOPPED] = 1
        if rearm:
            cs[c, C_TICK_STOPPED] = TICK_REARMED
            cs[c, C_TICK_NEXT] = jiffy
    else:
        cs[c, C_TICK_STOPPED] = 0
        if cs[c, C_TICK_NEXT] <= t:
            cs[c, C_TICK_NEXT] = tick_after(cs, c, t, tick_ns)
    cs[c, C_MODE] = 1
    cs[c, C_STATE] = idx
    cs[c, C_IDLE_START] = t_start
    cs[c, C_MWAIT_AT] = t_start + tab.entry_ns[idx]
    level = hw.level[idx]
    if ip[I_C1_DEMOTION] == 1 and level > 1 and g[c, G_LAST_RES] < tab.res_ns[idx]:
        level = 1  # C1 demotion: the core stays in C1; cpuidle still counts state idx
    if level > 0:
        hw_enter(cs, hw, c, level, t_start + tab.entry_ns[idx])
    poll_limit = poll_time_ns(g, c, ip[I_POLL_LIMIT])
    cs[c, C_POLL_DEADLINE] = t_start + _poll_timeout_after(poll_limit, ip[I_POLL_CHECK_NS])
    mech = ip[I_MECH]
    if mech == MECH_TIF or (mech == MECH_RFC and not (idx == 0 and ip[I_IS_POLL0] == 1)):
        word_write(cs, seen, ctr, fp, c, c, True)  # IDLE / set polling


@compiled(inline=True)
def _latency_req(cs: np.ndarray, c: int, t_start: int, latency_req: int, arr: Arrivals) -> int:
    """cpuidle_governor_latency_req(): the configured limit, or a lower one the load holds now."""
    p = cs[c, C_HOLD_PTR]
    end = arr.hold_off[c + 1]
    while p < end and arr.hold_end[p] <= t_start:
        p += 1
    cs[c, C_HOLD_PTR] = p
    if p < end and arr.hold_start[p] <= t_start:
        return min(latency_req, arr.hold_limit[p])
    return latency_req


@compiled(inline=True)
def _idle_loop_exit(cs: np.ndarray, ctr: np.ndarray, c: int, t: int, tick_ns: int) -> None:
    """do_idle() leaves its loop on NEED_RESCHED: tick_nohz_idle_exit() restarts a stopped tick
    (kernel/time/tick-sched.c), except on a nohz_full CPU, where __tick_nohz_full_update_tick()
    re-evaluates it and, with one task to run, it stays stopped."""
    ctr[K_RESCHED_EXITS] += 1
    if cs[c, C_TICK_STOPPED] != 0:
        if cs[c, C_NOHZ_FULL] == 1:
            ctr[K_RESCHED_EXITS_STOPPED] += 1
            return
        cs[c, C_TICK_STOPPED] = 0
        cs[c, C_TICK_NEXT] = tick_after(cs, c, t, tick_ns)


@compiled(inline=True)
def _poll_timeout_after(limit_ns: int, check_ns: int) -> int:
    """poll_idle() (drivers/cpuidle/poll_state.c) reads the clock only after every
    POLL_IDLE_RELAX_COUNT + 1 = 201 cpu_relax() loops and stops at the first read more than the
    limit past its start: the time-out lands on that read, up to one period late."""
    if check_ns <= 0:
        return limit_ns
    return (limit_ns // check_ns + 1) * check_ns


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


# --------------------------------------------------------------------------- cpuidle's counters


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
    """cpuidle_enter_state()'s bookkeeping after the state returns; gives last_residency_ns.

    Above: shorter than the state's target residency with an enabled state below it. Below:
    otherwise, longer than its exit latency by at least the next enabled state's residency.
    Counted without branches: which way a stay goes is the least predictable thing here."""
    diff = ret - start
    st[ST_USAGE, c, s] += 1
    st[ST_TIME, c, s] += diff
    st[ST_RESIDENT, c, s] += max(min(ret, t_end) - start, 0)
    res, lat = tab.res_ns[s], tab.exit_ns[s]
    st[ST_ABOVE, c, s] += int(diff < res) & tab.has_shallower[s]
    st[ST_BELOW, c, s] += int(diff >= res) & int(diff > lat) & int(diff - lat >= tab.deeper_res_ns[s])
    return diff
