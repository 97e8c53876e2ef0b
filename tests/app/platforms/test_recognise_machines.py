"""Recognition of the seven development dumps as the importer hands them to the engine
(`app.platforms.machine.dump_table`, the one adapter from a parsed dump to `engine.recognise`):
each is its table with its variants, and its run has exactly the dump's online CPUs."""

from __future__ import annotations

import gzip

import pytest

from app.platforms.machine import dump_table, run_topology
from app.platforms.sysfs import parse_dump
from engine import SimConfig, load_platform, simulate
from engine.recognise import DumpTable, recognise
from tests.app.platforms.test_simulate_machines import DEVELOPMENT, MACHINES


def development_table(name: str) -> DumpTable:
    dump = parse_dump(gzip.open(MACHINES / f"{name}-sysfs.txt.gz").read())
    return dump_table(dump, run_topology(dump.topology))


@pytest.mark.parametrize("machine", sorted(DEVELOPMENT))
def test_each_development_dump_is_its_table(machine: str) -> None:
    table = development_table(machine)
    r = recognise(table)
    based_on, variants = DEVELOPMENT[machine]
    assert (r.based_on, r.variant) == (based_on, variants)
    assert r.driver == ("acpi_idle" if machine == "milan0" else "intel_idle")
    assert r.governor == "menu"
    assert r.family_modelled == load_platform(based_on).family_modelled
    # The run has exactly the dump's online CPUs, its governor, and its states.
    config = SimConfig.model_validate(r.config)
    assert config.n_cpus() == table.online_cpus
    assert config.topology.cpus == table.online_cpus
    assert config.governor.name == "menu"
    assert config.resolve_platform().state_names() == [s.name for s in table.states]


def test_a_dump_is_simulated_as_it_is() -> None:
    """srf8: 128 online CPUs, its own table with C6S and C6SP, module and package states."""
    r = recognise(development_table("srf8"))
    result = simulate(SimConfig.model_validate({**r.config, "duration_ms": 2}))
    assert result.cpus == 128
    assert result.hardware.module_states == ["MC6"] and "PC6" in result.hardware.package_states
