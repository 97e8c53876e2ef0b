"""Platform tables: intel_idle C-state tables plus topology, cost model and power estimates.

Each built-in platform is one JSON file in `engine/platforms/`; adding a table is adding a file.
Every number carries its provenance: `kind` says whether it is a kernel fact, a published or
measured figure, a value calibrated on a published figure, or an estimate (a guess, and labelled so).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.text_schema import no_nul_strings

# `firmware`: a value the platform firmware reports (ACPI _CST), neither measured nor a kernel table.
Kind = Literal["kernel", "published", "measured", "firmware", "calibrated", "estimate"]

KNOWN_FLAGS = {
    "CPUIDLE_FLAG_POLLING",
    "CPUIDLE_FLAG_TIMER_STOP",
    "CPUIDLE_FLAG_UNUSABLE",
    "CPUIDLE_FLAG_OFF",
    "CPUIDLE_FLAG_TLB_FLUSHED",
    "CPUIDLE_FLAG_RCU_IDLE",
    "CPUIDLE_FLAG_IRQ_ENABLE",
    "CPUIDLE_FLAG_ALWAYS_ENABLE",
    "CPUIDLE_FLAG_IBRS",
    "CPUIDLE_FLAG_INIT_XSTATE",
    "CPUIDLE_FLAG_PARTIAL_HINT_MATCH",
}

# Where a table gives no median exit latency, the median is this share of the table's worst case.
DEFAULT_MEDIAN_SHARE = 0.7

# Core C-states as turbostat names them (CPU%c1, CPU%c3, CPU%c6, CPU%c7; C1E has no column), in
# depth order; `CState.core_level` indexes this tuple.
CORE_CSTATES = ("CC0", "CC1", "CC1E", "CC3", "CC6", "CC7")
CoreCState = Literal["CC1", "CC1E", "CC3", "CC6", "CC7"]
Driver = Literal["intel_idle", "acpi_idle", "haltpoll", "none"]


def _unset(value: object) -> bool:
    """Fields added after results were first published are left out of dumps while at their
    default, so an existing table's JSON (and every config hash built on it) keeps its bytes."""
    return value is None or value == [] or value == {} or value == ""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)


class Param(_Model):
    """A number with its provenance."""

    value: float
    kind: Kind
    source: str = ""


def estimate(value: float, source: str) -> Param:
    return Param(value=value, kind="estimate", source=source)


class CState(_Model):
    """One row of an intel_idle table (state 0 is POLL), plus the model's per-state terms."""

    # Spaces inside a name are the kernel's too (haltpoll's "haltpoll idle"); CPUIDLE_NAME_LEN is 16.
    name: Annotated[str, Field(min_length=1, max_length=16, pattern=r"^[A-Za-z0-9_\-]+( [A-Za-z0-9_\-]+)*$")]
    desc: str = ""
    mwait_hint: str | None = None
    flags: list[str] = Field(default_factory=list)
    exit_latency_us: Annotated[float, Field(ge=0, le=1_000_000)]
    target_residency_us: Annotated[float, Field(ge=0, le=10_000_000)]
    exit_latency_median_us: Param | None = Field(
        default=None, description="Median exit latency; the table's value is the 99.99th percentile."
    )
    hw_exit_latency_us: Param | None = Field(
        default=None,
        description="Worst case (99.99th percentile) of the exit the hardware takes, where measured apart "
        "from the table's figure, which the governor keeps seeing (the table's figure if unset).",
    )
    core_exit_latency_us: Param | None = Field(
        default=None,
        description="Worst-case exit when only the core reached this state, its package staying out of "
        "the deepest package state (the table's figure describes both; SKX C6: 92 us against 133).",
    )
    core_exit_latency_median_us: Param | None = None
    entry_cost_ns: Param = Field(default_factory=lambda: estimate(0.0, "no entry cost assumed"))
    power_watts: Param = Field(
        default_factory=lambda: estimate(1.0, "generic per-core estimate"),
        description="Power of a core in this state's core C-state (POLL's core is in C0: busy power).",
    )
    core_cstate: CoreCState | None = Field(
        default=None,
        exclude_if=_unset,
        description="The core C-state this state puts the core in, where the MWAIT hint does not say "
        "it (Atom and Xeon Phi hints: KNL's C6 is MWAIT 0x10, Avoton's C6 0x51); else from the hint.",
    )
    source: str = Field(
        default="",
        exclude_if=_unset,
        description="Where the row's figures come from (file, commit); not part of the model.",
    )

    @property
    def is_poll(self) -> bool:
        return "CPUIDLE_FLAG_POLLING" in self.flags

    @property
    def irq_enable(self) -> bool:
        return self.is_poll or "CPUIDLE_FLAG_IRQ_ENABLE" in self.flags

    @property
    def core_level(self) -> int:
        """The core C-state this state requests, as an index of CORE_CSTATES: 0 none (POLL), 1 C1,
        2 C1E (C1 sub-state 1), 3 C3, 4 C6, 5 C7 and deeper; `core_cstate` where given, else from
        the MWAIT hint (top nibble + 2), else the hint in `desc` ("MWAIT 0x20"), else the name."""
        if self.is_poll:
            return 0
        if self.core_cstate is not None:
            return CORE_CSTATES.index(self.core_cstate)
        hint = self.mwait_hint
        if hint is None:
            m = re.search(r"MWAIT (0x[0-9a-fA-F]+)", self.desc)
            hint = m.group(1) if m else None
        if hint is not None:
            major, sub = int(hint, 16) >> 4, int(hint, 16) & 0xF
            return 1 + min(sub, 1) if major == 0 else min(major + 2, 5)
        m = re.match(r"C(\d+)(E?)", self.name)
        if m is None:
            return 1
        number = int(m.group(1))
        return {0: 1, 1: 1 + bool(m.group(2)), 2: 3, 3: 3, 4: 4, 5: 4, 6: 4}.get(number, 5)

    def hw_exit_us(self) -> Param:
        """Worst-case exit drawn with the package in its deepest state (the table's unless measured)."""
        if self.hw_exit_latency_us is not None:
            return self.hw_exit_latency_us
        return Param(value=self.exit_latency_us, kind="kernel", source="the table's figure")

    def core_exit_us(self) -> Param:
        """Worst-case exit when the core alone reached this state (the table's when none is known)."""
        if self.core_exit_latency_us is not None:
            return self.core_exit_latency_us
        return Param(
            value=self.exit_latency_us, kind="kernel", source="the table's figure (no core-only figure known)"
        )

    def core_median_exit_us(self) -> Param:
        if self.core_exit_latency_us is None:
            return self.median_exit_us()
        if self.core_exit_latency_median_us is not None:
            return self.core_exit_latency_median_us
        return estimate(
            DEFAULT_MEDIAN_SHARE * self.core_exit_latency_us.value,
            f"{DEFAULT_MEDIAN_SHARE:.0%} of the core-only worst case (no published median)",
        )

    def median_exit_us(self) -> Param:
        if self.exit_latency_median_us is not None:
            return self.exit_latency_median_us
        return estimate(
            DEFAULT_MEDIAN_SHARE * self.exit_latency_us,
            f"{DEFAULT_MEDIAN_SHARE:.0%} of the table's worst case (no published median)",
        )


class PlatformTopology(_Model):
    """The named part a platform's defaults describe."""

    sockets: Annotated[int, Field(ge=1, le=16)]
    cores_per_socket: Annotated[int, Field(ge=1, le=512)]
    threads_per_core: Annotated[int, Field(ge=1, le=4)] = 1
    cores_per_module: Annotated[int, Field(ge=1, le=16)] = Field(
        default=1,
        exclude_if=lambda v: v == 1,
        description="Cores sharing an L2 (a module, sysfs `cluster_id`): Sierra Forest and Grand Ridge "
        "4, Silvermont and Knights Landing 2; 1 where the platform has no module state.",
    )
    cpus_per_socket: list[Annotated[int, Field(ge=1, le=512)]] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="An imported machine whose sockets have different numbers of online CPUs: each "
        "socket's (single-thread cores unless threads_per_core_by_socket pairs them; cores_per_socket "
        "is the largest).",
    )
    threads_per_core_by_socket: list[Annotated[int, Field(ge=1, le=4)]] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="With cpus_per_socket: each socket's SMT threads per core (the machine's sibling lists).",
    )
    core_threads: list[list[Annotated[int, Field(ge=1, le=4)]]] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="With cpus_per_socket: each socket's cores as their online SMT threads, where a "
        "socket's cores differ (hybrid parts, single siblings offline).",
    )
    part: str = ""


class PackageState(_Model):
    """A package C-state: entered when every core of its scope is in at least `requires`."""

    name: Annotated[str, Field(pattern=r"^(PC|MC)[1-9][0-9]?$")]
    requires: str = Field(description="The table state whose core C-state every core must be in, or deeper.")
    scope: Literal["module", "package", "system"] = Field(
        description="Whose cores must all be there: the module's (cores sharing an L2, Sierra Forest's "
        "C6S), the package's, or every socket's (Xeon PC6)."
    )
    entry_ns: Param = Field(description="From the last core's entry to the package state.")
    uncore_watts: Param


class TableRewrite(_Model):
    """A state's table figures when the package limit is below the deepest package state."""

    exit_latency_us: float
    target_residency_us: float
    source: str


class PackageModel(_Model):
    """Package C-states, shallow to deep, and what a package limit changes."""

    states: list[PackageState]
    module_states: list[PackageState] = Field(
        default_factory=list,
        exclude_if=_unset,
        description="Module C-states (turbostat's Mod%c6), outside the package limit; each holds while "
        "every core of its module is deep enough.",
    )
    source: str = Field(
        default="",
        exclude_if=_unset,
        description="Which package C-states the model has and why (turbostat's feature table).",
    )
    pc0_uncore_watts: Param
    snoop_rate_hz: Param = Field(
        default_factory=lambda: estimate(
            20.0, "snoops, DMA and remote memory traffic reaching an idle package, per second (a guess)"
        ),
        description="How often traffic pulls a package out of its deepest state (per package).",
    )
    snoop_exit_ns: Param = Field(
        default_factory=lambda: estimate(30_000.0, "out of its deepest state to serve it (a guess)"),
        description="How long each such visit keeps it out, before the state's entry time again.",
    )
    limited_table: dict[str, TableRewrite] = Field(
        default_factory=dict,
        description="The driver's table update when the deepest package state is not allowed "
        "(skx_idle_state_table_update()).",
    )
    notes: list[str] = Field(default_factory=list)

    def names(self) -> list[str]:
        return ["PC0", *(p.name for p in self.states)]


# An LLC hit against a core-to-core transfer on the same socket (a guess, labelled where used).
LLC_HIT_FRACTION = 0.5


class CostModel(_Model):
    """Time costs of the wake path and of sending a wake-up; see DESIGN.md section 2."""

    tsc_mhz: Param
    line_same_socket_ns: Param
    line_other_socket_ns: Param
    call_setup_cycles: Param
    apic_send_same_socket_cycles: Param
    apic_send_other_socket_cycles: Param
    ipi_delivery_ns: Param
    irq_entry_ns: Param
    exit_housekeeping_ns: Param
    entry_housekeeping_ns: Param
    irq_direct_saving_ns: Param
    sched_switch_ns: Param
    spec_ctrl_write_ns: Param = Field(
        default_factory=lambda: estimate(
            150.0,
            "WRMSR to SPEC_CTRL, which intel_idle_ibrs() does before MWAIT and after it when SMT is "
            "active (CPUIDLE_FLAG_IBRS states, bf5835bcdb96); a serialising MSR write, a few hundred cycles",
        )
    )
    llc_hit_ns: Param | None = Field(
        default=None,
        exclude_if=_unset,
        description="A line read from the LLC (same socket) because the core that last wrote it is in "
        "core C3 or deeper, which flushed its L1 and L2 there; None: `llc_hit()`'s estimate.",
    )

    def param(self, name: str) -> Param:
        """The cost named `name` (a field), with the estimates of those left unset filled in."""
        return self.llc_hit() if name == "llc_hit_ns" else getattr(self, name)

    def llc_hit(self) -> Param:
        """The LLC hit a sender pays instead of a core-to-core transfer when the line's last writer
        sleeps in a flushing core C-state (the table's own figure, else the estimate)."""
        if self.llc_hit_ns is not None:
            return self.llc_hit_ns
        line = self.line_same_socket_ns
        return estimate(
            round(line.value * LLC_HIT_FRACTION, 1),
            f"estimate: {LLC_HIT_FRACTION:g} x this table's same-socket core-to-core transfer "
            f"({line.value:g} ns, {line.kind}: {line.source}): an LLC hit skips the snoop of the "
            "owning core; no published figure in the table's sources",
        )


class CpuModel(_Model):
    """A CPU model the table is registered for, as `intel_idle_ids[]` (or the driver) matches it."""

    vendor: Literal["GenuineIntel", "AuthenticAMD", "any"] = "GenuineIntel"
    family: Annotated[int, Field(ge=0, le=255)]
    model: Annotated[int, Field(ge=0, le=255)] | None = Field(
        default=None, description="None: every model of the family (acpi_idle, haltpoll)."
    )
    name: str = Field(description="The kernel's name (INTEL_SAPPHIRERAPIDS_X) or the family's.")
    use_acpi: bool = Field(
        default=False,
        description="intel_idle's `use_acpi` for this model (the Xeons): a native state missing from the "
        "firmware's _CST is registered with default_status disabled, unless ALWAYS_ENABLE.",
    )


class SocketTable(_Model):
    """A table the driver swaps in by package count (ivt_idle_state_table_update())."""

    min_sockets: Annotated[int, Field(ge=2, le=64)]
    table: str = Field(description="The kernel's name of the table (ivt_cstates_4s).")
    changes: dict[str, tuple[float, float]] = Field(
        description="State name -> (exit latency us, target residency us) in that table."
    )
    source: str


class Platform(_Model):
    """A platform: its intel_idle table with provenance, typical topology, costs and power."""

    name: Annotated[str, Field(min_length=1, max_length=64)]
    title: str = ""
    source: str = ""
    kernel: str = ""
    states: list[CState]
    topology: PlatformTopology
    costs: CostModel
    busy_watts: Param = Field(
        default_factory=lambda: estimate(5.0, "generic per-core estimate"),
        description="Power of a core in C0 (running, POLL, entry and exit paths).",
    )
    package: PackageModel | None = None
    notes: list[str] = Field(default_factory=list)
    # What the table is and where it applies: facts about the platform, not inputs of the model
    # (HASH_EXEMPT keeps them out of config hashes).
    driver: Driver = Field(
        default="intel_idle",
        exclude_if=lambda v: v == "intel_idle",
        description="The cpuidle driver that registers this table (intel_idle, acpi_idle, haltpoll), or "
        "none (no cpuidle driver: default_idle(), HLT).",
    )
    kernel_table: str = Field(
        default="", exclude_if=_unset, description="The driver's name of the table (skx_cstates)."
    )
    cpu_models: list[CpuModel] = Field(default_factory=list, exclude_if=_unset)
    family_modelled: bool = Field(
        default=True,
        exclude_if=lambda v: v,
        description="False where idlelab has no hardware model of this family: its costs, power and "
        "package-state terms are another family's estimates (`modelled_on`), and the run says so.",
    )
    modelled_on: str = Field(
        default="", exclude_if=_unset, description="The modelled family whose estimates this one uses."
    )
    socket_tables: list[SocketTable] = Field(default_factory=list, exclude_if=_unset)

    @model_validator(mode="after")
    def _check_table(self) -> Platform:
        validate_states(self.states)
        if self.package is not None:
            validate_package(self.package, self.states)
        names = set(self.state_names())
        for i, t in enumerate(self.socket_tables):
            unknown = set(t.changes) - names
            if unknown:
                raise ValueError(f"socket_tables.{i}.changes: unknown state {sorted(unknown)[0]!r}")
        return self

    def state_names(self) -> list[str]:
        return [s.name for s in self.states]

    def package_states(self) -> list[str]:
        return self.package.names() if self.package else ["PC0"]

    def module_states(self) -> list[str]:
        return [m.name for m in self.package.module_states] if self.package else []

    def deepest_package_state(self) -> str:
        return self.package_states()[-1]

    def request_levels(self) -> list[int]:
        """Each state's hardware request as a depth rank (0 for POLL): the core is at the
        shallowest of its threads' ranks, and a module or package state needs every core of its
        scope at its `requires` rank or deeper. See `_ranks`."""
        return _ranks(self.states)

    def for_sockets(self, sockets: int) -> Platform:
        """The table the driver picks for this package count (ivt_idle_state_table_update(): more
        than 2 packages the 4-socket table, more than 4 the 8-socket one)."""
        chosen = None
        for t in self.socket_tables:
            if sockets >= t.min_sockets and (chosen is None or t.min_sockets > chosen.min_sockets):
                chosen = t
        if chosen is None:
            return self
        states = [
            s.model_copy(
                update={
                    "exit_latency_us": chosen.changes[s.name][0],
                    "target_residency_us": chosen.changes[s.name][1],
                    "source": chosen.source,
                }
            )
            if s.name in chosen.changes
            else s
            for s in self.states
        ]
        return self.model_copy(update={"states": states, "kernel_table": chosen.table})

    def allows(self, limit: str) -> list[str]:
        """The package states a package limit allows, shallow to deep (PC0 excluded): those no deeper
        than the limit by number (a limit deeper than the platform's deepest allows them all)."""
        return [n for n in self.package_states()[1:] if _pc_number(n) <= _pc_number(limit)]

    def under_package_limit(self, limit: str) -> Platform:
        """The table the driver registers under this package limit: skx_idle_state_table_update()
        (and spr's) rewrite C6 when PC6 is not allowed (its figure includes the PC6 exit)."""
        if self.package is None or not self.package.limited_table or not self.package.states:
            return self
        if len(self.allows(limit)) == len(self.package.states):
            return self
        states = []
        for s in self.states:
            new = self.package.limited_table.get(s.name)
            if new is not None:
                s = s.model_copy(
                    update={
                        "exit_latency_us": new.exit_latency_us,
                        "target_residency_us": new.target_residency_us,
                        # The rewritten figure is the core's own exit: so is its distribution.
                        "exit_latency_median_us": s.core_exit_latency_median_us,
                        "hw_exit_latency_us": s.core_exit_latency_us,
                    }
                )
            states.append(s)
        return self.model_copy(update={"states": states})


def _pc_number(name: str) -> int:
    """PC6 -> 6; "unlimited" is deeper than every package state."""
    return 99 if name == "unlimited" else int(name[2:])


# Platform fields that describe the table rather than feed the model: left out of config hashes,
# so adding such facts to a built-in table does not change the hash of any run on it.
HASH_EXEMPT: dict[str, Any] = {
    "driver": True,
    "kernel_table": True,
    "cpu_models": True,
    "package": {"source": True},
    "family_modelled": True,
    "modelled_on": True,
    "states": {"__all__": {"source": True}},
    "socket_tables": {"__all__": {"source": True}},
}


def validate_states(states: list[CState]) -> None:
    """The checks a custom table must pass; messages name the state and the rule."""
    if not states:
        raise ValueError("states: the table is empty")
    # cpuidle's POLL is registered by drivers that ask for it (intel_idle, acpi_idle, haltpoll);
    # psci_idle's table starts at WFI and has no polling state.
    if states[0].is_poll != (states[0].name == "POLL"):
        raise ValueError(
            "states.0: state 0 is POLL (flags: CPUIDLE_FLAG_POLLING), as cpuidle registers it, or a "
            "table without a polling state (psci_idle: WFI as state 0)"
        )
    seen: set[str] = set()
    for i, s in enumerate(states):
        if s.name in seen:
            raise ValueError(f"states.{i}.name: duplicate state name {s.name!r}")
        seen.add(s.name)
        unknown = set(s.flags) - KNOWN_FLAGS
        if unknown:
            raise ValueError(f"states.{i}.flags: unknown flag {sorted(unknown)[0]!r}")
        if i > 0 and s.is_poll:
            raise ValueError(f"states.{i}.flags: only state 0 may be a polling state")
        if i > 1:
            prev = states[i - 1]
            # Real tables repeat values (snb C6 and C7 are both 345 us), so equal is fine.
            if s.exit_latency_us < prev.exit_latency_us:
                raise ValueError(
                    f"states.{i}.exit_latency_us: {s.name} exits in {s.exit_latency_us:g} us, less than "
                    f"{prev.name}'s {prev.exit_latency_us:g} us; exit latencies must not decrease"
                )
            if s.target_residency_us < prev.target_residency_us:
                raise ValueError(
                    f"states.{i}.target_residency_us: {s.name}'s {s.target_residency_us:g} us is less than "
                    f"{prev.name}'s {prev.target_residency_us:g} us; target residencies must not decrease"
                )
        med = s.exit_latency_median_us
        if med is not None and med.value > s.hw_exit_us().value:
            raise ValueError(
                f"states.{i}.exit_latency_median_us: the median ({med.value:g} us) exceeds the worst case "
                f"({s.hw_exit_us().value:g} us)"
            )


def validate_package(package: PackageModel, states: list[CState]) -> None:
    """Package states must nest: each deeper one asks at least as much of the cores, of at
    least as many of them, and takes at least as long to enter (the residency split relies on it).
    Module states sit beside them (module scope only)."""
    ranks = {s.name: r for s, r in zip(states, _ranks(states), strict=True)}

    def check_requires(where: str, p: PackageState) -> None:
        if p.requires not in ranks or ranks[p.requires] == 0:
            raise ValueError(f"{where}.requires: {p.requires!r} is not a core C-state of this table")

    for i, m in enumerate(package.module_states):
        check_requires(f"package.module_states.{i}", m)
        if m.scope != "module" or not m.name.startswith("MC"):
            raise ValueError(f"package.module_states.{i}: a module state is named MCn and has module scope")
    prev: PackageState | None = None
    for i, p in enumerate(package.states):
        check_requires(f"package.states.{i}", p)
        if p.scope == "module" or not p.name.startswith("PC"):
            raise ValueError(
                f"package.states.{i}: a package state is named PCn and has package or system scope"
            )
        if prev is not None and (
            ranks[p.requires] < ranks[prev.requires]
            or (prev.scope == "system" and p.scope == "package")
            or p.entry_ns.value < prev.entry_ns.value
            or _pc_number(p.name) <= _pc_number(prev.name)
        ):
            raise ValueError(
                f"package.states.{i}: {p.name} must be deeper than {prev.name} in level, scope and entry"
            )
        prev = p


def _ranks(states: list[CState]) -> list[int]:
    """Depth ranks of the states' hardware requests. Where every state asks a different core
    C-state, the rank is the core C-state's index in CORE_CSTATES (so tables whose states map one
    to one onto core C-states keep the layout their results were first computed with). Where two
    ask the same core C-state (GNR's C6 and C6P, SRF's C6S and C6SP, the client C7s..C10 all in
    core C7), the table's order ranks them: the deeper one asks more of the module or package."""
    levels = [s.core_level for s in states]
    deep = [lv for lv in levels if lv > 0]
    if len(set(deep)) == len(deep):
        return levels
    out, rank = [], 0
    for lv in levels:
        if lv == 0:
            out.append(0)
        else:
            rank += 1
            out.append(rank)
    return out


def poll_state() -> CState:
    """State 0 as drivers/cpuidle/poll_state.c registers it."""
    return CState(
        name="POLL",
        desc="CPUIDLE CORE POLL IDLE",
        flags=["CPUIDLE_FLAG_POLLING"],
        exit_latency_us=0,
        target_residency_us=0,
        power_watts=estimate(4.0, "spinning core, generic estimate"),
    )


# Per-state model terms a custom state takes from the base platform's state of the same name
# when it does not give them (its table figures, and a measured worst case, are its own).
INHERITED_STATE_TERMS = (
    "exit_latency_median_us",
    "core_exit_latency_us",
    "core_exit_latency_median_us",
    "entry_cost_ns",
    "power_watts",
)


def custom_platform(name: str, states: list[CState], based_on: Platform, title: str = "") -> Platform:
    """A user's table on top of a built-in platform's topology, costs, power and package states.

    POLL is added as state 0 when the user's list does not start with it, as cpuidle does. A state
    named as one of the base's takes the base state's model terms (power, entry cost, exit
    distribution) that it does not set itself; the notes say which states got generic defaults.
    """
    if not states or states[0].name != "POLL":
        states = [poll_state(), *states]
    base = {s.name: s for s in based_on.states}
    merged, generic = [], []
    for s in states:
        if s.name in base:
            given = s.model_fields_set
            inherit = {k: getattr(base[s.name], k) for k in INHERITED_STATE_TERMS if k not in given}
            # A base median or core exit above this table's worst case would contradict it.
            for key in ("exit_latency_median_us", "core_exit_latency_us", "core_exit_latency_median_us"):
                if inherit.get(key) is not None and inherit[key].value > s.exit_latency_us:
                    del inherit[key]
            s = s.model_copy(update=inherit)
        elif not s.is_poll:
            generic.append(s.name)
        merged.append(s)
    names = {s.name for s in merged}
    package = based_on.package
    if package is not None:
        package = package.model_copy(
            update={
                "states": [p for p in package.states if p.requires in names],
                "module_states": [m for m in package.module_states if m.requires in names],
                "limited_table": {k: v for k, v in package.limited_table.items() if k in names},
            }
        )
    notes = [
        f"Topology, cost model, busy and package power taken from the built-in {based_on.name!r} platform."
    ]
    if generic:
        notes.append(
            f"States not in {based_on.name!r} ({', '.join(generic)}) use generic power and entry-cost "
            "estimates."
        )
    return Platform(
        name=name,
        title=title or f"custom table on {based_on.name}'s cost model",
        source="user-supplied table",
        kernel="",
        states=merged,
        topology=based_on.topology,
        costs=based_on.costs,
        busy_watts=based_on.busy_watts,
        package=package,
        notes=notes,
        driver=based_on.driver,
        family_modelled=based_on.family_modelled,
        modelled_on=based_on.modelled_on,
    )


def _load_builtin() -> dict[str, Platform]:
    out: dict[str, Platform] = {}
    for path in sorted((Path(__file__).parent / "platforms").glob("*.json")):
        platform = Platform.model_validate(json.loads(path.read_text()))
        out[platform.name] = platform
    return out


# Read-only: every importer shares it (a custom platform never lands here).
BUILTIN_PLATFORMS: Mapping[str, Platform] = MappingProxyType(_load_builtin())


def load_platform(name: str) -> Platform:
    """A built-in platform by name (`skx`, `icx`, `wsm`, ...)."""
    try:
        return BUILTIN_PLATFORMS[name]
    except KeyError:
        builtin = ", ".join(sorted(BUILTIN_PLATFORMS))
        raise KeyError(f"unknown platform {name!r}; built-in: {builtin}") from None
