"""Every built-in intel_idle table against its kernel source, and every one simulated.

The rows are compared with `tests/data/reference/cstate-tables.json`, a transcription of
`drivers/idle/intel_idle.c` (ColinIanKing/linux-next 244b1f05fbb6, the newest stored copy) made
apart from the platform files; the values DESIGN.md section 7 lists are checked once more by
hand below, and the package C-states against turbostat's feature tables
(`tools/power/x86/turbostat/turbostat.c` @ ColinIanKing/linux-next 01ed5b457708,
`supported_cstates`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import engine
from engine import BUILTIN_PLATFORMS, SimConfig, load_platform, simulate

from .conftest import quiet

REFERENCE = (
    Path(engine.__file__).resolve().parent.parent / "tests" / "data" / "reference" / "cstate-tables.json"
)

# idlelab id -> the kernel's table (the id is the table's name without `_cstates`; wsm is
# nehalem_cstates as WESTMERE_EP uses it).
KERNEL_TABLE = {
    "wsm": "nehalem_cstates",
    **{
        pid: f"{pid}_cstates"
        for pid in (
            "snb ivt hsw bdw skx icx spr gnr gnrd srf grr snr dnv avn knl skl adl adl_l mtl_l".split()
        )
    },
}

# DESIGN.md section 7's values, (exit latency, target residency) in us, written out again here.
DESIGN_VALUES: dict[str, dict[str, tuple[int, int]]] = {
    "ivt": {"C1": (1, 1), "C1E": (10, 80), "C3": (59, 156), "C6": (82, 300)},
    "hsw": {"C3": (33, 100)},
    "bdw": {"C3": (40, 100)},
    "spr": {"C6": (290, 800)},
    "gnr": {"C6": (170, 650), "C6P": (210, 1000)},
    "gnrd": {"C6": (220, 650), "C6P": (240, 750)},
    "srf": {"C1": (1, 1), "C1E": (2, 10), "C6S": (270, 700), "C6SP": (310, 900)},
    "grr": {"C6S": (140, 500)},
    "snr": {"C1E": (15, 25), "C6": (130, 500)},
    "dnv": {"C6": (50, 500)},
    "knl": {"C1": (1, 2), "C6": (120, 500)},
    "mtl_l": {"C1E": (1, 1), "C6": (140, 420), "C10": (310, 930)},
    "adl_l": {"C1E": (2, 4), "C6": (170, 500), "C8": (200, 600), "C10": (230, 700)},
}

# turbostat's supported_cstates per model (PCn bits), as the feature table each model maps to
# lists them; ivt's PC7 is left out because ivt_cstates has no state deep enough to request it.
TURBOSTAT_PACKAGE = {
    "wsm": ["PC3", "PC6"],  # nhm_features
    "snb": ["PC2", "PC3", "PC6", "PC7"],  # snx_features
    "ivt": ["PC2", "PC3", "PC6"],  # ivx_features (PC7 too: no ivt state requests it)
    "hsw": ["PC2", "PC3", "PC6", "PC7"],  # hsx_features
    "bdw": ["PC2", "PC3", "PC6"],  # bdx_features
    "skx": ["PC2", "PC6"],
    "icx": ["PC2", "PC6"],
    "spr": ["PC2", "PC6"],
    "gnr": ["PC2", "PC6"],  # spr_features
    "gnrd": ["PC2", "PC6"],  # spr_features
    "srf": ["PC2", "PC6"],
    "grr": [],  # grr_features: CC1 | CC6
    "snr": [],  # tmtd_features: CC1 | CC6
    "dnv": ["PC2", "PC6"],  # gmtd_features
    "avn": ["PC3", "PC6"],  # slvd_features
    "knl": ["PC3", "PC6"],  # knl_features
    "skl": ["PC2", "PC3", "PC6", "PC7", "PC8", "PC9", "PC10"],
    "adl": ["PC2", "PC3", "PC6", "PC8", "PC10"],  # adl_features
    "adl_l": ["PC2", "PC3", "PC6", "PC8", "PC10"],
    "mtl_l": ["PC2", "PC3", "PC6", "PC8", "PC10"],
}


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REFERENCE.read_text())
    return data


def _row(d: dict[str, Any]) -> tuple[Any, ...]:
    return (
        d["name"],
        d["desc"],
        d["mwait_hint"],
        sorted(d["flags"]),
        d["exit_latency_us"],
        d["target_residency_us"],
    )


def test_every_listed_table_is_built_in() -> None:
    assert set(KERNEL_TABLE) <= set(BUILTIN_PLATFORMS)
    for pid, table in KERNEL_TABLE.items():
        assert load_platform(pid).kernel_table == table


@pytest.mark.parametrize("pid", sorted(KERNEL_TABLE))
def test_rows_equal_the_kernel_transcription(reference: dict[str, Any], pid: str) -> None:
    platform = load_platform(pid)
    expected = [_row(s) for s in reference["poll"]["states"] + reference[KERNEL_TABLE[pid]]["states"]]
    assert [_row(s.model_dump()) for s in platform.states] == expected
    # Each row says where it comes from, commit included.
    for s in platform.states[1:]:
        assert "intel_idle.c" in s.source and "244b1f05fbb6" in s.source


@pytest.mark.parametrize("pid", sorted(DESIGN_VALUES))
def test_design_values(pid: str) -> None:
    states = {s.name: (s.exit_latency_us, s.target_residency_us) for s in load_platform(pid).states}
    for name, values in DESIGN_VALUES[pid].items():
        assert states[name] == values, name


def test_adl_c1_is_unusable_and_never_used() -> None:
    for pid in ("adl", "adl_l"):
        c1 = load_platform(pid).states[1]
        assert c1.name == "C1" and "CPUIDLE_FLAG_UNUSABLE" in c1.flags
    r = simulate(SimConfig(platform="adl_l", duration_ms=5))
    c1 = next(s for s in r.states if s.name == "C1")
    assert c1.disabled and c1.usage == 0


@pytest.mark.parametrize("pid", sorted(TURBOSTAT_PACKAGE))
def test_package_states_are_turbostats(pid: str) -> None:
    platform = load_platform(pid)
    assert platform.package_states() == ["PC0", *TURBOSTAT_PACKAGE[pid]]
    if platform.package is not None:
        assert "turbostat.c" in platform.package.source and "01ed5b457708" in platform.package.source


def test_package_and_module_states_as_pepc_describes_them() -> None:
    gnr = load_platform("gnr").package
    assert gnr is not None
    # GNR's C6 reaches core C6 only; package C6 needs C6P on every core of every socket.
    assert {p.name: (p.requires, p.scope) for p in gnr.states}["PC6"] == ("C6P", "system")
    srf = load_platform("srf").package
    assert srf is not None
    # SRF's C6S is the module (shared L2) state, C6SP the package one.
    assert [(m.name, m.requires, m.scope) for m in srf.module_states] == [("MC6", "C6S", "module")]
    assert {p.name: p.requires for p in srf.states}["PC6"] == "C6SP"
    assert load_platform("srf").topology.cores_per_module == 4
    grr = load_platform("grr")
    assert "PC6" not in grr.package_states() and grr.module_states() == ["MC6"]
    # Haswell and Broadwell servers have core C3 and PC3.
    for pid in ("hsw", "bdw"):
        p = load_platform(pid)
        assert "C3" in p.state_names() and "PC3" in p.package_states()


def test_cpu_models_are_intel_idle_ids(reference: dict[str, Any]) -> None:
    """The models each table is registered for, as the transcription's `used_by` lists them."""
    for pid, table in KERNEL_TABLE.items():
        listed = {
            name.split()[0].removeprefix("INTEL_")
            for names in reference[table].get("used_by", {}).values()
            for name in names
        }
        ours = {m.name.removeprefix("INTEL_") for m in load_platform(pid).cpu_models}
        assert listed <= ours, pid
        assert all(m.family == 6 and m.model is not None for m in load_platform(pid).cpu_models)
    # Clearwater Forest reuses srf's table.
    assert "INTEL_ATOM_DARKMONT_X" in {m.name for m in load_platform("srf").cpu_models}
    assert {m.name for m in load_platform("spr").cpu_models} == {
        "INTEL_SAPPHIRERAPIDS_X",
        "INTEL_EMERALDRAPIDS_X",
    }


def test_ivt_tables_by_package_count(reference: dict[str, Any]) -> None:
    """ivt_idle_state_table_update(): 1-2 packages ivt_cstates, 3-4 the 4-socket table, more the
    8-socket one."""
    ivt = load_platform("ivt")

    def rows(p: Any) -> list[tuple[Any, ...]]:
        return [(s.name, s.exit_latency_us, s.target_residency_us) for s in p.states[1:]]

    def ref(name: str) -> list[tuple[Any, ...]]:
        return [
            (s["name"], s["exit_latency_us"], s["target_residency_us"]) for s in reference[name]["states"]
        ]

    assert rows(ivt.for_sockets(1)) == rows(ivt.for_sockets(2)) == ref("ivt_cstates")
    assert rows(ivt.for_sockets(3)) == rows(ivt.for_sockets(4)) == ref("ivt_cstates_4s")
    assert rows(ivt.for_sockets(5)) == rows(ivt.for_sockets(8)) == ref("ivt_cstates_8s")
    assert ivt.for_sockets(4).kernel_table == "ivt_cstates_4s"
    # A 4-socket run registers the 4-socket table: C6 84/400.
    r = simulate(
        SimConfig.model_validate(
            {
                "platform": "ivt",
                "duration_ms": 2,
                "topology": {"sockets": 4, "cores_per_socket": 1, "threads_per_core": 1},
            }
        )
    )
    c6 = next(s for s in r.states if s.name == "C6")
    assert (c6.exit_latency_us, c6.target_residency_us) == (84, 400)


@pytest.mark.parametrize(("pid", "figures"), [("skx", (92, 276)), ("spr", (190, 600))])
def test_pc6_off_rewrites(pid: str, figures: tuple[int, int]) -> None:
    """skx_ and spr_idle_state_table_update(): package limit PC0 or PC2 (the dump cannot tell which)."""
    p = load_platform(pid)
    for limit in ("PC0", "PC2"):
        c6 = next(s for s in p.under_package_limit(limit).states if s.name == "C6")
        assert (c6.exit_latency_us, c6.target_residency_us) == figures
    c6 = next(s for s in p.under_package_limit("PC6").states if s.name == "C6")
    assert (c6.exit_latency_us, c6.target_residency_us) != figures


# ------------------------------------------------------------------------------------------ runs


@pytest.mark.parametrize("pid", sorted(BUILTIN_PLATFORMS))
def test_every_builtin_simulates(pid: str) -> None:
    """`{platform: id}` runs on every built-in table, with the part's CPUs and its deepest package
    state as the limit; platforms without a hardware model say so in the hardware section."""
    platform = load_platform(pid)
    config = SimConfig(platform=pid, duration_ms=3)
    part = platform.topology
    assert config.topology.sockets == part.sockets
    assert config.package.limit == platform.deepest_package_state()
    r = simulate(config)
    assert r.cpus == part.sockets * part.cores_per_socket * part.threads_per_core
    assert r.hardware.package_states == platform.package_states()
    assert sum(r.hardware.system.package.values()) == pytest.approx(1.0, abs=1e-9)
    if platform.family_modelled:
        assert "family_modelled" not in r.hardware.model_dump(mode="json")
    else:
        assert r.hardware.family_modelled is False
        assert "not modelled for this family" in r.hardware.model_note
        assert platform.modelled_on in r.hardware.model_note


@pytest.mark.parametrize("pid", ["grr", "snr"])
def test_no_package_states_still_runs(pid: str) -> None:
    """A machine with no package C-state gives a result (PC0 the whole run), not "has no PC6"."""
    for limit in (None, "PC6", "PC0"):
        body: dict[str, Any] = {"platform": pid, "duration_ms": 3}
        if limit is not None:
            body["package"] = {"limit": limit}
        r = simulate(SimConfig.model_validate(body))
        assert r.hardware.system.package == {"PC0": 1.0}


def test_a_limit_the_platform_lacks_is_refused_by_name() -> None:
    with pytest.raises(
        ValueError, match="package.limit: wsm has no PC2; its package states are PC0, PC3, PC6"
    ):
        SimConfig(platform="wsm", package={"limit": "PC2"})  # type: ignore[arg-type]


def test_srf_module_c6_needs_the_whole_module() -> None:
    """Mod%c6 holds only while every core of the 4-core module is in C6S or deeper: with one core of
    the only module busy it stays 0, with all idle it follows their C6S time."""
    topo = {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1}
    idle = quiet(timers=[{"period_us": 5000.0}])
    base = {"platform": "srf", "duration_ms": 30, "topology": topo, "wakeups": idle}
    r_idle = simulate(SimConfig.model_validate(base))
    r_busy = simulate(SimConfig.model_validate({**base, "wakeups": {**idle, "busy_cpus": [3]}}))
    assert r_idle.hardware.module_states == ["MC6"]
    assert r_idle.hardware.system.module["MC6"] > 0.5
    assert r_idle.hardware.system.turbostat["Mod%c6"] == pytest.approx(
        100 * r_idle.hardware.system.module["MC6"]
    )
    assert r_busy.hardware.system.module["MC6"] == 0.0
    # The package follows the module: no PC2/PC6 with a busy core.
    assert r_busy.hardware.system.package["PC0"] == 1.0


def test_gnr_c6_alone_keeps_the_package_out_of_pc6() -> None:
    """GNR's C6 requests core C6 only: with C6P disabled the package never reaches PC6."""
    topo = {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1}
    body = {
        "platform": "gnr",
        "duration_ms": 30,
        "topology": topo,
        "wakeups": quiet(timers=[{"period_us": 5000.0}]),
    }
    with_c6p = simulate(SimConfig.model_validate(body))
    without = simulate(SimConfig.model_validate({**body, "states": {"disabled": ["C6P"]}}))
    assert with_c6p.hardware.system.package["PC6"] > 0.3
    assert without.hardware.system.package["PC6"] == 0.0
    assert without.hardware.system.core["CC6"] > 0.5


def test_four_threads_per_core_hold_the_core_in_c0() -> None:
    """Xeon Phi: a core reaches CC6 only while all four of its threads request C6; one busy thread
    of four keeps it in CC0, though the other three are in OS C6 most of the time."""
    topo = {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 4}
    body = {
        "platform": "knl",
        "duration_ms": 30,
        "topology": topo,
        "wakeups": quiet(timers=[{"period_us": 5000.0}]),
    }
    idle = simulate(SimConfig.model_validate(body))
    # CPU 0 is thread 0 of core 0; CPUs 2, 4, 6 are its other threads (CPU t*C + k, C = 2).
    busy = simulate(SimConfig.model_validate({**body, "wakeups": {**body["wakeups"], "busy_cpus": [0]}}))
    assert idle.cpus == busy.cpus == 8
    assert idle.hardware.per_core[0][-1] > 0.5  # CC6 of core 0 with every thread idle
    assert busy.hardware.per_core[0][-1] == 0.0
    assert busy.hardware.per_core[1][-1] > 0.5  # core 1 untouched
    c6 = busy.per_cpu_state_names.index("C6")
    assert min(busy.per_cpu_residency[cpu][c6] for cpu in (2, 4, 6)) > 0.5


@pytest.mark.parametrize("pid", sorted(BUILTIN_PLATFORMS))
def test_hardware_invariants_on_every_platform(pid: str) -> None:
    """On every table: a core is in a core C-state (or deeper) no longer than each of its threads
    asks for one that deep; a module or package state holds no longer than every core of its
    scope is in the core C-state its required state asks; each breakdown sums to 1."""
    platform = load_platform(pid)
    threads = platform.topology.threads_per_core
    cores = 8 if platform.topology.cores_per_module > 1 else 4
    body = {
        "platform": pid,
        "duration_ms": 20,
        "topology": {"sockets": 1, "cores_per_socket": cores, "threads_per_core": threads},
        "wakeups": {"busy_cpus": [1]},
    }
    r = simulate(SimConfig.model_validate(body))
    hw = r.hardware
    order = ["CC0", "CC1", "CC1E", "CC3", "CC6", "CC7"]
    level = {s.name: s.core_level for s in platform.states}
    for row in hw.per_core:
        assert sum(row) == pytest.approx(1.0, abs=1e-9) and min(row) >= -1e-12
    assert sum(hw.system.package.values()) == pytest.approx(1.0, abs=1e-9)

    def core_share(core: int, at_least: int) -> float:
        return sum(
            v for n, v in zip(hw.core_states, hw.per_core[core], strict=True) if order.index(n) >= at_least
        )

    for cpu, row in enumerate(r.per_cpu_residency):
        core = cpu % cores
        for k in range(1, 6):
            os_share = sum(
                v for n, v in zip(r.per_cpu_state_names, row, strict=False) if level.get(n, 0) >= k
            )
            assert core_share(core, k) <= os_share + 1e-9
    if platform.package is not None:
        for p in platform.package.states:
            need = level[p.requires]
            deepest_core = min(core_share(c, need) for c in range(cores))
            assert hw.system.package[p.name] <= deepest_core + 1e-9, p.name
        for m in platform.package.module_states:
            # Core 1 is busy: its module (cores 0-3) never reaches module C6.
            assert hw.system.module[m.name] <= 0.5 + 1e-9
