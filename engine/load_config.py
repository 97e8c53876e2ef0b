"""The idle load's vocabulary as a run takes it (`wakeups.load`): long governor-visible timers,
bursts the governor cannot see, chains of follow-up work and classes of CPUs that differ. The
arrivals are drawn by `engine.load`; this is only what a config may say.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from engine.text_schema import no_nul_strings


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)


# What real idle servers show and independent Poisson streams cannot (DESIGN 7, "Twins"): long
# governor-visible timers, bursts the governor cannot see, chains of follow-up work, and CPUs that
# differ. Arrivals are drawn by engine.load; every figure below is a load parameter (a run input),
# not a kernel fact.

MAX_LOAD_CLASSES = 8
MAX_LOAD_TIMERS = 4


class LongTimer(_Model):
    """A governor-visible timer re-armed after each expiry, with jitter.

    `tick_nohz_get_sleep_length()` reports it, so menu and teo see it coming. `timer_wheel`
    stands for a `timer_list` re-armed with `mod_timer()` (housekeeping of 1-4 s: writeback,
    vmstat, neighbour tables): its expiry is rounded up to the wheel level's granularity
    (kernel/time/timer.c calc_index(): level n holds 8^n jiffies per bucket, for timeouts from
    63 * 8^(n-1) jiffies), so it fires up to one granule late. `hrtimer` stands for a periodic
    hrtimer (10 ms-1 s: a polling driver, a watchdog, a user thread's nanosleep), exact to the ns.
    Each interval is `period_us * (1 + jitter * (2u - 1))`, u uniform: the re-arming code runs at
    a varying time after the expiry. The first expiry falls at a uniform phase of the period.
    """

    kind: Literal["timer_wheel", "hrtimer"] = "hrtimer"
    period_us: Annotated[float, Field(ge=1_000, le=10_000_000)] = 1_000_000.0
    jitter: Annotated[float, Field(ge=0, le=0.9)] = Field(
        default=0.1, description="Spread of each interval, as a fraction of the period (uniform)."
    )
    handler_us: Annotated[float, Field(ge=0, le=1000)] = Field(
        default=1.0, description="Timer interrupt handler time (estimate)."
    )
    work_us: Annotated[float, Field(ge=0, le=1_000_000)] = Field(
        default=5.0, description="CPU time of what the expiry wakes (the timer's callback or thread)."
    )


class BurstSource(_Model):
    """Governor-invisible wake-ups in bursts: a two-phase Markov-modulated Poisson process.

    Device interrupts, IPIs and scheduler wake-ups from other CPUs reach an idle CPU without a
    timer the governor could see (`tick_nohz_get_sleep_length()` knows only timers). On idle
    servers they come in bursts (a network or storage interrupt and its completions, a kworker
    waking its peers): a quiet phase at `quiet_rate_hz` alternates with a burst phase at
    `burst_rate_hz`; both phases last an exponential time of the given mean. The process starts
    in a phase drawn with the stationary probabilities.
    """

    quiet_rate_hz: Annotated[float, Field(ge=0, le=10_000)] = 2.0
    burst_rate_hz: Annotated[float, Field(ge=0, le=100_000)] = 2_000.0
    burst_mean_us: Annotated[float, Field(gt=0, le=10_000_000)] = Field(
        default=2_000.0, description="Mean length of a burst phase."
    )
    quiet_mean_ms: Annotated[float, Field(gt=0, le=100_000)] = Field(
        default=500.0, description="Mean length of a quiet phase."
    )


class FollowUps(_Model):
    """Follow-up work: each wake-up of the class spawns another with `probability`.

    After an interrupt, work often comes back shortly on the same CPU without a timer the
    governor sees: a softirq handed to ksoftirqd, an RCU callback batch or grace-period kthread,
    a kworker item queued by the handler. The delay is log-uniform between the two bounds; a
    follow-up may spawn its own (a chain of geometric length, mean 1 / (1 - p) wake-ups).
    """

    probability: Annotated[float, Field(ge=0, le=0.95)] = 0.5
    delay_min_us: Annotated[float, Field(gt=0, le=1_000_000)] = 50.0
    delay_max_us: Annotated[float, Field(gt=0, le=1_000_000)] = 500.0

    @model_validator(mode="after")
    def _order(self) -> FollowUps:
        if self.delay_max_us < self.delay_min_us:
            raise ValueError(
                f"delay_max_us: must be at least delay_min_us ({self.delay_min_us:g}), "
                f"got {self.delay_max_us:g}"
            )
        return self


class RunTime(_Model):
    """CPU time each governor-invisible wake-up of the class runs after its handler: log-normal."""

    median_us: Annotated[float, Field(ge=0, le=1_000_000)] = 5.0
    sigma: Annotated[float, Field(ge=0, le=4)] = Field(
        default=1.0, description="Shape of the log-normal (0: always the median)."
    )


class PollingWork(_Model):
    """A kworker's delayed work that polls a device with short sleeps the governor sees.

    Drivers wait for hardware with `read_poll_timeout()` (include/linux/iopoll.h): read, and
    until the condition holds, `usleep_range((sleep_us >> 2) + 1, sleep_us)`, read again. The
    sleep is an hrtimer (`usleep_range_state()` -> `schedule_hrtimeout_range()`, kernel/time/
    sleep_timeout.c, kernel/time/timer.c before 6.13) whose hard expiry is the range's upper
    bound; the clock event is programmed for it and `tick_nohz_get_sleep_length()` reports it,
    so on an otherwise quiet CPU each sleep ends at `sleep_us` and the governor saw it coming:
    short stays it predicts right. Such polls run from delayed work (`queue_delayed_work()`: a
    timer-wheel timer) that re-queues itself `period_us` after each episode ends.

    Each episode: the delayed work's timer fires, the work runs `work_us` (the first read), then
    a geometric number of sleeps (mean `sleeps_mean`; each read meets the condition with
    probability 1 / (1 + sleeps_mean)), each of `sleep_us` and followed by another read of
    `work_us`. The expiries are drawn up front: a sleep starts `handler_us + work_us` after the
    previous expiry (the exit latency of the idle state it ended is not added: the chain is a few
    exit latencies early over an episode). Every figure is a load parameter, not a kernel fact.
    """

    period_us: Annotated[float, Field(ge=1_000, le=10_000_000)] = Field(
        default=100_000.0, description="Delay from the end of an episode to the next one's start."
    )
    jitter: Annotated[float, Field(ge=0, le=0.9)] = Field(
        default=0.1, description="Spread of the period, as a fraction of it (uniform)."
    )
    sleep_us: Annotated[float, Field(ge=1, le=20_000)] = Field(
        default=100.0, description="read_poll_timeout()'s sleep_us: each sleep ends at it."
    )
    sleeps_mean: Annotated[float, Field(ge=0, le=1_000)] = Field(
        default=10.0, description="Mean sleeps per episode (geometric)."
    )
    handler_us: Annotated[float, Field(ge=0, le=1000)] = Field(
        default=1.0, description="Timer interrupt handler time (estimate)."
    )
    work_us: Annotated[float, Field(ge=0, le=1000)] = Field(
        default=2.0, description="CPU time of each read (and of the work function's start)."
    )

    def expected_rate_hz(self) -> float:
        """Wake-ups per second: each episode is its timer and its sleeps."""
        step_us = self.handler_us + self.work_us
        cycle_us = self.period_us + step_us + self.sleeps_mean * (self.sleep_us + step_us)
        return 1e6 * (1.0 + self.sleeps_mean) / cycle_us


class LatencyHolds(_Model):
    """A PM QoS CPU latency request raised for stretches of time, such as a driver's transfer.

    A driver that cannot stand wake-up latency for a while asks for the lowest one and gives the
    request back after: i915 around every DisplayPort AUX transfer (intel_dp_aux_xfer() in
    drivers/gpu/drm/i915/display/intel_dp_aux.c: `cpu_latency_qos_update_request(&intel_dp->pm_qos,
    0)`, then PM_QOS_DEFAULT_VALUE). The CPU latency request is system-wide: menu and teo read it
    at every selection (`cpuidle_governor_latency_req()`, drivers/cpuidle/governor.c), and each
    change of the aggregate wakes every idle CPU (`cpu_latency_qos_apply()` ->
    `wake_up_all_idle_cpus()`, kernel/power/qos.c) so that it selects again. With `limit_us` 0
    menu returns POLL at once (`latency_req == 0`, menu_select()) and keeps the tick; POLL ends
    by `cpuidle_poll_time()`'s time-out and is entered again: back-to-back POLL stays for the
    length of the hold.

    Holds alternate with gaps, both of exponential length; the same holds on every CPU of the
    class (one system-wide request), drawn from the class's own stream. The wake-ups at each
    hold's start and end are taken as governor-invisible wake-ups with no run time. Every figure
    is a load parameter, not a kernel fact.
    """

    hold_us: Annotated[float, Field(gt=0, le=10_000_000)] = Field(
        default=1_000.0, description="Mean length of a hold (exponential)."
    )
    gap_ms: Annotated[float, Field(gt=0, le=100_000_000)] = Field(
        default=1_000.0, description="Mean time between holds (exponential)."
    )
    limit_us: Annotated[float, Field(ge=0, le=10_000)] = Field(
        default=0.0, description="The latency the request asks for while held (0: POLL only)."
    )

    def expected_rate_hz(self) -> float:
        """Wake-ups per second on each CPU: the start and the end of every hold."""
        return 2e6 / (self.hold_us + 1e3 * self.gap_ms)


class LoadClass(_Model):
    """A class of CPUs and the idle load they carry.

    CPUs differ on real machines: housekeeping CPUs (CPU 0 runs most timers and kthreads) and
    the CPUs that device interrupts are affine to wake more often than the rest. Each class's
    sources apply to its `cpus`; classes may overlap (their arrivals add up).
    """

    cpus: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"
    timers: list[LongTimer] = Field(default_factory=list, max_length=MAX_LOAD_TIMERS)
    bursts: BurstSource | None = None
    follow_ups: FollowUps | None = None
    run_time: RunTime = Field(default_factory=RunTime)
    polls: PollingWork | None = Field(
        default=None, description="Polling work with short governor-visible sleeps (off by default)."
    )
    latency_holds: LatencyHolds | None = Field(
        default=None, description="A PM QoS CPU latency request held for stretches (off by default)."
    )

    @model_serializer(mode="wrap")
    def _omit_unused_sources(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Without polls or latency holds a class serialises as before they existed: its config's
        # hash and every stored config stay byte-identical.
        data: dict[str, Any] = handler(self)
        for name in ("polls", "latency_holds"):
            if getattr(self, name) is None:
                data.pop(name, None)
        return data

    def expected_rate_hz(self) -> float:
        """Mean wake-ups per second per CPU of the class (follow-ups included)."""
        rate = sum(1e6 / t.period_us for t in self.timers)
        if self.bursts is not None:
            b = self.bursts
            quiet_s, burst_s = b.quiet_mean_ms / 1e3, b.burst_mean_us / 1e6
            rate += (b.quiet_rate_hz * quiet_s + b.burst_rate_hz * burst_s) / (quiet_s + burst_s)
        if self.follow_ups is not None:
            rate /= 1.0 - self.follow_ups.probability
        if self.polls is not None:  # polls start no follow-ups
            rate += self.polls.expected_rate_hz()
        if self.latency_holds is not None:  # nor do the wake-ups of a hold's start and end
            rate += self.latency_holds.expected_rate_hz()
        return rate
