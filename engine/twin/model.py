"""The load a twin fits: a parameter vector and the `SimConfig` it stands for.

The load model is DESIGN 7's: per CPU class a two-phase burst process the governor cannot see;
for every class the same follow-up chains, run time per wake-up and long timers the governor sees
(a periodic hrtimer of the fitted period and a 2 s timer-wheel timer, both jittered); and polling
work (`PollingWork`: delayed work whose reads sleep in short hrtimers the governor sees), of the
same sleep and episode length everywhere, its share of the wake-ups per class. Every parameter is
a load figure the counters are fitted to, not a kernel fact. Where POLL has at least 1% of the
entries, a latency request held for stretches (`LatencyHolds`, two shared parameters) is in the
map too: only a latency limit makes menu choose POLL for stays it then times out of. Where the
counters show two states whose stays the governor foresaw, a second polling work of its own
sleep is in the map (`poll_sleeps_us`; the fit's `foreseen_stays_us`).

A class is searched relative to its measured entries per idle second: how many wake-ups per
second it has against that (`rate_ratio`), which share of the wake-ups that start a chain come in
bursts, how many a burst holds and how fast they come within one. The quiet rate, the burst and
quiet lengths follow. So nearly every point of the box has about the measured rate, and the
search spends its evaluations on the mix of short and long stays, not on finding the rate.
Log-scaled parameters are searched as their base-10 logarithm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from engine.platforms import Platform
from engine.twin.counters import Figures

# Fixed parts of the load (labelled estimates, not fitted: the counters cannot tell them apart
# from the hrtimer's period and the quiet rate, which are).
WHEEL_PERIOD_US = 2_000_000.0
TIMER_JITTER = 0.1
RUN_TIME_SIGMA = 1.0
IRQ_HANDLER_US = 2.0
MAX_BURST_TIME = 0.5  # bursts take at most half of the time (else they are the quiet phase)
MAX_QUIET_MS = 100_000.0  # BurstSource's longest quiet phase


class Param(NamedTuple):
    name: str
    low: float
    high: float
    log: bool  # searched as log10


SHARED = (
    Param("follow_ups.probability", 0.0, 0.9, False),
    Param("follow_ups.median_delay_us", 1.5, 3.0, True),  # 30 us - 1 ms
    Param("follow_ups.spread", 0.3, 2.0, True),  # delay_max / delay_min: 2 - 100
    Param("run_time.median_us", 0.0, 2.0, True),  # 1 - 100 us
    Param("hrtimer.period_us", 4.0, 6.0, True),  # 10 ms - 1 s
)
PER_CLASS = (
    Param("rate_ratio", -0.3, 0.3, True),  # wake-ups per second / measured entries per idle second
    Param("bursts.share", 0.0, 0.99, False),  # of the wake-ups that start a chain
    Param("bursts.events_per_burst", 0.0, 2.3, True),  # 1 - 200 on average
    Param("bursts.burst_rate_hz", 2.5, 5.0, True),  # 300 - 100,000 per second within a burst
)
# Polling work, after the parameters above (a map without it is the one before it existed).
POLLS_SHARED = (
    Param("polls.sleep_us", 0.7, 3.3, True),  # 5 us - 2 ms: read_poll_timeout()'s sleep_us
    Param("polls.sleeps_mean", 0.0, 2.5, True),  # 1 - 300 sleeps per episode on average
)
POLL_STEP_US = 3.0  # PollingWork's handler (1 us) and read (2 us) defaults: estimates
# With `poll_sleeps_us` (one range per polling work, None for POLLS_SHARED's; see LoadMap) each
# work's sleep is searched in its own range; the second work (another driver's
# read_poll_timeout()) is one class more per class in `wakeups.load`, after all of them, on the
# same CPUs and holding only its polls.
POLL_WORKS = ("polls", "polls2")
POLL_SHARE_MAX = (0.6, 0.4)  # per class, of its wake-ups: together at most all of them
# Latency holds (`LatencyHolds`: a system-wide PM QoS request of 0 us, so POLL only), last: the
# share of the time held and a hold's mean length, the same on every class.
HOLDS_SHARED = (
    Param("holds.time_share", -5.0, -2.0, True),  # 0.001% - 1% of the time
    Param("holds.hold_us", 2.5, 5.0, True),  # 300 us - 100 ms on average
)


class LoadMap:
    """Parameter vectors <-> the load of `n_classes` CPU classes, each relative to its measured
    entries per idle second (`rates_hz`, one per class). `poll_sleeps_us`: the sleep range of
    each polling work (at most two; None: POLLS_SHARED's); unset, one polling work as before."""

    def __init__(
        self,
        n_classes: int,
        rates_hz: Sequence[float] | None = None,
        polls: bool = True,
        holds: bool = False,
        poll_sleeps_us: Sequence[tuple[float, float] | None] | None = None,
    ) -> None:
        self.n_classes, self.polls, self.holds = n_classes, polls, holds
        if poll_sleeps_us is not None and len(poll_sleeps_us) > len(POLL_WORKS):
            raise ValueError(f"poll_sleeps_us: at most {len(POLL_WORKS)} polling works")
        ranges = [None] if poll_sleeps_us is None else list(poll_sleeps_us)
        self.poll_works = len(ranges) if polls else 0
        self.rates_hz = list(rates_hz) if rates_hz is not None else [20.0] * n_classes
        self.params: list[Param] = list(SHARED)
        for k in range(n_classes):
            self.params += [p._replace(name=f"class{k}.{p.name}") for p in PER_CLASS]
        for j in range(self.poll_works):
            work, r = POLL_WORKS[j], ranges[j]
            sleep = POLLS_SHARED[0]
            if r is not None:
                sleep = Param("polls.sleep_us", math.log10(r[0]), math.log10(r[1]), True)
            self.params += [p._replace(name=p.name.replace("polls", work)) for p in (sleep, POLLS_SHARED[1])]
            for k in range(n_classes):
                share = Param(f"class{k}.{work}.share", 0.0, POLL_SHARE_MAX[j], False)
                self.params.append(share)
        if holds:
            self.params += list(HOLDS_SHARED)

    @property
    def bounds(self) -> list[tuple[float, float]]:
        return [(p.low, p.high) for p in self.params]

    def values(self, x: Sequence[float]) -> dict[str, float]:
        """The parameters by name, in their own units (logs undone)."""
        return {p.name: float(10.0**v if p.log else v) for p, v in zip(self.params, x, strict=True)}

    def load(self, x: Sequence[float], classes: Sequence[int]) -> list[dict[str, Any]]:
        """`wakeups.load` for simulated CPUs whose classes are `classes` (one per CPU, in order)."""
        v = self.values(x)
        delay = v["follow_ups.median_delay_us"]
        spread = v["follow_ups.spread"] ** 0.5
        p = v["follow_ups.probability"]
        periods_us = {"timer_wheel": WHEEL_PERIOD_US, "hrtimer": v["hrtimer.period_us"]}
        timers = [{"kind": k, "period_us": us, "jitter": TIMER_JITTER} for k, us in periods_us.items()]
        timer_hz = sum(1e6 / us for us in periods_us.values())
        out = []
        second: list[dict[str, Any]] = []  # the second polling work's classes, after all others
        cls = np.asarray(classes)
        for k in range(self.n_classes):
            cpus = np.flatnonzero(cls == k).tolist()
            if not cpus:
                continue
            # Polls take their share of the wake-ups (they start no chains); the other chains start
            # at timers and at invisible wake-ups, each 1 / (1 - p) wake-ups long.
            rate_hz = self.rates_hz[k] * v[f"class{k}.rate_ratio"]
            share = v.get(f"class{k}.polls.share", 0.0)
            share2 = v.get(f"class{k}.polls2.share", 0.0)
            starts_hz = rate_hz * max(1.0 - share - share2, 0.0) * (1.0 - p)
            invisible_hz = max(starts_hz - timer_hz, 0.0)
            extra: dict[str, Any] = {}
            if share > 0:
                extra["polls"] = polling(rate_hz * share, v["polls.sleep_us"], v["polls.sleeps_mean"])
            if self.holds:
                extra["latency_holds"] = latency_holds(v["holds.time_share"], v["holds.hold_us"])
            if share2 > 0:
                polls2 = polling(rate_hz * share2, v["polls2.sleep_us"], v["polls2.sleeps_mean"])
                second.append({"cpus": cpus, "polls": polls2})
            out.append(
                {
                    "cpus": cpus,
                    "timers": timers,
                    "bursts": bursts(
                        invisible_hz,
                        v[f"class{k}.bursts.share"],
                        v[f"class{k}.bursts.events_per_burst"],
                        v[f"class{k}.bursts.burst_rate_hz"],
                    ),
                    "follow_ups": {
                        "probability": p,
                        "delay_min_us": delay / spread,
                        "delay_max_us": delay * spread,
                    },
                    "run_time": {"median_us": v["run_time.median_us"], "sigma": RUN_TIME_SIGMA},
                    **extra,
                }
            )
        return out + second


def polling(rate_hz: float, sleep_us: float, sleeps_mean: float) -> dict[str, float]:
    """A `PollingWork` of `rate_hz` wake-ups per second (each episode its timer and its sleeps):
    the period follows, within PollingWork's 1 ms - 10 s."""
    cycle_us = 1e6 * (1.0 + sleeps_mean) / rate_hz
    period_us = cycle_us - POLL_STEP_US - sleeps_mean * (sleep_us + POLL_STEP_US)
    return {
        "period_us": min(max(period_us, 1_000.0), 10_000_000.0),
        "jitter": TIMER_JITTER,
        "sleep_us": sleep_us,
        "sleeps_mean": sleeps_mean,
    }


def latency_holds(time_share: float, hold_us: float) -> dict[str, float]:
    """A `LatencyHolds` of mean `hold_us` held `time_share` of the time, asking for 0 us."""
    return {"hold_us": hold_us, "gap_ms": hold_us * (1.0 - time_share) / time_share / 1e3, "limit_us": 0.0}


def bursts(rate_hz: float, share: float, events: float, burst_rate_hz: float) -> dict[str, float]:
    """A `BurstSource` of `rate_hz` wake-ups per second on average, `share` of them in bursts of
    `events` at `burst_rate_hz`: bursts come `share * rate / events` times a second (bursts take
    at most MAX_BURST_TIME of the time, a quiet phase at most MAX_QUIET_MS), each lasting
    `events / burst_rate`, and the quiet phases carry the rest of the rate."""
    bursts_hz = share * rate_hz / events
    burst_s = events / burst_rate_hz
    if bursts_hz <= 0:  # no bursts: a burst phase at the quiet rate is none
        return {"quiet_rate_hz": rate_hz, "burst_rate_hz": rate_hz, "quiet_mean_ms": MAX_QUIET_MS}
    bursts_hz = min(bursts_hz, MAX_BURST_TIME / burst_s)
    quiet_ms = min(1e3 * (1.0 / bursts_hz - burst_s), MAX_QUIET_MS)
    bursts_hz = 1.0 / (quiet_ms / 1e3 + burst_s)  # the cycle as clamped
    burst_time = bursts_hz * burst_s
    return {
        "quiet_rate_hz": max((rate_hz - bursts_hz * events) / (1.0 - burst_time), 0.0),
        "burst_rate_hz": burst_rate_hz,
        "burst_mean_us": 1e6 * burst_s,
        "quiet_mean_ms": quiet_ms,
    }


def quiet_wakeups(hz: int) -> dict[str, Any]:
    """Every other source off: the twin's load is all in `wakeups.load`."""
    return {
        "tick": {"hz": hz},
        "timers": [],
        "interrupts": {"rate_hz": 0.0, "handler_us": IRQ_HANDLER_US},
        "ipis": {"rate_hz": 0.0},
        "sched_wakeups": {"rate_hz": 0.0},
    }


# A state whose stays the governor foresaw (foreseen_stays_us; choices, not kernel facts): from 5%
# of the entries (the goal's threshold for a state's ratios), the above ratio within the goal's
# 0.10 of 0, and at most 15% of its stays reaching the next state's target residency.
FORESEEN_MIN_SHARE = 0.05
FORESEEN_MAX_ABOVE = 0.10
FORESEEN_MAX_BELOW = 0.15


def foreseen_stays_us(
    measured: Figures, table: Platform, disabled: Sequence[bool]
) -> tuple[tuple[float, float], ...]:
    """A sleep range per state whose stays the governor foresaw, at most two, the most entered
    first: a state (not POLL, not the deepest enabled) with at least
    FORESEEN_MIN_SHARE of the entries, few of its stays shorter than its target residency (above
    ratio at most FORESEEN_MAX_ABOVE) and few reaching the next state's (below ratio at most
    FORESEEN_MAX_BELOW), as the ends of sleeps the governor sees make them; the range is half to
    twice the state's mean stay."""
    enabled = [i for i, d in enumerate(disabled) if not d]
    found = []
    for i in enabled[:-1]:
        state = table.states[i]
        f = measured.states[state.name]
        if state.is_poll or f.entry_share < FORESEEN_MIN_SHARE or f.mean_stay_us is None:
            continue
        if (f.above_ratio or 0.0) <= FORESEEN_MAX_ABOVE and (f.below_ratio or 0.0) <= FORESEEN_MAX_BELOW:
            low, high = max(f.mean_stay_us / 2, 5.0), min(f.mean_stay_us * 2, 20_000.0)
            found.append((f.entry_share, (low, high)))
    found.sort(key=lambda e: -e[0])
    return tuple(r for _, r in found[:2])
