"""Recognition of a dump's table and its variants (engine/recognise.py), on tables made to show each
of the kernel's reasons a dump differs from its table (the seven development dumps, read by the
app's importer, are tests/app/platforms/test_recognise_machines.py)."""

from __future__ import annotations

import pytest

from engine import SimConfig, load_platform, simulate
from engine.recognise import DumpState, DumpTable, recognise


def _rows(
    pid: str,
    changes: dict[str, tuple[int, int]] | None = None,
    drop: tuple[str, ...] = (),
    off: tuple[str, ...] = (),
) -> list[DumpState]:
    out = []
    for s in load_platform(pid).states:
        if s.name in drop or "CPUIDLE_FLAG_UNUSABLE" in s.flags:
            continue
        lat, res = (changes or {}).get(s.name, (int(s.exit_latency_us), int(s.target_residency_us)))
        out.append(
            DumpState(
                name=s.name,
                desc=s.desc,
                latency_us=lat,
                residency_us=res,
                default_status="disabled" if s.name in off else "enabled",
            )
        )
    return out


def _recognise(states: list[DumpState], **kw: object) -> tuple[str | None, list[str], dict[str, object]]:
    r = recognise(
        DumpTable(
            states=states,
            driver=kw.pop("driver", "intel_idle"),
            governor="menu",  # type: ignore[arg-type]
            online_cpus=8,
            **kw,
        )
    )  # type: ignore[arg-type]
    return r.based_on, r.variant, r.config


@pytest.mark.parametrize(("pid", "figures"), [("skx", (92, 276)), ("spr", (190, 600))])
def test_pc6_off_means_limit_pc2_inferred(pid: str, figures: tuple[int, int]) -> None:
    based_on, variants, config = _recognise(_rows(pid, {"C6": figures}))
    assert (based_on, variants) == (pid, ["pc6-off"])
    assert config["package"] == {"limit": "PC2"}
    # Simulated, C6 is the rewritten 92/276 (or 190/600), and the package never reaches PC6.
    r = simulate(SimConfig.model_validate({**config, "duration_ms": 2}))
    c6 = next(s for s in r.states if s.name == "C6")
    assert (c6.exit_latency_us, c6.target_residency_us) == figures
    assert r.hardware.system.package["PC6"] == 0.0


def test_mwait_subset_drops_whole_major_c_states() -> None:
    # A GNR whose CPUID lacks MWAIT C6 sub-states: C6 and C6P (both major 2) go together.
    assert _recognise(_rows("gnr", drop=("C6", "C6P")))[:2] == ("gnr", ["mwait-subset:C6,C6P"])
    # C6SP alone missing (its major still enumerated by C6S): only max_cstate=3 explains it.
    assert _recognise(_rows("srf", drop=("C6SP",)))[:2] == ("srf", ["max-cstate:3"])


def test_acpi_off_only_on_use_acpi_models_and_never_always_enable() -> None:
    assert _recognise(_rows("skx", off=("C6",)))[:2] == ("skx", ["acpi-off:C6"])
    # C1E is ALWAYS_ENABLE: off by default only through intel_idle.states_off.
    assert _recognise(_rows("skx", off=("C1E",)))[:2] == ("skx", ["states-off:C1E"])


def test_ivt_socket_tables() -> None:
    four = {"C1E": (10, 250), "C3": (59, 300), "C6": (84, 400)}
    eight = {"C1E": (10, 500), "C3": (59, 600), "C6": (88, 700)}
    assert _recognise(_rows("ivt"))[:2] == ("ivt", [])
    assert _recognise(_rows("ivt", four))[:2] == ("ivt", ["ivt-4s"])
    based_on, variants, config = _recognise(_rows("ivt", eight))
    assert (based_on, variants) == ("ivt", ["ivt-8s"])
    platform = SimConfig.model_validate(config).resolve_platform()
    assert next(s for s in platform.states if s.name == "C6").target_residency_us == 700


def test_acpi_cst_through_intel_idle() -> None:
    states = [
        DumpState(name="POLL", desc="CPUIDLE CORE POLL IDLE", latency_us=0, residency_us=0),
        DumpState(name="C1_ACPI", desc="ACPI FFH MWAIT 0x0", latency_us=1, residency_us=1),
        DumpState(name="C2_ACPI", desc="ACPI FFH MWAIT 0x21", latency_us=127, residency_us=381),
    ]
    based_on, variants, config = _recognise(states)
    assert (based_on, variants) == (None, ["acpi-cst"])
    platform = SimConfig.model_validate(config).resolve_platform()
    assert [(s.name, s.exit_latency_us, s.target_residency_us) for s in platform.states[1:]] == [
        ("C1_ACPI", 1, 1),
        ("C2_ACPI", 127, 381),
    ]


def test_haltpoll_and_no_driver() -> None:
    poll = DumpState(name="POLL", desc="CPUIDLE CORE POLL IDLE", latency_us=0, residency_us=0)
    hp = DumpState(name="haltpoll idle", desc="default architecture idle", latency_us=1, residency_us=1)
    r = recognise(DumpTable(states=[poll, hp], driver="haltpoll", governor="haltpoll", online_cpus=4))
    assert (r.based_on, r.driver, r.family_modelled) == ("haltpoll", "haltpoll", False)
    assert SimConfig.model_validate(r.config).n_cpus() == 4
    r = recognise(DumpTable(states=[], driver="none", online_cpus=2))
    assert (r.based_on, r.driver) == ("default_idle", "none")
    config = SimConfig.model_validate({**r.config, "duration_ms": 2})
    assert config.governor.name == "fixed" and simulate(config).cpus == 2


def test_a_table_no_builtin_explains() -> None:
    states = _rows("skx", {"C6": (150, 700)})
    r = recognise(DumpTable(states=states, driver="intel_idle", online_cpus=8))
    assert r.based_on is None and r.variant == [] and "no built-in" in r.message


def test_the_cpu_model_narrows_the_candidates() -> None:
    # icx and spr differ only in C1E; with SPR's model number an icx table is not an spr one.
    assert _recognise(_rows("spr"), cpu_family=6, cpu_model=0x8F)[:2] == ("spr", [])
    assert _recognise(_rows("icx"), cpu_family=6, cpu_model=0x8F)[0] is None


def test_uneven_packages_are_simulated_as_such() -> None:
    # 2 packages with 6 and 4 online CPUs: 2 sockets of that many single-thread cores, not 1 socket.
    r = recognise(
        DumpTable(
            states=_rows("skx"), driver="intel_idle", packages=2, online_cpus=10, cpus_per_socket=[6, 4]
        )
    )
    topology = {"sockets": 2, "cpus_per_socket": [6, 4], "threads_per_core": 1, "cpus": 10}
    assert r.config["topology"] == topology
    assert simulate(SimConfig.model_validate({**r.config, "duration_ms": 2})).cpus == 10
