"""The load a twin fits: a parameter vector and the `SimConfig` it stands for.

The load model is DESIGN 7's: per CPU class a two-phase burst process the governor cannot see
(quiet rate, burst rate, burst and quiet lengths); for every class the same follow-up chains, run
time per wake-up and long timers the governor sees (a periodic hrtimer of the fitted period and a
2 s timer-wheel timer, both jittered). Every parameter is a load figure the counters are fitted
to, not a kernel fact. Log-scaled parameters are searched as their base-10 logarithm.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

# Fixed parts of the load (labelled estimates, not fitted: the counters cannot tell them apart
# from the hrtimer's period and the quiet rate, which are).
WHEEL_PERIOD_US = 2_000_000.0
TIMER_JITTER = 0.1
RUN_TIME_SIGMA = 1.0
IRQ_HANDLER_US = 2.0


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
# A class's bursts are searched as how often they come and how many wake-ups they hold: the
# burst and quiet lengths follow (burst_mean = events / burst rate, quiet_mean = 1 / bursts per s).
PER_CLASS = (
    Param("bursts.quiet_rate_hz", -1.0, 1.7, True),  # 0.1 - 50 per second
    Param("bursts.bursts_per_s", -1.0, 1.3, True),  # 0.1 - 20
    Param("bursts.events_per_burst", 0.0, 2.3, True),  # 1 - 200 on average
    Param("bursts.burst_rate_hz", 2.5, 5.0, True),  # 300 - 100,000 per second within a burst
)


class LoadMap:
    """Parameter vectors <-> the load of `n_classes` CPU classes."""

    def __init__(self, n_classes: int) -> None:
        self.n_classes = n_classes
        self.params: list[Param] = list(SHARED)
        for k in range(n_classes):
            self.params += [p._replace(name=f"class{k}.{p.name}") for p in PER_CLASS]

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
        out = []
        cls = np.asarray(classes)
        for k in range(self.n_classes):
            cpus = np.flatnonzero(cls == k).tolist()
            if not cpus:
                continue
            out.append(
                {
                    "cpus": cpus,
                    "timers": [
                        {"kind": "timer_wheel", "period_us": WHEEL_PERIOD_US, "jitter": TIMER_JITTER},
                        {"kind": "hrtimer", "period_us": v["hrtimer.period_us"], "jitter": TIMER_JITTER},
                    ],
                    "bursts": {
                        "quiet_rate_hz": v[f"class{k}.bursts.quiet_rate_hz"],
                        "burst_rate_hz": v[f"class{k}.bursts.burst_rate_hz"],
                        "burst_mean_us": 1e6
                        * v[f"class{k}.bursts.events_per_burst"]
                        / v[f"class{k}.bursts.burst_rate_hz"],
                        "quiet_mean_ms": 1e3 / v[f"class{k}.bursts.bursts_per_s"],
                    },
                    "follow_ups": {
                        "probability": v["follow_ups.probability"],
                        "delay_min_us": delay / spread,
                        "delay_max_us": delay * spread,
                    },
                    "run_time": {"median_us": v["run_time.median_us"], "sigma": RUN_TIME_SIGMA},
                }
            )
        return out


def quiet_wakeups(hz: int) -> dict[str, Any]:
    """Every other source off: the twin's load is all in `wakeups.load`."""
    return {
        "tick": {"hz": hz},
        "timers": [],
        "interrupts": {"rate_hz": 0.0, "handler_us": IRQ_HANDLER_US},
        "ipis": {"rate_hz": 0.0},
        "sched_wakeups": {"rate_hz": 0.0},
    }
