"""Tables the other ways Linux idles a CPU registers: ACPI `_CST` through intel_idle (`C1_ACPI`...)
or acpi_idle, haltpoll in KVM guests, and no cpuidle driver at all.

Each is a `Platform` simulated at the OS level: the governor sees the driver's table, but
idlelab has no hardware model of these families (AMD EPYC, a KVM guest's virtual CPU), so the
run's hardware section says "not modelled for this family" and the costs it uses are skx's
estimates, labelled as stand-ins (AMD's and a guest's costs are not Intel's).

Kernel facts (each in the docstring of the function that follows it):
- acpi_idle (`drivers/acpi/processor_idle.c`, acpi_processor_setup_cstates()): states "C1",
  "C2"... named by their _CST index, desc from _CST ("ACPI FFH MWAIT 0x0", "ACPI IOPORT 0x414",
  "ACPI HLT"), target residency = latency x `processor.latency_factor` (2), TLB_FLUSHED for type C3.
- intel_idle without a native table, or with `intel_idle.no_native=1`
  (intel_idle_init_cstates_acpi()): "C%d_ACPI", target residency = latency for _CST type C1 and
  3 x latency for deeper types, TLB_FLUSHED for types deeper than C2.
- haltpoll (`drivers/cpuidle/cpuidle-haltpoll.c`): POLL and "haltpoll idle" ("default architecture
  idle", 1/1 us, default_idle(): HLT); its own governor.
- no cpuidle driver: do_idle() -> cpuidle_idle_call() -> default_idle_call(), HLT every time, the
  tick stopped as tick_nohz_idle_stop_tick() allows (kernel/sched/idle.c).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from engine.platforms import CoreCState, CpuModel, CState, Driver, Param, Platform, poll_state

# processor.latency_factor's default (drivers/acpi/processor_idle.c: `static unsigned int
# latency_factor __read_mostly = 2;`).
ACPI_LATENCY_FACTOR = 2
_FFH = re.compile(r"MWAIT\s+(0x[0-9a-fA-F]+)")
_STAND_IN = "a stand-in: skx's estimate; idlelab has no model of this family"


class CstEntry(BaseModel):
    """One `_CST` entry as the firmware lists it (index 1 is the first)."""

    model_config = ConfigDict(extra="forbid")

    type: Annotated[int, Field(ge=1, le=3)] = Field(description="ACPI_STATE_C1..C3")
    latency_us: Annotated[int, Field(ge=0, le=100_000)]
    desc: str = Field(description='As the kernel builds it: "ACPI FFH MWAIT 0x20", "ACPI IOPORT 0x414"...')
    core_cstate: CoreCState | None = Field(
        default=None, description="The core C-state it reaches where the desc does not say (an assumption)."
    )


def _hint(desc: str) -> str | None:
    m = _FFH.search(desc)
    return f"0x{int(m.group(1), 16):02x}" if m else None


def _core(entry: CstEntry) -> CoreCState | None:
    if entry.core_cstate is not None or _hint(entry.desc) is not None:
        return entry.core_cstate
    return "CC1" if entry.type == 1 else "CC6"


def acpi_idle_states(cst: list[CstEntry], latency_factor: int = ACPI_LATENCY_FACTOR) -> list[CState]:
    """acpi_idle's table for a `_CST` (POLL first, as acpi_processor_setup_cstates() installs it
    on x86): "C<i>", residency = latency x latency_factor, TLB_FLUSHED on type C3."""
    out = [poll_state()]
    for i, e in enumerate(cst, start=1):
        out.append(
            CState(
                name=f"C{i}",
                desc=e.desc,
                mwait_hint=_hint(e.desc),
                flags=["CPUIDLE_FLAG_TLB_FLUSHED"] if e.type == 3 else [],
                exit_latency_us=e.latency_us,
                target_residency_us=e.latency_us * latency_factor,
                core_cstate=_core(e),
                source=f"firmware _CST entry {i} (type C{e.type}); residency = latency x "
                f"processor.latency_factor "
                f"({latency_factor}), drivers/acpi/processor_idle.c acpi_processor_setup_cstates()",
            )
        )
    return out


def intel_idle_acpi_states(cst: list[CstEntry]) -> list[CState]:
    """intel_idle_init_cstates_acpi(): "C<i>_ACPI", residency = latency for type C1, 3 x latency
    for deeper types, TLB_FLUSHED for types deeper than C2. Every entry must be FFH (MWAIT), or
    intel_idle_cst_usable() refuses the whole _CST."""
    out = [poll_state()]
    for i, e in enumerate(cst, start=1):
        if _hint(e.desc) is None:
            raise ValueError(f"cst.{i - 1}.desc: intel_idle uses a _CST only when every entry is FFH (MWAIT)")
        out.append(
            CState(
                name=f"C{i}_ACPI",
                desc=e.desc,
                mwait_hint=_hint(e.desc),
                flags=["CPUIDLE_FLAG_TLB_FLUSHED"] if e.type > 2 else [],
                exit_latency_us=e.latency_us,
                target_residency_us=e.latency_us * (3 if e.type > 1 else 1),
                core_cstate=e.core_cstate,
                source=f"firmware _CST entry {i} (type C{e.type}); residency = latency "
                f"{'x 3 (type deeper than C1)' if e.type > 1 else '(type C1)'}, drivers/idle/intel_idle.c "
                "intel_idle_init_cstates_acpi()",
            )
        )
    return out


def haltpoll_states() -> list[CState]:
    """haltpoll_driver's table: POLL, then "haltpoll idle" (1/1 us, default_idle(): HLT)."""
    return [
        poll_state(),
        CState(
            name="haltpoll idle",
            desc="default architecture idle",
            exit_latency_us=1,
            target_residency_us=1,
            core_cstate="CC1",
            source="haltpoll_driver in drivers/cpuidle/cpuidle-haltpoll.c (exit_latency 1, "
            "target_residency 1, "
            "enter: default_enter_idle() -> default_idle(), HLT)",
        ),
    ]


def default_idle_states() -> list[CState]:
    """No cpuidle driver: HLT every time. cpuidle has no table then; idlelab keeps POLL as state 0
    (marked unusable: never entered) and one "HLT" state the `fixed` governor always picks."""
    poll = poll_state()
    return [
        poll.model_copy(update={"flags": [*poll.flags, "CPUIDLE_FLAG_UNUSABLE"]}),
        CState(
            name="HLT",
            desc="HLT (no cpuidle driver)",
            exit_latency_us=1,
            target_residency_us=1,
            core_cstate="CC1",
            source="no cpuidle state exists: cpuidle_idle_call() -> default_idle_call() -> HLT "
            "(kernel/sched/idle.c); the 1 us figures are stand-ins the governor never weighs",
        ),
    ]


def driver_platform(
    name: str,
    driver: Driver,
    states: list[CState],
    based_on: Platform,
    *,
    title: str = "",
    topology: dict[str, object] | None = None,
    cpu_models: list[CpuModel] | None = None,
    notes: list[str] | None = None,
) -> Platform:
    """A platform for a table of another driver (or none): the OS-level model, with the base
    platform's costs and power relabelled as stand-ins, no package states, and
    `family_modelled: false`."""

    def stand_in(p: Param) -> Param:
        return Param(value=p.value, kind="estimate", source=f"{_STAND_IN} ({p.kind}: {p.source})")

    costs = based_on.costs.model_copy(
        update={k: stand_in(based_on.costs.param(k)) for k in type(based_on.costs).model_fields}
    )
    base_states = {s.name: s for s in based_on.states}
    relabelled = []
    for s in states:
        ref = (
            base_states["POLL"]
            if s.is_poll
            else base_states["C1"]
            if s.core_level <= 2
            else base_states["C6"]
        )
        relabelled.append(
            s.model_copy(
                update={
                    "power_watts": stand_in(ref.power_watts),
                    "entry_cost_ns": stand_in(ref.entry_cost_ns),
                }
            )
        )
    topo = based_on.topology.model_copy(update=topology or {})
    return Platform(
        name=name,
        title=title or f"{driver} table",
        source=f"{driver} (see engine/drivers.py for the kernel code each figure follows)",
        kernel="",
        states=relabelled,
        topology=topo,
        costs=costs,
        busy_watts=stand_in(based_on.busy_watts),
        package=None,
        notes=[
            f"Simulated at the OS level: idlelab has no hardware model of this family; costs and power are "
            f"{based_on.name}'s estimates as stand-ins, and there are no package C-states.",
            *(notes or []),
        ],
        driver=driver,
        cpu_models=cpu_models or [],
        family_modelled=False,
        modelled_on=based_on.name,
    )
