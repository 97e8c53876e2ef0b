"""A run on an imported platform is that machine: on each development dump (imported gzipped, as
stored), on a guest with no package states and on one with no cpuidle driver, `POST
/api/platforms/{id}/simulate` with `{}` gives a 202 run with exactly the dump's online CPUs and its
governor."""

from __future__ import annotations

import gzip
import re
from typing import Any

import pytest

import engine
from tests.app.platforms.machines import HEADER, SKX, grep_text, machine_files, skx_layout
from tests.conftest import REPO_ROOT

MACHINES = REPO_ROOT / "app" / "fits" / "dev_machines"
# The table each development dump is (app/fits/dev_machines/README.md) and its variants.
DEVELOPMENT = {
    "sklep0": ("skx", []),
    "icx2s3": ("icx", []),
    "emr9": ("spr", []),
    "srf8": ("srf", []),
    "bdwep0": ("bdw", ["mwait-subset:C7s,C8,C9,C10", "acpi-off:C3"]),
    "adl0": ("adl_l", ["unusable:C1"]),
    "milan0": ("acpi_idle", []),
}
TEXT = {"content-type": "text/plain"}


def simulate(client: Any, body: bytes, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Import the dump, simulate it with `{}`: the import answer and the run's config."""
    imported = client.post("/api/platforms/import", content=body, headers=TEXT, params={"name": name})
    assert imported.status_code == 201, imported.text
    submitted = client.post(f"/api/platforms/{name}/simulate", json={})
    assert submitted.status_code == 202, submitted.text
    return imported.json(), client.get(f"/api/runs/{submitted.json()['id']}").json()["config"]


def dump_facts(text: str) -> tuple[int, str]:
    """The dump's CPUs with cpuidle records and its governor, read without the importer."""
    cpus = set(re.findall(r"^/sys/devices/system/cpu/cpu(\d+)/cpuidle/", text, re.M))
    governor = re.search(r"^/sys/devices/system/cpu/cpuidle/current_governor(?:_ro)?:(\S+)", text, re.M)
    assert governor is not None
    return len(cpus), governor.group(1)


@pytest.mark.parametrize("machine", sorted(DEVELOPMENT))
def test_each_development_dump_runs_as_that_machine(app_client: Any, machine: str) -> None:
    body = (MACHINES / f"{machine}-sysfs.txt.gz").read_bytes()
    cpus, governor = dump_facts(gzip.decompress(body).decode())
    answer, config = simulate(app_client, body, machine)
    assert (answer["based_on"], answer["variant"]) == DEVELOPMENT[machine]
    assert answer["governor"] == governor and answer["driver"] in ("intel_idle", "acpi_idle")
    topo = config["topology"]
    assert topo["cpus"] == cpus == topo["sockets"] * topo["cores_per_socket"] * topo["threads_per_core"]
    assert config["governor"]["name"] == governor


def test_a_pc6_off_table_runs_at_pc2_and_a_ladder_machine_with_ladder(app_client: Any) -> None:
    pc6_off = [*SKX[:3], ("C6", "MWAIT 0x20", 92, 276, 0)]
    text = grep_text(machine_files(pc6_off, 96, layout=skx_layout, governor="ladder"), HEADER)
    answer, config = simulate(app_client, text.encode(), "ladder-pc6-off")
    assert answer["variant"] == ["pc6-off"]
    assert config["package"]["limit"] == "PC2" and config["governor"]["name"] == "ladder"
    assert (
        config["topology"]["sockets"],
        config["topology"]["threads_per_core"],
        config["topology"]["cpus"],
    ) == (
        2,
        2,
        96,
    )


def test_a_guest_without_package_states_runs(app_client: Any) -> None:
    guest = [SKX[0], ("haltpoll idle", "default architecture idle", 1, 1, 0)]
    text = grep_text(machine_files(guest, 6, driver="haltpoll", governor="haltpoll"), HEADER)
    answer, config = simulate(app_client, text.encode(), "guest")
    assert (answer["driver"], answer["governor"], answer["family_modelled"]) == (
        "haltpoll",
        "haltpoll",
        False,
    )
    assert config["topology"]["cpus"] == 6
    assert config["package"]["limit"] == "PC0"


def test_a_guest_without_a_cpuidle_driver_runs_hlt(app_client: Any) -> None:
    files = {
        f"/sys/devices/system/cpu/cpu{c}/topology/{k}": v
        for c in range(4)
        for k, v in (("physical_package_id", "0"), ("core_id", str(c)), ("thread_siblings_list", str(c)))
    }
    files["/sys/devices/system/cpu/cpuidle/current_driver"] = "none"
    files["/sys/devices/system/cpu/cpuidle/current_governor_ro"] = "menu"
    answer, config = simulate(app_client, grep_text(files, HEADER).encode(), "no-driver")
    assert (answer["based_on"], answer["driver"], answer["family_modelled"]) == (
        "default_idle",
        "none",
        False,
    )
    assert config["topology"]["cpus"] == 4 and config["governor"]["name"] == "fixed"


def with_packages_and_offline(text: str, offline: set[int]) -> str:
    """sklep0 as a machine that says its packages (one die per package on Skylake-SP: die_id is the
    package) with each CPU its own core, and the `offline` CPUs taken offline, as the kernel shows
    them: `cpuN/online` 0 and no cpuidle or topology records."""
    lines: list[str] = []
    next_core: dict[str, int] = {}
    cpu_line = re.compile(r"^/sys/devices/system/cpu/cpu(\d+)/")
    for line in text.splitlines():
        m = cpu_line.match(line)
        if m and int(m.group(1)) in offline:
            continue
        lines.append(line)
        die = re.match(r"^(/sys/devices/system/cpu/cpu(\d+)/topology/)die_id:(\d+)$", line)
        if die:
            prefix, cpu, package = die.groups()
            core = next_core.get(package, 0)
            next_core[package] = core + 1
            lines += [f"{prefix}physical_package_id:{package}", f"{prefix}core_id:{core}"]
            lines.append(f"{prefix}thread_siblings_list:{cpu}")
    lines += [f"/sys/devices/system/cpu/cpu{c}/online:0" for c in sorted(offline)]
    return "\n".join(lines) + "\n"


def test_packages_left_uneven_by_offline_cpus_keep_their_own_cpu_counts(app_client: Any) -> None:
    text = gzip.decompress((MACHINES / "sklep0-sysfs.txt.gz").read_bytes()).decode()
    package_1 = {int(c) for c in re.findall(r"cpu(\d+)/topology/die_id:1$", text, re.M)}
    offline = set(sorted(package_1)[:10])  # 10 of package 1's 52 CPUs
    answer, config = simulate(app_client, with_packages_and_offline(text, offline).encode(), "sklep0-uneven")
    assert answer["based_on"] == "skx"
    topo = config["topology"]
    assert (topo["sockets"], topo["cpus_per_socket"], topo["cpus"]) == (2, [52, 42], 94)
    assert topo["threads_per_core"] == 1
    notes = answer["machine"]["notes"]
    assert any("10 CPU(s) offline" in n for n in notes)
    # A run that leaves the layout to the platform (the new-run form's blanks) has it too.
    run = app_client.post("/api/runs", json={"config": {"platform": "sklep0-uneven", "duration_ms": 1}})
    assert run.status_code == 202, run.text
    plain = app_client.get(f"/api/runs/{run.json()['id']}").json()["config"]
    assert engine.SimConfig.model_validate(plain).socket_cpus() == [52, 42]
    # The run the answer stored is simulated with those sockets.
    result = engine.simulate(engine.SimConfig.model_validate({**config, "duration_ms": 2}))
    assert result.cpus == 94 and len(result.per_cpu_residency) == 94
    assert [g.socket for g in result.hardware.sockets] == [0, 1]


def with_cores_and_offline(text: str, offline_cores: int, threads: tuple[int, ...] = (0, 1)) -> str:
    """sklep0 with its cores said (each package's CPUs in order: core i is its i-th CPU and the one
    26 later, the siblings Skylake-SP enumerates), and the given threads of package 1's first
    `offline_cores` cores taken offline."""
    package_of = {int(c): int(p) for c, p in re.findall(r"cpu(\d+)/topology/die_id:(\d+)$", text, re.M)}
    pairs: dict[int, tuple[int, int, list[int]]] = {}
    for package in sorted(set(package_of.values())):
        cpus = sorted(c for c, p in package_of.items() if p == package)
        half = len(cpus) // 2
        for i in range(half):
            mates = [cpus[i], cpus[i + half]]
            for c in mates:
                pairs[c] = (package, i, mates)
    offline = {
        c
        for c, (p, core, mates) in pairs.items()
        if p == 1 and core < offline_cores and mates.index(c) in threads
    }
    lines: list[str] = []
    cpu_line = re.compile(r"^/sys/devices/system/cpu/cpu(\d+)/")
    for line in text.splitlines():
        m = cpu_line.match(line)
        if m and int(m.group(1)) in offline:
            continue
        lines.append(line)
        die = re.match(r"^(/sys/devices/system/cpu/cpu(\d+)/topology/)die_id:\d+$", line)
        if die:
            prefix, cpu = die.group(1), int(die.group(2))
            package, core, mates = pairs[cpu]
            lines += [f"{prefix}physical_package_id:{package}", f"{prefix}core_id:{core}"]
            lines.append(f"{prefix}thread_siblings_list:{','.join(str(m) for m in sorted(mates))}")
    lines += [f"/sys/devices/system/cpu/cpu{c}/online:0" for c in sorted(offline)]
    return "\n".join(lines) + "\n"


def test_uneven_packages_keep_their_smt_siblings_paired(app_client: Any) -> None:
    """Five of package 1's 26 cores offline (10 CPUs): the run has 2 sockets of 26 and 21 cores of
    2 threads, each core's threads the dump's siblings."""
    text = gzip.decompress((MACHINES / "sklep0-sysfs.txt.gz").read_bytes()).decode()
    answer, config = simulate(app_client, with_cores_and_offline(text, 5).encode(), "sklep0-smt")
    assert answer["based_on"] == "skx"
    topo = config["topology"]
    assert (topo["sockets"], topo["cpus_per_socket"], topo["cpus"]) == (2, [52, 42], 94)
    assert (topo["threads_per_core_by_socket"], topo["threads_per_core"]) == ([2, 2], 2)
    notes = answer["machine"]["recognition"]["notes"]
    assert any("2 sockets of 26 cores of 2 thread(s), 21 cores of 2 thread(s)" in n for n in notes), notes
    assert engine.SimConfig.model_validate(config).socket_cores() == [26, 21]
    # The platform keeps the pairing for a run that leaves the layout to it.
    run = app_client.post("/api/runs", json={"config": {"platform": "sklep0-smt", "duration_ms": 1}})
    assert run.status_code == 202, run.text
    plain = engine.SimConfig.model_validate(app_client.get(f"/api/runs/{run.json()['id']}").json()["config"])
    assert (plain.socket_cpus(), plain.socket_cores(), plain.threads_per_core()) == ([52, 42], [26, 21], 2)
    result = engine.simulate(engine.SimConfig.model_validate({**config, "duration_ms": 2}))
    assert result.cpus == 94 and len(result.hardware.per_core) == 47
    assert result.hardware.threads_per_core == 2


def test_a_package_whose_cores_lost_single_siblings_keeps_each_core_as_it_is(app_client: Any) -> None:
    """Three of package 1's cores with one thread offline: package 0 keeps its 26 cores of 2
    threads, package 1 has 26 cores too, 3 of them with 1 thread (`core_threads`)."""
    text = gzip.decompress((MACHINES / "sklep0-sysfs.txt.gz").read_bytes()).decode()
    answer, config = simulate(app_client, with_cores_and_offline(text, 3, (1,)).encode(), "sklep0-mixed")
    topo = config["topology"]
    assert (topo["cpus_per_socket"], topo["cpus"], topo["threads_per_core"]) == ([52, 49], 101, 2)
    assert topo["core_threads"] == [[2] * 26, [1, 1, 1] + [2] * 23]
    assert "threads_per_core_by_socket" not in topo
    assert any("cores have [1, 2] online threads" in n for n in answer["machine"]["notes"])
    notes = answer["machine"]["recognition"]["notes"]
    assert any("26 cores of 2 thread(s), 26 cores (23 of 2, 3 of 1 threads)" in n for n in notes), notes
    parsed = engine.SimConfig.model_validate(config)
    assert (parsed.socket_cores(), parsed.n_cpus()) == ([26, 26], 101)
    result = engine.simulate(engine.SimConfig.model_validate({**config, "duration_ms": 2}))
    assert result.cpus == 101 and len(result.hardware.per_core) == 52


def test_the_machine_page_says_the_uneven_layout_it_simulates(app_client: Any) -> None:
    text = gzip.decompress((MACHINES / "sklep0-sysfs.txt.gz").read_bytes()).decode()
    simulate(app_client, with_cores_and_offline(text, 5).encode(), "sklep0-page")
    page = app_client.get("/platforms/sklep0-page").text
    run = re.search(r'<td id="machine-run">([^<]*)', page)
    assert run is not None
    assert run.group(1).startswith("94 CPUs (52 + 42 on 2 sockets, 2 and 2 thread(s) per core)"), run.group(1)
