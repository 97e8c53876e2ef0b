"""SimConfig: everything a run needs, validated, with a default for every field.

`SimConfig()` (or `{}` through the API) is the default dashboard run: skx, two sockets, `menu`,
a light mixed load, one simulated second. Limits are checked here, before any work starts, with
messages that name the field and the reason.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_serializer,
    model_validator,
)

from engine.governors import releases
from engine.layout import check_uneven_layout
from engine.load_config import MAX_LOAD_CLASSES, LoadClass
from engine.platforms import BUILTIN_PLATFORMS, HASH_EXEMPT, Platform
from engine.repeats import SEED_MAX
from engine.table_rules import CostsConfig, PowerConfig, irq_enable_refusal, table_errors
from engine.text_schema import no_nul_strings
from engine.timer_interval import TimerInterval

MAX_CPUS = 1024
MAX_DURATION_MS = 60_000.0
# Shortest run: one microsecond (shorter rounds to no simulated time at all).
MIN_DURATION_MS = 0.001
# Longest PM QoS limit: 10 s (beyond it the limit is no limit, and its nanoseconds overflow).
MAX_LATENCY_LIMIT_US = 10_000_000.0
# Shortest timer period: the clock counts nanoseconds.
MIN_PERIOD_US = 0.001
MAX_PLATFORM_NAME = 64
# The kernel preallocates per-event sample arrays: this bounds memory (about 60 bytes per event).
MAX_EXPECTED_EVENTS = 20_000_000

# Validation context key: `platform` may name a custom table the caller (a service that stores
# custom platforms) resolves, checking the config against it then (`SimConfig.check_against`).
CUSTOM_PLATFORM_LATER = "custom_platform_later"

GovernorName = Literal["menu", "teo", "ladder", "haltpoll", "oracle", "fixed"]
Mechanism = Literal["ipi", "mwait_rfc", "tif_polling"]
WorkDistribution = Literal["exponential", "fixed"]
PackageLimit = Literal["PC0", "PC2", "PC3", "PC6", "PC7", "PC8", "PC9", "PC10", "unlimited"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)


class Topology(_Model):
    """Sockets, cores and SMT threads; unset counts are the platform's typical part.

    Logical CPUs are numbered socket by socket, and within a socket thread by thread: with C
    cores and T threads per core, CPU s*C*T + t*C + k is thread t of core k of socket s (so the
    two threads of core k are CPUs k and k + C on socket 0, as many BIOSes enumerate them).
    Cores k..k+M-1 (M = `cores_per_module`, from k = 0) share a module. Only online CPUs are
    simulated: a machine read from a dump is given as its online layout, every count set, and
    `cpus` says how many logical CPUs that is (checked against the product). A machine whose
    sockets have different numbers of online CPUs gives them as `cpus_per_socket` instead, with
    `threads_per_core_by_socket` where its cores have SMT siblings (socket s then has
    cpus_per_socket[s] / threads_per_core_by_socket[s] cores, numbered as above).
    """

    sockets: Annotated[int, Field(ge=1, le=16)] = Field(
        default=2, description="Sockets (packages); the platform's part if unset (2 on skx, icx, wsm)."
    )
    cores_per_socket: Annotated[int | None, Field(ge=1, le=512)] = None
    threads_per_core: Annotated[int | None, Field(ge=1, le=4)] = Field(
        default=None,
        description="SMT threads per core (1 to 4: Xeon Phi has 4); the platform's (2 on skx, icx, wsm) "
        "if unset.",
    )
    cores_per_module: Annotated[int | None, Field(ge=1, le=16)] = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="Cores sharing a module (L2, sysfs cluster_id): the platform's if unset (4 on srf).",
    )
    cpus: Annotated[int | None, Field(ge=1)] = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The machine's online logical CPUs, when the layout comes from a machine: must equal "
        "sockets x cores_per_socket x threads_per_core (or the sum of cpus_per_socket).",
    )
    cpus_per_socket: list[Annotated[int, Field(ge=1, le=512)]] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        max_length=16,
        description="Online logical CPUs of each socket, for a machine whose sockets differ (CPUs taken "
        "offline, asymmetric parts): one count per socket; each CPU its own core unless "
        "threads_per_core_by_socket pairs them; CPUs are numbered socket by socket.",
    )
    threads_per_core_by_socket: list[Annotated[int, Field(ge=1, le=4)]] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        max_length=16,
        description="With cpus_per_socket: each socket's SMT threads per core (a machine's sibling lists), "
        "so that socket s has cpus_per_socket[s] / threads_per_core_by_socket[s] cores; unset, 1 "
        "everywhere. threads_per_core and cores_per_socket, if given, are the largest.",
    )
    core_threads: (
        list[Annotated[list[Annotated[int, Field(ge=1, le=4)]], Field(min_length=1, max_length=512)]] | None
    ) = Field(
        default=None,
        exclude_if=lambda v: v is None,
        max_length=16,
        description="With cpus_per_socket, instead of threads_per_core_by_socket: each socket's cores as "
        "their online SMT threads, in core order (a hybrid part's P-cores 2, E-cores 1; a core whose "
        "sibling is offline 1); each socket's sum is its CPUs.",
    )


# Every name `governor.kernel` takes for some governor (`releases.known_names`), as the schema's enum.
KERNEL_NAMES = list(dict.fromkeys(n for g in releases.KERNEL_GOVERNORS for n in releases.known_names(g)))


class GovernorConfig(_Model):
    """The cpuidle governor. `fixed` always asks for `fixed_state` (the C1-only experiments)."""

    name: GovernorName = "menu"
    fixed_state: str | None = Field(
        default=None, description="State name for the `fixed` governor (default: deepest enabled)."
    )
    kernel: Annotated[
        str, WithJsonSchema({"type": "string", "enum": KERNEL_NAMES})
    ] | None = Field(
        default=None,
        description=(
            "The kernel the governor follows: a mainline tag (v6.6, v6.12, v6.18, v6.19; v7.0-rcN as "
            "prereleases), a stable point release (v6.12.60), or a commit (12 hex digits). Default: "
            "the newest released tag modelled for the governor. Not for oracle and fixed; ladder and "
            "haltpoll take tags only. A commit may be abbreviated to 7 or more hex digits."
        ),
        max_length=40,
    )

    @model_validator(mode="after")
    def _check_kernel(self) -> GovernorConfig:
        try:
            releases.resolve(self.name, self.kernel)
        except ValueError:
            known = releases.known_names(self.name)
            if not known:
                raise ValueError(
                    f"governor.kernel: {self.name} is not a kernel governor; leave kernel unset"
                ) from None
            raise ValueError(
                f"governor.kernel: unknown {self.kernel!r} for {self.name}; known: {', '.join(known)}"
            ) from None
        return self


class StatesConfig(_Model):
    """Which states may be used, and how they are entered."""

    disabled: list[str] = Field(
        default_factory=list, description="State names disabled, as in sysfs `disable`."
    )
    irq_enable: dict[str, bool] = Field(
        default_factory=dict,
        description="Per-state override of CPUIDLE_FLAG_IRQ_ENABLE (enter with interrupts enabled).",
    )
    latency_limit_us: Annotated[float | None, Field(ge=0, le=MAX_LATENCY_LIMIT_US)] = Field(
        default=None, description="PM QoS CPU latency limit in microseconds (0 = POLL only); none if unset."
    )


class TickConfig(_Model):
    """The scheduler tick. HZ defaults to 1000, what RHEL (8 to 10), Fedora and Ubuntu since 24.04
    ship (CONFIG_HZ_1000 in their kernel configs); Debian and SUSE ship 250. At 1000, icx's POLL
    limit is TICK_NSEC/16 = 62.5 us (its C6 residency 600 us is past the cap)."""

    hz: Literal[100, 250, 300, 1000] = 1000
    nohz: bool = Field(default=True, description="Let the governor stop the tick while idle (NO_HZ_IDLE).")
    nohz_full: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list,
        description="CPUs booted `nohz_full=` (adaptive ticks): tick_nohz_idle_exit() leaves their tick "
        "to be re-evaluated instead of restarting it, and menu's nohz_full variant treats them apart.",
    )
    highres: bool = Field(
        default=True,
        description="High-resolution timers on (CONFIG_HIGH_RES_TIMERS, every x86 distribution): then "
        "hrtimers do not keep a running tick (tick_nohz_next_event() looks at timer-wheel timers "
        "only), while tick_nohz_get_sleep_length() still reports them to the governor.",
    )
    handler_us: Annotated[float, Field(ge=0, le=1000)] = Field(
        default=1.5, description="Tick handler time (estimate)."
    )
    rcu_grace_period_us: Annotated[float, Field(gt=0, le=1_000_000)] | None = Field(
        default=None,
        description="Each task run after an idle exit queues an RCU callback that waits this long for "
        "its grace period; meanwhile rcu_needs_cpu() keeps a running tick and wakes a stopped one a "
        "jiffy ahead (tick_nohz_next_event()). "
        "A model parameter (a guess: grace periods take a few ticks). Unset: no RCU callbacks.",
    )
    rcu_nocbs: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list,
        description="CPUs booted `rcu_nocbs=`: their callbacks are offloaded to rcuo kthreads and never "
        "keep the tick.",
    )


class TimerSource(_Model):
    """A cyclictest-like periodic timer: a thread sleeps until each expiry, then runs `work_us`."""

    period_us: Annotated[float, Field(ge=MIN_PERIOD_US, le=10_000_000)] = 1000.0
    cpus: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"
    handler_us: Annotated[float, Field(ge=0, le=1000)] = Field(
        default=0.5, description="hrtimer interrupt handler time, including the task wake-up (estimate)."
    )
    work_us: Annotated[float, Field(ge=0, le=1_000_000)] = 2.0
    kind: Literal["hrtimer", "timer_wheel"] = Field(
        default="hrtimer",
        description="hrtimer (clock_nanosleep, cyclictest) or a timer-wheel timer (timer_list: "
        "timeouts, delayed work), which keeps a running tick when due within it.",
    )
    interval: TimerInterval | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="Draw each expiry's distance instead of a fixed period (`period_us` is then unused): "
        "`uniform` in [min_us, max_us] or from `quantiles_us`, counted from `rearm_after_us` after the "
        "previous expiry (wult's delayed events). Each CPU draws from its own stream.",
    )

    def mean_interval_us(self) -> float:
        """The mean time between expiries: the period, or the drawn intervals' mean."""
        return self.period_us if self.interval is None else self.interval.mean_us()


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


class HardwareConfig(_Model):
    """Hardware features the BIOS or the driver set, beneath cpuidle."""

    c1e_promotion: bool = Field(
        default=False,
        description="MSR_IA32_POWER_CTL bit 1: the core turns C1 requests into C1E. intel_idle clears it on "
        "skx, icx and Westmere (disable_promotion_to_c1e); on, C1 stays C1 to the OS and exits like C1E.",
    )
    c1_demotion: bool = Field(
        default=False,
        description="MSR_PKG_CST_CONFIG_CONTROL bits 26 and 28 (C1 demotion and undemotion; the sysfs "
        "knob intel_c1_demotion on spr, emr, gnr, gnrd, srf, Clearwater Forest and grr; its default is "
        "the BIOS's): the firmware keeps deeper requests in core C1 while wake-ups come fast. cpuidle "
        "still counts the requested state; the core's state and the exit latency change. The "
        "firmware's rule is not documented: modelled (an estimate) as demoting a request when the "
        "CPU's previous stay was shorter than the requested state's target residency.",
    )


class PackageConfig(_Model):
    """The package C-state limit (MSR_PKG_CST_CONFIG_CONTROL bits 2:0, set by the BIOS)."""

    limit: PackageLimit = Field(
        default="PC6",
        description="Deepest package C-state allowed: PC0 (none), one of the platform's package states, "
        "or deeper than all of them (no limit). Unset, the platform's deepest (PC6 on the Xeons, PC10 on "
        "the clients, PC0 where there are none). On skx and spr a limit below PC6 makes intel_idle "
        "rewrite C6 (92/276 and 190/600 us).",
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
        default="skx",
        max_length=MAX_PLATFORM_NAME,
        description="Built-in table name (skx, icx, wsm, ...) or a custom id.",
    )
    platform_table: Platform | None = Field(
        default=None, description="The resolved table for a custom platform (filled in by the service)."
    )
    # OpenAPI documents print bounds as floats, and 2**63 - 1 rounds up to 2**63 there: "below
    # 2**63" (exact as a float) says the bound exactly.
    seed: Annotated[int, Field(ge=0, le=SEED_MAX, json_schema_extra={"exclusiveMaximum": SEED_MAX + 1})] = 1
    duration_ms: Annotated[float, Field(ge=MIN_DURATION_MS, le=MAX_DURATION_MS)] = 1000.0
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
    def _check(self, info: ValidationInfo) -> SimConfig:
        deferred = self.platform_table is None and self.platform not in BUILTIN_PLATFORMS
        if deferred and (info.context or {}).get(CUSTOM_PLATFORM_LATER):
            return self  # the caller resolves the id to its table, then calls `check_against`
        self.check_against(self.resolve_platform())
        return self

    def check_against(self, table: Platform) -> None:
        """What depends on the resolved table (its states, its package states, its CPUs), and the
        limits a run needs to be computable at all. Raises `ValueError("field.path: reason")`.

        Validation calls it with the built-in or inline table; a service that resolves a custom
        platform's id to its table calls it once, after resolving.
        """
        limit_errors = self._limit_errors(table)
        if limit_errors:
            first = limit_errors[0]
            loc = first["loc"]
            assert isinstance(loc, list)
            raise ValueError(f"{'.'.join(str(p) for p in loc)}: {first['msg']}")
        names = [s.name for s in table.states]
        # Unset, the socket count and the package limit are the platform's; they are written into
        # the config so that what it shows is what ran (for skx, icx and wsm: 2 and PC6, as ever).
        if "sockets" not in self.topology.model_fields_set:
            counts = self.topology.cpus_per_socket
            self.topology.sockets = table.topology.sockets if counts is None else len(counts)
        if "limit" not in self.package.model_fields_set:
            self.package.limit = table.deepest_package_state()  # type: ignore[assignment]
        self._resolve_driver_governor(table)
        check_uneven_layout(self.topology)
        n_cpus = self.n_cpus(table)
        if n_cpus > MAX_CPUS:
            raise ValueError(f"topology: {n_cpus} CPUs is over the limit of {MAX_CPUS}")
        if self.topology.cpus is not None and self.topology.cpus != n_cpus:
            uneven = self.uneven_sockets(table)
            layout = (
                f"cpus_per_socket {uneven} sums to"
                if uneven is not None
                else (
                    f"{self.topology.sockets} socket(s) x {self.cores_per_socket(table)} cores x "
                    f"{self.threads_per_core(table)} thread(s) is"
                )
            )
            raise ValueError(f"topology.cpus: {self.topology.cpus} CPUs given, but {layout} {n_cpus}")
        _check_state_names("states.disabled", self.states.disabled, names)
        _check_state_names("states.irq_enable", list(self.states.irq_enable), names)
        _check_state_names("power.state_watts", list(self.power.state_watts), names)
        package_states = table.package_states()
        limit = self.package.limit
        deeper_than_all = limit == "unlimited" or int(limit[2:]) > int(package_states[-1][2:])
        if limit not in package_states and not deeper_than_all:
            raise ValueError(
                f"package.limit: {table.name} has no {limit}; its package states are "
                f"{', '.join(package_states)} (or a limit deeper than all of them)"
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
            refusal = irq_enable_refusal(name, state.flags)
            if on and refusal:
                raise ValueError(f"states.irq_enable.{name}: {refusal}")
            if name == "POLL" and not on:
                raise ValueError("states.irq_enable.POLL: POLL always runs with interrupts enabled")
        if self.governor.name == "haltpoll" and (len(names) < 2 or names[0] != "POLL"):
            raise ValueError(
                f"governor.name: haltpoll needs POLL as state 0 and a state after it; {table.name} has "
                f"{', '.join(names)}"
            )
        if self.hardware.c1_demotion and not any(s.core_level == 1 for s in table.states):
            raise ValueError(f"hardware.c1_demotion: {table.name} has no state in core C1 to demote to")
        for key in ("nohz_full", "rcu_nocbs"):
            bad = [c for c in getattr(self.wakeups.tick, key) if c >= n_cpus]
            if bad:
                raise ValueError(
                    f"wakeups.tick.{key}: CPU {bad[0]} does not exist (CPUs are 0..{n_cpus - 1})"
                )
        if self.governor.name == "fixed" and self.governor.fixed_state is not None:
            _check_state_names("governor.fixed_state", [self.governor.fixed_state], enabled)
        for i, timer in enumerate(self.wakeups.timers):
            _check_cpus(f"wakeups.timers.{i}.cpus", timer.cpus, n_cpus)
        for i, load_class in enumerate(self.wakeups.load):
            _check_cpus(f"wakeups.load.{i}.cpus", load_class.cpus, n_cpus)
        missing = [c for c in self.wakeups.busy_cpus if c >= n_cpus]
        if missing:
            raise ValueError(f"wakeups.busy_cpus: CPU {missing[0]} does not exist (CPUs are 0..{n_cpus - 1})")
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

    def _limit_errors(self, table: Platform) -> list[dict[str, object]]:
        """What the model would accept but a run cannot do (it would fail in the worker, or make
        nonsense): the same limits for a table given inline as for a custom platform."""
        errors: list[dict[str, object]] = []

        def refuse(loc: list[str | int], msg: str) -> None:
            errors.append({"loc": loc, "msg": msg, "type": "value_error"})

        # Bounds of one field (the duration, a period, the latency limit, tsc_mhz) are the fields'
        # own (`Field`), so the API's schema states them; a drawn interval's mean depends on two.
        for i, timer in enumerate(self.wakeups.timers):
            if timer.interval is not None and timer.interval.mean_us() * 1000 < 1:
                refuse(
                    ["wakeups", "timers", i, "interval"],
                    "its mean (rearm_after_us plus the drawn distance) must be at least 0.001 us",
                )
        if self.governor.fixed_state is not None and self.governor.name != "fixed":
            refuse(
                ["governor", "fixed_state"], f"only the fixed governor takes it, not {self.governor.name!r}"
            )
        if self.platform_table is not None:
            errors += table_errors(self.platform_table, ["platform_table"])
        return errors

    def _resolve_driver_governor(self, table: Platform) -> None:
        """Without a cpuidle driver there is no governor: every idle entry is HLT, which the `fixed`
        governor on the table's HLT state reproduces; haltpoll's table has its own governor."""
        unset = "name" not in self.governor.model_fields_set
        if table.driver == "none":
            if unset:
                self.governor.name = "fixed"
                self.governor.fixed_state = self.governor.fixed_state or table.states[-1].name
            elif self.governor.name != "fixed":
                raise ValueError(
                    f"governor.name: {table.name} has no cpuidle driver, so no governor runs (every idle "
                    f'entry is HLT); use "fixed", not {self.governor.name!r}'
                )
        elif table.driver == "haltpoll" and unset and "haltpoll" in get_args(GovernorName):
            self.governor.name = "haltpoll"

    def resolve_platform(self) -> Platform:
        if self.platform_table is not None:
            return self.platform_table
        if self.platform not in BUILTIN_PLATFORMS:
            raise ValueError(f"platform: {unknown_platform_message(self.platform)}")
        return BUILTIN_PLATFORMS[self.platform]

    def n_cpus(self, table: Platform | None = None) -> int:
        """Logical CPUs: sockets x cores x threads (the sum of `cpus_per_socket` where given)."""
        return sum(self.socket_cpus(table))

    def uneven_sockets(self, table: Platform | None = None) -> list[int] | None:
        """Each socket's CPUs where the sockets differ: the config's, or (with the layout left to
        the platform) an imported machine's."""
        if self.topology.cpus_per_socket is not None:
            return list(self.topology.cpus_per_socket)
        part = (table or self.resolve_platform()).topology
        own = self.topology.cores_per_socket is not None or self.topology.threads_per_core is not None
        if part.cpus_per_socket is None or own or self.topology.sockets != len(part.cpus_per_socket):
            return None
        return list(part.cpus_per_socket)

    def socket_cpus(self, table: Platform | None = None) -> list[int]:
        """Each socket's logical CPUs, in CPU order (sockets are numbered CPU ranges)."""
        table = table or self.resolve_platform()
        uneven = self.uneven_sockets(table)
        if uneven is not None:
            return uneven
        return [self.cores_per_socket(table) * self.threads_per_core(table)] * self.topology.sockets

    def core_threads(self, table: Platform | None = None) -> list[list[int]]:
        """Each socket's cores as their SMT threads, in core order: an uneven layout's
        (`core_threads`, or `threads_per_core_by_socket`, else single-thread cores), else the
        same on every socket."""
        table = table or self.resolve_platform()
        uneven = self.uneven_sockets(table)
        if uneven is None:
            threads = self.topology.threads_per_core or table.topology.threads_per_core
            cores = self.topology.cores_per_socket or table.topology.cores_per_socket
            return [[threads] * cores for _ in range(self.topology.sockets)]
        layout = self.topology if self.topology.cpus_per_socket is not None else table.topology
        if layout.core_threads is not None:
            return [list(c) for c in layout.core_threads]
        by_socket = layout.threads_per_core_by_socket or [1] * len(uneven)
        return [[k] * (c // k) for c, k in zip(uneven, by_socket, strict=True)]

    def socket_cores(self, table: Platform | None = None) -> list[int]:
        """Each socket's cores, in socket order."""
        return [len(c) for c in self.core_threads(table)]

    def cores_per_socket(self, table: Platform | None = None) -> int:
        """Cores of a socket (of the largest, where sockets differ)."""
        table = table or self.resolve_platform()
        if self.uneven_sockets(table) is not None:
            return max(self.socket_cores(table))
        return self.topology.cores_per_socket or table.topology.cores_per_socket

    def threads_per_core(self, table: Platform | None = None) -> int:
        """SMT threads per core (the most any core has, where they differ)."""
        return max(max(c) for c in self.core_threads(table))

    def cores_per_module(self, table: Platform | None = None) -> int:
        return self.topology.cores_per_module or (table or self.resolve_platform()).topology.cores_per_module

    def expected_events(self, table: Platform | None = None) -> float:
        """Rough count of arrivals, for the size limit (each arrival costs a few events)."""
        n = self.n_cpus(table)
        w = self.wakeups
        per_cpu_hz = (
            w.tick.hz
            + sum(1e6 / max(t.mean_interval_us(), 0.001) for t in w.timers)
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
        data = self.model_dump(mode="json", exclude={"platform_table": HASH_EXEMPT})
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
    return _canonical(BUILTIN_PLATFORMS[name].model_dump(mode="json", exclude=HASH_EXEMPT))


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
            raise ValueError(f'{field}: empty CPU list (use "all" or name at least one CPU)')


def config_errors(exc: ValidationError | ValueError) -> list[dict[str, object]]:
    """Pydantic errors (or `check_against`'s) as `{"loc": [...], "msg": ...}` with the field named
    even for cross-field checks.

    Cross-field checks raise `ValueError("a.b.c: reason")`; pydantic reports those at the model's
    root, so the field path is taken back out of the message.
    """
    if not isinstance(exc, ValidationError):
        return [field_error([], str(exc), "value_error")]
    return [field_error(list(err["loc"]), str(err["msg"]), err["type"]) for err in exc.errors()]


def field_error(loc: list[str | int], msg: str, type_: str) -> dict[str, object]:
    """One error, a `field.path: reason` message's path moved into `loc`."""
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    head, sep, tail = msg.partition(": ")
    if sep and " " not in head:
        loc = loc + [int(p) if p.isdigit() else p for p in head.split(".")]
        msg = tail
    return {"loc": loc, "msg": msg, "type": type_}


# The unknown-platform message lists this many names at most, the closest first.
UNKNOWN_PLATFORM_NAMES = 10


def unknown_platform_message(name: str, custom: list[str] | None = None) -> str:
    """ "unknown platform 'x'; ..." with at most `UNKNOWN_PLATFORM_NAMES` of the built-in and custom
    names (None: custom ones not known here), the closest to `name` first, and how many there are."""
    builtin = sorted(BUILTIN_PLATFORMS)
    names = builtin + sorted(custom or [])
    ranked = sorted(names, key=lambda n: (-difflib.SequenceMatcher(None, name, n).ratio(), n))
    shown = ranked[:UNKNOWN_PLATFORM_NAMES]
    echo = name if len(name) <= 64 else f"{name[:64]}...({len(name) - 64} more)"
    counts = f"{len(builtin)} built-in tables"
    if custom is not None:
        counts += f" and {len(custom)} custom" if custom else "; there are no custom tables"
    more = f" ({len(names) - len(shown)} more)" if len(names) > len(shown) else ""
    return f"unknown platform {echo!r}; {counts}; the closest: {', '.join(shown)}{more}"
