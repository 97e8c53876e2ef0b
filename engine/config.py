"""SimConfig: everything a run needs, validated, with a default for every field.

`SimConfig()` (or `{}` through the API) is the default dashboard run: skx, two sockets, `menu`,
a light mixed load, one simulated second. Limits are checked here, before any work starts, with
messages that name the field and the reason.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from engine.platforms import BUILTIN_PLATFORMS, Platform

MAX_CPUS = 512
MAX_DURATION_MS = 60_000.0
# The kernel preallocates per-event sample arrays: this bounds memory (about 60 bytes per event).
MAX_EXPECTED_EVENTS = 20_000_000

GovernorName = Literal["menu", "teo", "ladder", "oracle", "fixed"]
Mechanism = Literal["ipi", "mwait_rfc", "tif_polling"]
WorkDistribution = Literal["exponential", "fixed"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Topology(_Model):
    """Sockets, cores and SMT threads; unset counts are the platform's typical part.

    Logical CPUs are numbered socket by socket, and within a socket thread by thread: with C
    cores and T threads per core, CPU s*C*T + t*C + k is thread t of core k of socket s (so the
    two threads of core k are CPUs k and k + C on socket 0, as many BIOSes enumerate them).
    """

    sockets: Annotated[int, Field(ge=1, le=8)] = 2
    cores_per_socket: Annotated[int | None, Field(ge=1, le=256)] = None
    threads_per_core: Annotated[int | None, Field(ge=1, le=2)] = Field(
        default=None,
        description="SMT threads per core (1 or 2); the platform's (2 on skx, icx, wsm) if unset.",
    )


class GovernorConfig(_Model):
    """The cpuidle governor. `fixed` always asks for `fixed_state` (the C1-only experiments)."""

    name: GovernorName = "menu"
    fixed_state: str | None = Field(
        default=None, description="State name for the `fixed` governor (default: deepest enabled)."
    )


class StatesConfig(_Model):
    """Which states may be used, and how they are entered."""

    disabled: list[str] = Field(
        default_factory=list, description="State names disabled, as in sysfs `disable`."
    )
    irq_enable: dict[str, bool] = Field(
        default_factory=dict,
        description="Per-state override of CPUIDLE_FLAG_IRQ_ENABLE (enter with interrupts enabled).",
    )
    latency_limit_us: Annotated[float | None, Field(ge=0)] = Field(
        default=None, description="PM QoS CPU latency limit in microseconds (0 = POLL only); none if unset."
    )


class TickConfig(_Model):
    hz: Literal[100, 250, 300, 1000] = 250
    nohz: bool = Field(default=True, description="Let the governor stop the tick while idle (NO_HZ_IDLE).")
    handler_us: Annotated[float, Field(ge=0, le=1000)] = Field(
        default=1.5, description="Tick handler time (estimate)."
    )


class TimerSource(_Model):
    """A cyclictest-like periodic timer: a thread sleeps until each expiry, then runs `work_us`."""

    period_us: Annotated[float, Field(gt=0, le=10_000_000)] = 1000.0
    cpus: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"
    handler_us: Annotated[float, Field(ge=0, le=1000)] = Field(
        default=0.5, description="hrtimer interrupt handler time, including the task wake-up (estimate)."
    )
    work_us: Annotated[float, Field(ge=0, le=1_000_000)] = 2.0


class InterruptSource(_Model):
    """Device interrupts: a Poisson stream per CPU. Not visible to the governor."""

    rate_hz: Annotated[float, Field(ge=0, le=1_000_000)] = 200.0
    handler_us: Annotated[float, Field(ge=0, le=10_000)] = 3.0
    work_us: Annotated[float, Field(ge=0, le=1_000_000)] = 10.0
    work_distribution: WorkDistribution = "exponential"
    cpus: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"


class IpiSource(_Model):
    """No-wait `smp_call_function_single()`: each sender CPU calls at `rate_hz` (Poisson)."""

    rate_hz: Annotated[float, Field(ge=0, le=1_000_000)] = 50.0
    same_socket_share: Annotated[float, Field(ge=0, le=1)] = 0.5
    function_us: Annotated[float, Field(ge=0, le=10_000)] = 1.0
    senders: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"
    targets: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"


class SchedWakeupSource(_Model):
    """A task woken on another CPU (try_to_wake_up through the wake list): same wake mechanisms."""

    rate_hz: Annotated[float, Field(ge=0, le=1_000_000)] = 100.0
    same_socket_share: Annotated[float, Field(ge=0, le=1)] = 0.7
    work_us: Annotated[float, Field(ge=0, le=1_000_000)] = 30.0
    work_distribution: WorkDistribution = "exponential"
    senders: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"
    targets: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"


# ------------------------------------------------------------------------------- the idle load
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

    def expected_rate_hz(self) -> float:
        """Mean wake-ups per second per CPU of the class (follow-ups included)."""
        rate = sum(1e6 / t.period_us for t in self.timers)
        if self.bursts is not None:
            b = self.bursts
            quiet_s, burst_s = b.quiet_mean_ms / 1e3, b.burst_mean_us / 1e6
            rate += (b.quiet_rate_hz * quiet_s + b.burst_rate_hz * burst_s) / (quiet_s + burst_s)
        if self.follow_ups is not None:
            rate /= 1.0 - self.follow_ups.probability
        return rate


class WakeupsConfig(_Model):
    tick: TickConfig = Field(default_factory=TickConfig)
    timers: list[TimerSource] = Field(default_factory=lambda: [TimerSource(period_us=4000.0)])
    interrupts: InterruptSource = Field(default_factory=InterruptSource)
    ipis: IpiSource = Field(default_factory=IpiSource)
    sched_wakeups: SchedWakeupSource = Field(default_factory=SchedWakeupSource)
    busy_cpus: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list,
        description="CPUs running a CPU-bound task the whole run: never idle; interrupts and calls "
        "still reach them.",
    )
    load: list[LoadClass] = Field(
        default_factory=list,
        max_length=MAX_LOAD_CLASSES,
        description="The idle load of a real machine, by CPU class (long timers, bursts, follow-ups).",
    )

    @model_serializer(mode="wrap")
    def _omit_empty_load(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Without a load the config serialises as before it existed: its hash and every stored
        # config stay byte-identical.
        data: dict[str, Any] = handler(self)
        if not self.load:
            data.pop("load", None)
        return data


class IpiWakeupConfig(_Model):
    """How an idle target is woken: an IPI, the 2012 RFC's idle word, or mainline's polling flag."""

    mechanism: Mechanism = "tif_polling"
    read_before_cmpxchg: bool = Field(
        default=False, description="mwait_rfc: plain read of the idle word before the locked cmpxchg."
    )
    irqs_off_across_wake: bool = Field(
        default=False, description="mwait_rfc: sender keeps interrupts off from WAKING to WOKENUP."
    )


class CostsConfig(_Model):
    """Overrides of the platform's cost model (see `Platform.costs`); unset fields keep the platform's."""

    tsc_mhz: Annotated[float | None, Field(gt=0, le=10_000)] = None
    line_same_socket_ns: Annotated[float | None, Field(ge=0, le=10_000)] = None
    line_other_socket_ns: Annotated[float | None, Field(ge=0, le=10_000)] = None
    call_setup_cycles: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    apic_send_same_socket_cycles: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    apic_send_other_socket_cycles: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    ipi_delivery_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    irq_entry_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    exit_housekeeping_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    entry_housekeeping_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    irq_direct_saving_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    sched_switch_ns: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    spec_ctrl_write_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None


class PowerConfig(_Model):
    """Overrides of the power estimates: per core by core C-state, and per package (uncore) by
    package C-state."""

    state_watts: dict[str, Annotated[float, Field(ge=0, le=1000)]] = Field(
        default_factory=dict, description="Watts of a core in the core C-state of the named table state."
    )
    busy_watts: Annotated[float | None, Field(ge=0, le=1000)] = Field(
        default=None, description="Watts of a core in C0."
    )
    uncore_watts: dict[str, Annotated[float, Field(ge=0, le=1000)]] = Field(
        default_factory=dict, description="Watts of a package's uncore per package state (PC0, PC2, PC6...)."
    )


class HardwareConfig(_Model):
    """Hardware features the BIOS or the driver set, beneath cpuidle."""

    c1e_promotion: bool = Field(
        default=False,
        description="MSR_IA32_POWER_CTL bit 1: the core turns C1 requests into C1E. intel_idle clears it on "
        "skx, icx and Westmere (disable_promotion_to_c1e); on, C1 stays C1 to the OS and exits like C1E.",
    )


class PackageConfig(_Model):
    """The package C-state limit (MSR_PKG_CST_CONFIG_CONTROL bits 2:0, set by the BIOS)."""

    limit: Literal["PC0", "PC2", "PC3", "PC6"] = Field(
        default="PC6",
        description="Deepest package C-state allowed: PC0 (none), PC2 (PC3 on Westmere), PC6. On skx a "
        "limit below PC6 makes intel_idle rewrite C6 to 92/276 us.",
    )
    snoop_rate_hz: Annotated[float | None, Field(ge=0, le=100_000)] = Field(
        default=None,
        description="Snoops, DMA and remote memory traffic pulling a package out of its deepest state, per "
        "second (an estimate; the platform's if unset).",
    )


class OutputConfig(_Model):
    """What the result keeps besides the statistics."""

    timeline_cpus: Annotated[int, Field(ge=0, le=16)] = 4
    timeline_ms: Annotated[float, Field(ge=0, le=100)] = 5.0


class SimConfig(_Model):
    """One simulation run. Every field has a default; `{}` is the default run."""

    platform: str = Field(
        default="skx", description="Built-in table name (skx, icx, wsm, ...) or a custom id."
    )
    platform_table: Platform | None = Field(
        default=None, description="The resolved table for a custom platform (filled in by the service)."
    )
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] = 1
    duration_ms: Annotated[float, Field(gt=0, le=MAX_DURATION_MS)] = 1000.0
    topology: Topology = Field(default_factory=Topology)
    governor: GovernorConfig = Field(default_factory=GovernorConfig)
    states: StatesConfig = Field(default_factory=StatesConfig)
    wakeups: WakeupsConfig = Field(default_factory=WakeupsConfig)
    ipi_wakeup: IpiWakeupConfig = Field(default_factory=IpiWakeupConfig)
    costs: CostsConfig = Field(default_factory=CostsConfig)
    power: PowerConfig = Field(default_factory=PowerConfig)
    package: PackageConfig = Field(default_factory=PackageConfig)
    hardware: HardwareConfig = Field(default_factory=HardwareConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)

    @model_validator(mode="after")
    def _check(self) -> SimConfig:
        table = self.resolve_platform()
        names = [s.name for s in table.states]
        n_cpus = self.n_cpus(table)
        if n_cpus > MAX_CPUS:
            raise ValueError(f"topology: {n_cpus} CPUs is over the limit of {MAX_CPUS}")
        _check_state_names("states.disabled", self.states.disabled, names)
        _check_state_names("states.irq_enable", list(self.states.irq_enable), names)
        _check_state_names("power.state_watts", list(self.power.state_watts), names)
        package_states = table.package.names() if table.package else ["PC0"]
        if self.package.limit not in package_states:
            raise ValueError(
                f"package.limit: {table.name} has no {self.package.limit}; its package states are "
                f"{', '.join(package_states)}"
            )
        for name in self.power.uncore_watts:
            if name not in package_states:
                raise ValueError(
                    f"power.uncore_watts: unknown package state {name!r}; {table.name} has "
                    f"{', '.join(package_states)}"
                )
        enabled = [n for n in names if n not in self.states.disabled]
        if not enabled:
            raise ValueError("states.disabled: every state is disabled; at least one must stay enabled")
        for name, on in self.states.irq_enable.items():
            state = table.states[names.index(name)]
            bad = {"CPUIDLE_FLAG_IBRS", "CPUIDLE_FLAG_INIT_XSTATE"} & set(state.flags)
            if on and bad:
                raise ValueError(
                    f"states.irq_enable.{name}: cannot enter {name} with interrupts enabled: it has "
                    f"{', '.join(sorted(bad))}, which intel_idle never combines with IRQ_ENABLE "
                    "(the IBRS and xstate enter paths run with interrupts off)"
                )
            if name == "POLL" and not on:
                raise ValueError("states.irq_enable.POLL: POLL always runs with interrupts enabled")
        if self.governor.name == "fixed" and self.governor.fixed_state is not None:
            _check_state_names("governor.fixed_state", [self.governor.fixed_state], enabled)
        for i, timer in enumerate(self.wakeups.timers):
            _check_cpus(f"wakeups.timers.{i}.cpus", timer.cpus, n_cpus)
        for i, load_class in enumerate(self.wakeups.load):
            _check_cpus(f"wakeups.load.{i}.cpus", load_class.cpus, n_cpus)
        missing = [c for c in self.wakeups.busy_cpus if c >= n_cpus]
        if missing:
            raise ValueError(
                f"wakeups.busy_cpus: CPU {missing[0]} does not exist (CPUs are 0..{n_cpus - 1})"
            )
        for field, src in (
            ("wakeups.interrupts", self.wakeups.interrupts),
            ("wakeups.ipis", self.wakeups.ipis),
            ("wakeups.sched_wakeups", self.wakeups.sched_wakeups),
        ):
            for attr in ("cpus", "senders", "targets"):
                if hasattr(src, attr):
                    _check_cpus(f"{field}.{attr}", getattr(src, attr), n_cpus)
        expected = self.expected_events(table)
        if expected > MAX_EXPECTED_EVENTS:
            raise ValueError(
                f"duration_ms: about {expected:,.0f} events expected "
                f"({n_cpus} CPUs x {self.duration_ms:g} ms at the configured rates), "
                f"over the limit of {MAX_EXPECTED_EVENTS:,}; shorten the run or lower the rates"
            )
        return self

    def resolve_platform(self) -> Platform:
        if self.platform_table is not None:
            return self.platform_table
        if self.platform not in BUILTIN_PLATFORMS:
            raise ValueError(
                f"platform: unknown platform {self.platform!r}; built-in tables are "
                f"{', '.join(sorted(BUILTIN_PLATFORMS))}"
            )
        return BUILTIN_PLATFORMS[self.platform]

    def n_cpus(self, table: Platform | None = None) -> int:
        """Logical CPUs: sockets x cores x threads."""
        table = table or self.resolve_platform()
        return self.topology.sockets * self.cores_per_socket(table) * self.threads_per_core(table)

    def cores_per_socket(self, table: Platform | None = None) -> int:
        return self.topology.cores_per_socket or (table or self.resolve_platform()).topology.cores_per_socket

    def threads_per_core(self, table: Platform | None = None) -> int:
        return self.topology.threads_per_core or (table or self.resolve_platform()).topology.threads_per_core

    def expected_events(self, table: Platform | None = None) -> float:
        """Rough count of arrivals, for the size limit (each arrival costs a few events)."""
        n = self.n_cpus(table)
        w = self.wakeups
        per_cpu_hz = (
            w.tick.hz
            + sum(1e6 / t.period_us for t in w.timers)
            + w.interrupts.rate_hz
            + 2 * w.ipis.rate_hz
            + 2 * w.sched_wakeups.rate_hz
        )
        events = 3.0 * n * per_cpu_hz * self.duration_ms / 1000.0
        for load_class in w.load:
            share = 1.0 if load_class.cpus == "all" else len(set(load_class.cpus)) / n
            events += 3.0 * n * share * load_class.expected_rate_hz() * self.duration_ms / 1000.0
        return events

    def config_hash(self) -> str:
        """SHA-256 of the canonical JSON of the config (resolved table included)."""
        data = self.model_dump(mode="json")
        blob = _canonical(data)
        if data["platform_table"] is None:
            # A built-in table's canonical JSON is computed once, and put in place of the null
            # (the key occurs once, and inside a JSON string its quotes would be escaped).
            table = _builtin_json(self.platform)
            blob = blob.replace('"platform_table":null', f'"platform_table":{table}', 1)
        return hashlib.sha256(blob.encode()).hexdigest()


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


@functools.cache
def _builtin_json(name: str) -> str:
    """The canonical JSON of a built-in table (most of a config's hashed bytes)."""
    return _canonical(BUILTIN_PLATFORMS[name].model_dump(mode="json"))


def _check_state_names(field: str, given: list[str], names: list[str]) -> None:
    for name in given:
        if name not in names:
            raise ValueError(f"{field}: unknown state {name!r}; this table has {', '.join(names)}")


def _check_cpus(field: str, cpus: str | list[int], n_cpus: int) -> None:
    if isinstance(cpus, list):
        bad = [c for c in cpus if c >= n_cpus]
        if bad:
            raise ValueError(f"{field}: CPU {bad[0]} does not exist (CPUs are 0..{n_cpus - 1})")
        if not cpus:
            raise ValueError(f"{field}: empty CPU list (use \"all\" or name at least one CPU)")


def config_errors(exc: ValidationError) -> list[dict[str, object]]:
    """Pydantic errors as `{"loc": [...], "msg": ...}` with the field named even for cross-field checks.

    Cross-field checks raise `ValueError("a.b.c: reason")`; pydantic reports those at the model's
    root, so the field path is taken back out of the message.
    """
    out: list[dict[str, object]] = []
    for err in exc.errors():
        loc: list[str | int] = list(err["loc"])
        msg = str(err["msg"])
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        head, sep, tail = msg.partition(": ")
        if sep and " " not in head:
            loc = loc + [int(p) if p.isdigit() else p for p in head.split(".")]
            msg = tail
        out.append({"loc": loc, "msg": msg, "type": err["type"]})
    return out
