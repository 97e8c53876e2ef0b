"""Each CPU's events: which comes next, and the bookkeeping of the arrivals taken.

`schedule` works out a CPU's next event (its timers, tick, device interrupts, signals, a POLL
time-out, and while it runs the calls it sends and the end of its work) and puts it in the
queue; the rest keep each source's next arrival: timers re-armed, the tick's next boundary,
device interrupts taken.
"""

from __future__ import annotations

import numpy as np

from engine.governors import INF
from engine.jit import compiled
from engine.kernel.calls import exp_draw
from engine.kernel.layout import (
    C_BUSY_UNTIL,
    C_EV_ARG,
    C_EV_KIND,
    C_FREE_AT,
    C_IRQ_NEXT,
    C_IRQ_PTR,
    C_IRQ_WORK,
    C_MODE,
    C_POLL_DEADLINE,
    C_RCU_NOCB,
    C_RCU_UNTIL,
    C_SEND_NEXT,
    C_SEND_NOT_BEFORE,
    C_SEND_PTR,
    C_SIGNAL_AT,
    C_SPIN_FROM,
    C_SSEND_NEXT,
    C_SSEND_PTR,
    C_STATE,
    C_TICK_NEXT,
    C_TICK_STOPPED,
    EV_BUSY_END,
    EV_IRQ,
    EV_POLL_TIMEOUT,
    EV_SEND,
    EV_SIGNAL,
    EV_SSEND,
    EV_TICK,
    EV_TIMER,
    I_IRQ_WORK_EXP,
    I_IS_POLL0,
    P_IRQ_WORK,
    TICK_REARMED,
    Arrivals,
)
from engine.kernel.queue import queue_set

# ------------------------------------------------------------------------ each CPU's next event


@compiled(inline=True)
def next_timer(tm_next: np.ndarray, c: int) -> tuple[int, int]:
    best = INF
    k_best = -1
    for k in range(tm_next.shape[0]):
        if tm_next[k, c] < best:
            best = tm_next[k, c]
            k_best = k
    return best, k_best


@compiled(inline=True)
def schedule(
    cs: np.ndarray,
    queue: np.ndarray,
    c: int,
    ip: np.ndarray,
    arr: Arrivals,
) -> None:
    """Compute CPU c's next event and put it in the queue. Ties: arrivals before the end of work."""
    t, k = next_timer(arr.tm_next, c)
    kind = EV_TIMER
    arg = k
    if cs[c, C_TICK_STOPPED] != 1 and cs[c, C_TICK_NEXT] < t:  # running, or re-armed once
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
        # The next requests' times are kept in cs (C_SEND_NEXT, INF after the last): no read of
        # the request streams here.
        ready = cs[c, C_FREE_AT]
        if cs[c, C_SEND_NEXT] != INF and cs[c, C_SPIN_FROM] == INF:
            ts = max(cs[c, C_SEND_NEXT], ready, cs[c, C_SEND_NOT_BEFORE])
            if ts <= cs[c, C_BUSY_UNTIL] and ts < t:
                t = ts
                kind = EV_SEND
        if cs[c, C_SSEND_NEXT] != INF:
            ts = max(cs[c, C_SSEND_NEXT], ready)
            if ts <= cs[c, C_BUSY_UNTIL] and ts < t:
                t = ts
                kind = EV_SSEND
        if cs[c, C_BUSY_UNTIL] < t and cs[c, C_SPIN_FROM] == INF:
            t = cs[c, C_BUSY_UNTIL]
            kind = EV_BUSY_END
    cs[c, C_EV_KIND] = kind
    cs[c, C_EV_ARG] = arg
    queue_set(queue, c, t)


@compiled()
def schedule_all(
    cs: np.ndarray,
    queue: np.ndarray,
    ip: np.ndarray,
    arr: Arrivals,
) -> None:
    """Every CPU's first event."""
    for c in range(cs.shape[0]):
        schedule(cs, queue, c, ip, arr)


# ------------------------------------------------------------------------------- arrivals taken


@compiled(inline=True)
def take_irq(cs: np.ndarray, c: int, arr: Arrivals) -> None:
    """CPU c's next device interrupt has been taken: the one after it is next."""
    p = cs[c, C_IRQ_PTR] + 1
    cs[c, C_IRQ_PTR] = p
    if p < arr.irq_off[c + 1]:
        cs[c, C_IRQ_NEXT] = arr.irq_tw[p, 0]
        cs[c, C_IRQ_WORK] = arr.irq_tw[p, 1]
    else:
        cs[c, C_IRQ_NEXT] = INF


@compiled(inline=True)
def take_send(cs: np.ndarray, c: int, arr: Arrivals) -> None:
    """CPU c made its next no-wait call: the request after it is next."""
    p = cs[c, C_SEND_PTR] + 1
    cs[c, C_SEND_PTR] = p
    cs[c, C_SEND_NEXT] = arr.snd_t[p] if p < arr.snd_off[c + 1] else INF


@compiled(inline=True)
def take_ssend(cs: np.ndarray, c: int, arr: Arrivals) -> None:
    """CPU c made its next task wake-up: the one after it is next."""
    p = cs[c, C_SSEND_PTR] + 1
    cs[c, C_SSEND_PTR] = p
    cs[c, C_SSEND_NEXT] = arr.ssnd_t[p] if p < arr.ssnd_off[c + 1] else INF


@compiled(inline=True)
def irq_work_ns(
    cs: np.ndarray, c: int, arr: Arrivals, rng: np.ndarray, fp: np.ndarray, ip: np.ndarray
) -> int:
    """The work after CPU c's current device interrupt: its own when the load drew it."""
    w = cs[c, C_IRQ_WORK]
    if w >= 0:
        return int(w)
    return exp_draw(rng, c, fp[P_IRQ_WORK], ip[I_IRQ_WORK_EXP] == 1)


@compiled(inline=True)
def rearm_timer(arr: Arrivals, k: int, c: int, t: int) -> None:
    """Timer k of CPU c expired at t: its next expiry, a period later or the next one drawn."""
    period = arr.tm_period[k]
    if period > 0:
        arr.tm_next[k, c] += period * ((t - arr.tm_next[k, c]) // period + 1)
        return
    p = arr.tm_seq_ptr[k, c]
    arr.tm_next[k, c] = arr.tm_seq_t[p] if p < arr.tm_seq_end[k, c] else INF
    arr.tm_seq_ptr[k, c] = p + 1


@compiled(inline=True)
def tick_after(cs: np.ndarray, c: int, t: int, tick_ns: int) -> int:
    """The first tick after t (ticks fall on multiples of tick_ns): from CPU c's next tick, which is
    usually at most one period off, without a division."""
    g = cs[c, C_TICK_NEXT]
    if g <= t < g + tick_ns:
        return g + tick_ns
    if g - tick_ns <= t < g:
        return g
    return (t // tick_ns + 1) * tick_ns


@compiled(inline=True)
def rcu_needs_cpu(cs: np.ndarray, c: int, t: int) -> bool:
    """rcu_needs_cpu() (kernel/rcu/tree.c): callbacks queued on CPU c and not offloaded."""
    return cs[c, C_RCU_UNTIL] > t and cs[c, C_RCU_NOCB] == 0


@compiled(inline=True)
def tick_fired(cs: np.ndarray, c: int, t: int, tick_ns: int) -> None:
    """The tick's timer has fired at t: the next tick is a period on; a stopped tick's timer
    re-armed for one jiffy (TICK_REARMED) is not re-armed again (tick_nohz_handler() leaves a
    stopped tick's timer alone)."""
    cs[c, C_TICK_NEXT] = tick_after(cs, c, t, tick_ns)
    if cs[c, C_TICK_STOPPED] == TICK_REARMED:
        cs[c, C_TICK_STOPPED] = 1


@compiled(inline=True)
def tick_kept(
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
    if rcu_needs_cpu(cs, c, t):
        return True
    horizon = tick_after(cs, c, t, tick_ns)
    for k in range(tm_next.shape[0]):
        if tm_keeps_tick[k] != 0 and tm_next[k, c] <= horizon:
            return True
    return False
