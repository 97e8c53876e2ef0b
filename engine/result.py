"""SimResult: what a run produces. Flat, JSON-ready, byte-identical for the same config and engine.

Wall time and compile time are not here (they belong to the run record), so that the same config
always gives the same bytes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# Latency sources, in the order charts show them. `wake` and `intr` are wult's WakeLatency and
# IntrLatency for wake-ups from idle; the others are per wake-up source, busy CPUs included.
LATENCY_SOURCES = ("wake", "intr", "timer", "irq", "ipi", "sched")
LATENCY_LABELS = {
    "wake": "WakeLatency (wake event to first instruction after idle returns)",
    "intr": "IntrLatency (wake event to the interrupt handler)",
    "timer": "Timer: expiry to the woken thread running (cyclictest)",
    "irq": "Device interrupt: arrival to the handler",
    "ipi": "smp_call_function_single: call to the function running on the target",
    "sched": "Scheduler wake-up: try_to_wake_up() to the task running on the target",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Histogram(_Model):
    """Log-binned counts: `counts[i]` samples fell in [edges_ns[i], edges_ns[i+1])."""

    edges_ns: list[float]
    counts: list[int]


class LatencyFigures(_Model):
    """A latency distribution's figures without its histogram (per C-state, where space counts)."""

    count: int
    mean_ns: float
    p50_ns: float
    p90_ns: float
    p99_ns: float
    p999_ns: float
    max_ns: float


class LatencyStats(LatencyFigures):
    """A latency distribution's figures and its histogram."""

    histogram: Histogram


class StateStats(_Model):
    """One C-state's counters, as `cpuidle_enter_state()` keeps them, summed over CPUs."""

    index: int
    name: str
    exit_latency_us: float
    target_residency_us: float
    irq_enable: bool = Field(description="Entered with interrupts enabled in this run.")
    disabled: bool
    usage: int
    time_ns: int
    residency: float = Field(description="Share of simulated CPU time spent in this state.")
    above: int
    below: int
    rejected: int
    wake_latency_mean_ns: float | None = Field(description="Mean WakeLatency of wake-ups from this state.")
    intr_latency_mean_ns: float | None = Field(description="Mean IntrLatency of interrupt wake-ups from it.")
    exit_latency_mean_ns: float | None = Field(description="Mean drawn hardware exit latency.")
    wake_latency: LatencyFigures | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="WakeLatency of the wake-ups from this state (as wult's per-ReqCState figures); "
        "absent without any, and in results made before per-state figures existed.",
    )
    intr_latency: LatencyFigures | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="IntrLatency of the interrupt wake-ups from this state; absent without any.",
    )


SENDER_PARTS = ("setup", "csd_wait", "line_transfers", "apic_send")
SENDER_PART_LABELS = {
    "setup": "call setup (estimate; calibrated on Westmere)",
    "csd_wait": "csd_lock(): waiting until this CPU's previous no-wait call has run (one csd per CPU)",
    "line_transfers": "cache-line transfers: csd, call queue, idle word (measured line latency)",
    "apic_send": "APIC send (IPI path only)",
}


class LocalityCost(_Model):
    """Sender-side cost of no-wait calls to targets on one socket locality."""

    calls: int
    mean_cycles: float
    idle_target_calls: int
    idle_target_mean_cycles: float | None
    busy_target_calls: int
    busy_target_mean_cycles: float | None
    ipis_sent: int
    idle_target_parts_cycles: dict[str, float] | None = Field(
        description="Mean cycles per call to an idle target, by part (SENDER_PARTS); they add up to the mean."
    )
    busy_target_parts_cycles: dict[str, float] | None


class IpiStats(_Model):
    mechanism: str
    requested: int = Field(description="smp_call_function_single() calls made.")
    deferred: int = Field(description="Calls whose sender was idle when asked, made when it next ran.")
    coalesced: int = Field(description="Calls queued behind a pending one: no wake-up needed.")
    ipis_sent: int
    ipis_avoided: int = Field(description="Idle targets woken through their monitored line, no interrupt.")
    sched_requested: int
    sched_ipis_sent: int
    sched_ipis_avoided: int
    same_socket: LocalityCost
    other_socket: LocalityCost
    line_transfers_sender: int
    line_transfers_target: int
    line_transfers_same_socket: int
    line_transfers_other_socket: int
    line_transfers_from_llc: int = Field(
        default=0,
        description="Of the line transfers, those served from the LLC because the core that last wrote "
        "the line was in core C3 or deeper (its L1 and L2 flushed): cheaper, see costs.llc_hit_ns.",
    )
    stuck_wakeups: int = Field(
        description="mwait_rfc: targets left waiting because the sender took an interrupt."
    )
    stuck_mean_ns: float | None
    csd_wait_ns: int = Field(description="Sender time spent in csd_lock() waiting for its previous call.")


class Timeline(_Model):
    """State segments `[start_ns, end_ns, state]` of one CPU; state -1 is C0 (running)."""

    cpu: int
    segments: list[list[int]]


class Energy(_Model):
    """Energy from the hardware view: cores by core C-state, uncore by package C-state (estimates)."""

    estimate: bool = True
    joules: float
    mean_watts_per_cpu: float
    per_state_joules: dict[str, float] = Field(
        description="Core energy in the core C-state of each table state (POLL's core is in C0: busy)."
    )
    busy_joules: float = Field(description="Core energy in C0.")
    core_joules: float
    uncore_joules: float
    per_package_state_joules: dict[str, float]


class HardwareGroup(_Model):
    """Hardware residency of one socket, or of the whole system: shares of simulated time."""

    socket: int | None = Field(description="The socket; null for the whole system.")
    core: dict[str, float] = Field(description="Mean share of its cores in each core C-state (CC0, CC1...).")
    package: dict[str, float] = Field(description="Mean share of its packages in each package C-state.")
    turbostat: dict[str, float] = Field(
        description="As turbostat prints them: Busy%, CPU%c1 (per thread, averaged), CPU%c3/CPU%c6 "
        "(per core), Pkg%pcN (percent) and PkgWatt (watts; an estimate)."
    )
    pkg_watts: float = Field(description="Package power (cores plus uncore) per socket, an estimate.")
    module: dict[str, float] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="Mean share of its modules (cores sharing an L2) in each module C-state (MC6: "
        "turbostat's Mod%c6); empty where the platform has none.",
    )


class Hardware(_Model):
    """What the hardware counts beneath cpuidle's view (turbostat's columns).

    A core is in the shallowest core C-state its threads request; a package state needs every
    core of its scope in at least its core state. POLL, handlers inside an IRQ_ENABLE C1 stay,
    entry and exit paths are C0.
    """

    threads_per_core: int
    package_limit: str
    c1e_promotion: bool
    core_states: list[str]
    package_states: list[str]
    sockets: list[HardwareGroup]
    system: HardwareGroup
    per_core: list[list[float]] = Field(description="Per core: share in each of core_states.")
    per_cpu_busy: list[float] = Field(description="Per logical CPU: turbostat's Busy% as a share (C0).")
    per_cpu_c1: list[float] = Field(description="Per logical CPU: turbostat's CPU%c1 as a share.")
    module_states: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    family_modelled: bool = Field(
        default=True,
        exclude_if=lambda v: v,
        description="False where idlelab has no hardware model of the platform's family: the core, "
        "module and package figures then rest on another family's estimates (see `model_note`).",
    )
    model_note: str = Field(default="", exclude_if=lambda v: not v)


class IdleLoopStats(_Model):
    """How often the governor saw a stopped tick, and what the idle loop's exits did to it."""

    selections: int = Field(default=0, description="cpuidle_select() calls.")
    selections_tick_stopped: int = Field(default=0, description="Of which with the tick already stopped.")
    resched_exits: int = Field(
        default=0, description="do_idle() loop exits on NEED_RESCHED (tick_nohz_idle_exit() calls)."
    )
    resched_exits_tick_left_stopped: int = Field(
        default=0, description="Of which left the tick stopped (nohz_full CPUs); elsewhere it restarts."
    )


class SimResult(_Model):
    engine_version: str
    config_hash: str
    platform: str
    governor: str
    governor_kernel: str = Field(
        description="What the governor ran: its source file at the kernel named by governor.kernel (a tag, "
        "a stable point release with its backports, or a commit), or that it is not a kernel governor."
    )
    mechanism: str
    cpus: int
    sockets: int
    duration_ns: int
    events: int
    wakeups: int = Field(
        description="Wake-ups from idle: idle periods ended by an event (POLL time-outs are not)."
    )
    states: list[StateStats]
    busy_share: float
    per_cpu_state_names: list[str]
    per_cpu_residency: list[list[float]] = Field(description="Per CPU: share in each state, then busy.")
    per_cpu_usage: list[list[int]] = Field(
        default_factory=list,
        description="Per CPU, per state: cpuidle's `usage` (entries), as sysfs counts them.",
    )
    per_cpu_above: list[list[int]] = Field(
        default_factory=list,
        description="Per CPU, per state: `above` (stays shorter than the target residency).",
    )
    per_cpu_below: list[list[int]] = Field(
        default_factory=list,
        description="Per CPU, per state: `below` (a shallower state would have sufficed).",
    )
    latency: dict[str, LatencyStats]
    ipi: IpiStats
    timeline: list[Timeline]
    hardware: Hardware
    energy: Energy
    idle_loop: IdleLoopStats = Field(default_factory=IdleLoopStats)
    estimates: list[str] = Field(description="Model parameters of this run that are estimates, not facts.")
