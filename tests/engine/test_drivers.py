"""Other drivers as platforms: ACPI _CST through acpi_idle and intel_idle, haltpoll, no driver."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine import SimConfig, load_platform, simulate
from engine.drivers import (
    CstEntry,
    acpi_idle_states,
    default_idle_states,
    haltpoll_states,
    intel_idle_acpi_states,
)

MILAN_CST = [
    CstEntry(type=1, latency_us=1, desc="ACPI FFH MWAIT 0x0"),
    CstEntry(type=2, latency_us=30, desc="ACPI IOPORT 0x414"),
]


def _rows(states: list) -> list[tuple[str, float, float]]:  # type: ignore[type-arg]
    return [(s.name, s.exit_latency_us, s.target_residency_us) for s in states]


def test_acpi_idle_residency_is_twice_the_latency() -> None:
    """processor.latency_factor = 2: Milan's _CST gives C1 1/2 and C2 30/60, as the milan0 dump shows."""
    states = acpi_idle_states(MILAN_CST)
    assert _rows(states) == [("POLL", 0, 0), ("C1", 1, 2), ("C2", 30, 60)]
    assert [s.desc for s in states[1:]] == ["ACPI FFH MWAIT 0x0", "ACPI IOPORT 0x414"]
    assert states[1].mwait_hint == "0x00" and states[2].mwait_hint is None
    assert _rows(acpi_idle_states(MILAN_CST, latency_factor=3))[2] == ("C2", 30, 90)
    assert _rows(load_platform("acpi_idle").states) == _rows(states)


def test_intel_idle_acpi_residency_rule() -> None:
    """intel_idle_init_cstates_acpi(): residency = latency for type C1, 3x for deeper; TLB_FLUSHED past C2."""
    cst = [
        CstEntry(type=1, latency_us=1, desc="ACPI FFH MWAIT 0x0"),
        CstEntry(type=2, latency_us=41, desc="ACPI FFH MWAIT 0x20"),
        CstEntry(type=3, latency_us=150, desc="ACPI FFH MWAIT 0x60"),
    ]
    states = intel_idle_acpi_states(cst)
    assert _rows(states) == [("POLL", 0, 0), ("C1_ACPI", 1, 1), ("C2_ACPI", 41, 123), ("C3_ACPI", 150, 450)]
    assert [s.flags for s in states[1:]] == [[], [], ["CPUIDLE_FLAG_TLB_FLUSHED"]]
    assert states[2].core_level == 4  # MWAIT 0x20: core C6


def test_intel_idle_refuses_a_cst_with_io_port_entries() -> None:
    with pytest.raises(ValueError, match="cst.1.desc: intel_idle uses a _CST only when every entry is FFH"):
        intel_idle_acpi_states(MILAN_CST)


def test_haltpoll_table() -> None:
    states = haltpoll_states()
    assert _rows(states) == [("POLL", 0, 0), ("haltpoll idle", 1, 1)]
    assert states[1].desc == "default architecture idle"
    assert load_platform("haltpoll").driver == "haltpoll"


def test_no_driver_runs_hlt_with_the_fixed_governor() -> None:
    config = SimConfig(platform="default_idle", duration_ms=10)
    assert (config.governor.name, config.governor.fixed_state) == ("fixed", "HLT")
    r = simulate(config)
    usage = {s.name: s.usage for s in r.states}
    assert usage["POLL"] == 0 and usage["HLT"] > 0
    assert [s.name for s in default_idle_states()] == ["POLL", "HLT"]
    with pytest.raises(ValidationError, match="has no cpuidle driver, so no governor runs"):
        SimConfig(platform="default_idle", governor={"name": "menu"})  # type: ignore[arg-type]


@pytest.mark.parametrize("pid", ["acpi_idle", "haltpoll", "default_idle"])
def test_other_drivers_say_their_hardware_is_not_modelled(pid: str) -> None:
    platform = load_platform(pid)
    assert not platform.family_modelled and platform.package is None
    # AMD's and a guest's costs are not Intel's: everything borrowed is labelled a stand-in.
    assert all("stand-in" in platform.costs.param(k).source for k in type(platform.costs).model_fields)
    r = simulate(SimConfig(platform=pid, duration_ms=5))
    assert r.hardware.family_modelled is False
    assert r.hardware.model_note.startswith("not modelled for this family")
    assert r.hardware.system.package == {"PC0": 1.0}
