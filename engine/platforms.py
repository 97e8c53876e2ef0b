"""Platform tables: intel_idle C-state tables plus topology, cost model and power estimates.

Each built-in platform is one JSON file in `engine/platforms/`; adding a table is adding a file.
Every number carries its provenance: `kind` says whether it is a kernel fact, a published or
measured figure, a value calibrated on a published figure, or an estimate (a guess, and labelled so).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Kind = Literal["kernel", "published", "measured", "calibrated", "estimate"]

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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Param(_Model):
    """A number with its provenance."""

    value: float
    kind: Kind
    source: str = ""


def estimate(value: float, source: str) -> Param:
    return Param(value=value, kind="estimate", source=source)


class CState(_Model):
    """One row of an intel_idle table (state 0 is POLL), plus the model's per-state terms."""

    name: Annotated[str, Field(min_length=1, max_length=16, pattern=r"^[A-Za-z0-9_\-]+$")]
    desc: str = ""
    mwait_hint: str | None = None
    flags: list[str] = Field(default_factory=list)
    exit_latency_us: Annotated[float, Field(ge=0, le=1_000_000)]
    target_residency_us: Annotated[float, Field(ge=0, le=10_000_000)]
    exit_latency_median_us: Param | None = Field(
        default=None, description="Median exit latency; the table's value is the 99.99th percentile."
    )
    entry_cost_ns: Param = Field(default_factory=lambda: estimate(0.0, "no entry cost assumed"))
    power_watts: Param = Field(default_factory=lambda: estimate(1.0, "generic per-core estimate"))

    @property
    def is_poll(self) -> bool:
        return "CPUIDLE_FLAG_POLLING" in self.flags

    @property
    def irq_enable(self) -> bool:
        return self.is_poll or "CPUIDLE_FLAG_IRQ_ENABLE" in self.flags

    def median_exit_us(self) -> Param:
        if self.exit_latency_median_us is not None:
            return self.exit_latency_median_us
        return estimate(
            DEFAULT_MEDIAN_SHARE * self.exit_latency_us,
            f"{DEFAULT_MEDIAN_SHARE:.0%} of the table's worst case (no published median)",
        )


class PlatformTopology(_Model):
    sockets: Annotated[int, Field(ge=1, le=8)]
    cores_per_socket: Annotated[int, Field(ge=1, le=256)]
    part: str = ""


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


class Platform(_Model):
    """A platform: its intel_idle table with provenance, typical topology, costs and power."""

    name: Annotated[str, Field(min_length=1, max_length=64)]
    title: str = ""
    source: str = ""
    kernel: str = ""
    states: list[CState]
    topology: PlatformTopology
    costs: CostModel
    busy_watts: Param = Field(default_factory=lambda: estimate(5.0, "generic per-core estimate"))
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_table(self) -> Platform:
        validate_states(self.states)
        return self

    def state_names(self) -> list[str]:
        return [s.name for s in self.states]


def validate_states(states: list[CState]) -> None:
    """The checks a custom table must pass; messages name the state and the rule."""
    if not states:
        raise ValueError("states: the table is empty")
    if not states[0].is_poll or states[0].name != "POLL":
        raise ValueError(
            "states.0: state 0 must be POLL (flags: CPUIDLE_FLAG_POLLING), as cpuidle registers it"
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
        if med is not None and med.value > s.exit_latency_us:
            raise ValueError(
                f"states.{i}.exit_latency_median_us: the median ({med.value:g} us) exceeds the worst case "
                f"({s.exit_latency_us:g} us)"
            )


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


def custom_platform(name: str, states: list[CState], based_on: Platform, title: str = "") -> Platform:
    """A user's table on top of a built-in platform's topology, costs and power.

    POLL is added as state 0 when the user's list does not start with it, as cpuidle does.
    """
    if not states or states[0].name != "POLL":
        states = [poll_state(), *states]
    return Platform(
        name=name,
        title=title or f"custom table on {based_on.name}'s cost model",
        source="user-supplied table",
        kernel="",
        states=states,
        topology=based_on.topology,
        costs=based_on.costs,
        busy_watts=based_on.busy_watts,
        notes=[f"Topology, cost model and busy power taken from the built-in {based_on.name!r} platform."],
    )


def _load_builtin() -> dict[str, Platform]:
    out: dict[str, Platform] = {}
    for path in sorted((Path(__file__).parent / "platforms").glob("*.json")):
        platform = Platform.model_validate(json.loads(path.read_text()))
        out[platform.name] = platform
    return out


BUILTIN_PLATFORMS: dict[str, Platform] = _load_builtin()


def load_platform(name: str) -> Platform:
    """A built-in platform by name (`skx`, `icx`, `wsm`, ...)."""
    try:
        return BUILTIN_PLATFORMS[name]
    except KeyError:
        builtin = ", ".join(sorted(BUILTIN_PLATFORMS))
        raise KeyError(f"unknown platform {name!r}; built-in: {builtin}") from None
