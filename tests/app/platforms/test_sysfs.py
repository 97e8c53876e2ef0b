"""Reading sysfs cpuidle dumps: tables, topology, counters, matching built-ins, and every bad input."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.platforms.machine import (
    build_platform,
    counter_summary,
    machine_platform,
    match_builtin,
    recognise_dump,
    run_topology,
)
from app.platforms.sysfs import DumpError, SysfsDump, parse_dump
from app.platforms.sysfs_records import MAX_CPUS
from engine import BUILTIN_PLATFORMS
from tests.app.platforms.machines import (
    CLIENT,
    HEADER,
    ICX,
    SKX,
    SKX_PC6_OFF,
    grep_text,
    machine_files,
    skx96,
    skx_layout,
)


def line_of(text: str, needle: str) -> int:
    """1-based number of the first line that starts with `needle`."""
    for n, line in enumerate(text.split("\n"), start=1):
        if line.startswith(needle):
            return n
    raise AssertionError(f"{needle!r} not in the text")


def replace_line(text: str, needle: str, new: str | None) -> str:
    """Replace (or drop, with None) the line that starts with `needle`."""
    lines = text.split("\n")
    n = line_of(text, needle) - 1
    if new is None:
        del lines[n]
    else:
        lines[n] = new
    return "\n".join(lines)


def expect_error(data: bytes | str, line: int | None, *words: str) -> DumpError:
    with pytest.raises(DumpError) as info:
        parse_dump(data)
    err = info.value
    assert err.line == line, str(err)
    for w in words:
        assert w in err.reason, err.reason
    return err


# ------------------------------------------------------------------------------------ a real server


def test_skx_96_cpus_two_sockets_smt() -> None:
    dump = parse_dump(skx96())
    assert dump.state_names() == ["POLL", "C1", "C1E", "C6"]
    assert [s.mwait_hint for s in dump.states] == [None, "0x00", "0x01", "0x20"]
    assert [(s.latency_us, s.residency_us) for s in dump.states] == [(0, 0), (2, 2), (10, 20), (133, 600)]
    assert dump.states[0].power_mw is None  # 4294967295 is -1: unknown
    assert not any(s.disabled for s in dump.states)
    topo = dump.topology
    assert (topo.cpus, topo.sockets, topo.cores, topo.cores_per_socket, topo.threads_per_core) == (
        96,
        2,
        48,
        24,
        2,
    )
    assert not topo.inferred
    assert [c.cpu for c in dump.cpus] == list(
        range(96)
    )  # numeric order, though the file is cpu0, cpu1, cpu10...
    cpu60 = dump.cpus[60]  # the sibling of cpu12: package 0, the 13th core, core_id (12 // 6) * 8 + 0 = 16
    assert (cpu60.package_id, cpu60.core_id, cpu60.thread_siblings) == (0, 16, [12, 60])
    assert dump.driver == "intel_idle" and dump.governor == "menu"
    assert dump.available_governors == ["ladder", "menu", "teo"]
    assert dump.model_name == "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz"
    assert (dump.vendor, dump.cpu_family, dump.cpu_model) == ("GenuineIntel", 6, 85)
    assert dump.kernel == "6.8.0-45-generic"
    assert dump.uptime_s == 100.0
    assert dump.collected_at == "2026-12-01T11:00:00+00:00"
    assert dump.cpus[5].counters[3] is not None and dump.cpus[5].counters[3].time_us == 60_000_000


def test_skx_table_equals_the_builtin_and_the_platform_borrows_its_costs() -> None:
    dump = parse_dump(skx96())
    match = match_builtin(dump)
    assert (match.builtin, match.relation, match.distance) == ("skx", "equal", 0.0)
    platform = build_platform(dump, "my-clx")
    assert platform.name == "my-clx"
    assert platform.state_names() == ["POLL", "C1", "C1E", "C6"]
    assert platform.states[3].exit_latency_us == 133 and platform.states[3].target_residency_us == 600
    assert platform.states[1].flags == ["CPUIDLE_FLAG_IRQ_ENABLE"]  # not in sysfs: from skx's C1
    assert (platform.topology.sockets, platform.topology.cores_per_socket) == (2, 24)
    assert platform.topology.part == dump.model_name
    assert platform.kernel == "6.8.0-45-generic"
    tsc = platform.costs.tsc_mhz
    assert tsc.kind == "estimate" and tsc.source.startswith("borrowed from built-in 'skx'")
    power = platform.states[3].power_watts
    assert power.kind == "estimate" and "borrowed from built-in 'skx' C6 power" in power.source
    assert platform.busy_watts.source.startswith("borrowed")
    assert any("equals the built-in 'skx'" in n for n in platform.notes)


def test_skx_with_c6_at_92_276_is_recognised_as_pc6_off_and_runs_at_pc2() -> None:
    dump = parse_dump(grep_text(machine_files(SKX_PC6_OFF, 4)))
    topology = run_topology(dump.topology)
    rec, match = recognise_dump(dump, topology)
    assert (rec.based_on, rec.variant, match.relation, match.variant) == (
        "skx",
        ["pc6-off"],
        "variant",
        "pc6-off",
    )
    assert rec.config["package"] == {"limit": "PC2"}
    platform = machine_platform(dump, rec, match, "pc6-off")
    # The engine rewrites C6 under that limit, as skx_idle_state_table_update() does.
    assert platform.under_package_limit("PC2").states[3].exit_latency_us == 92
    assert topology == {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1, "cpus": 4}


def test_icx_table_equals_icx_and_keeps_the_published_median_labelled_borrowed() -> None:
    dump = parse_dump(grep_text(machine_files(ICX, 8)))
    assert match_builtin(dump).builtin == "icx" and match_builtin(dump).relation == "equal"
    c6 = build_platform(dump, "icx-box").states[3]
    assert c6.exit_latency_median_us is not None and c6.exit_latency_median_us.value == 128
    assert c6.exit_latency_median_us.kind == "estimate" and "published" in c6.exit_latency_median_us.source


FIRST_THREE = {name: BUILTIN_PLATFORMS[name] for name in ("skx", "icx", "wsm")}


def test_client_without_topology_is_inferred_and_matched_to_the_closest_table() -> None:
    dump = parse_dump(grep_text(machine_files(CLIENT, 8)))
    topo = dump.topology
    assert topo.inferred and (topo.sockets, topo.cores, topo.threads_per_core) == (1, 8, 1)
    assert "inferred" in topo.note and topo.note in dump.notes
    # The distance arithmetic against the first three tables (the engine now has adl's, which this
    # table equals).
    match = match_builtin(dump, FIRST_THREE)
    # icx: C1 1/1 equal; C1E 2/4 vs 4/4 -> ln(5/3); C6 220/600 vs 170/600 -> ln(221/171); C8 and
    # C10 unmatched -> 2 each. skx and wsm are further (C1E 2/4 against 10/20 alone is ln(11/3) + ln(21/5)).
    assert match.relation == "closest" and match.builtin == "icx"
    assert match.distance == pytest.approx(math.log(5 / 3) + math.log(221 / 171) + 4.0, abs=1e-6)
    platform = build_platform(dump, "laptop", based_on="icx")
    assert platform.state_names() == ["POLL", "C1", "C1E", "C6", "C8", "C10"]
    assert platform.states[4].flags == []  # no C8 in icx: nothing to borrow
    assert platform.states[4].power_watts.kind == "estimate"
    assert (platform.topology.sockets, platform.topology.cores_per_socket) == (1, 8)


def test_relative_paths_crlf_and_grep_errors_are_accepted() -> None:
    text = grep_text(machine_files(SKX, 2)).replace("/sys/devices/system/cpu/", "")
    text = "grep: cpu9/cpuidle: No such file or directory\n" + text.replace("\n", "\r\n")
    dump = parse_dump(text)
    assert dump.state_names() == ["POLL", "C1", "C1E", "C6"] and len(dump.cpus) == 2
    assert any("'grep:' error" in n for n in dump.notes)


def test_offline_cpus_keep_cpuidle_but_have_no_topology() -> None:
    files = machine_files(SKX, 96, layout=skx_layout)
    files = {p: v for p, v in files.items() if not p.startswith("/sys/devices/system/cpu/cpu95/topology/")}
    dump = parse_dump(grep_text(files))
    assert dump.topology.cores == 48 and dump.topology.threads_per_core == 2
    assert any("offline" in n and "95" in n for n in dump.notes)


def test_user_disabled_states() -> None:
    disabled = {(cpu, 3): 1 for cpu in range(4)} | {(0, 2): 1}
    dump = parse_dump(grep_text(machine_files(SKX, 4, disabled=disabled)))
    assert dump.states[3].disabled and dump.states[3].disabled_cpus == [0, 1, 2, 3]
    # What the app stores comes back the same.
    assert SysfsDump.model_validate_json(dump.model_dump_json()) == dump
    assert not dump.states[2].disabled and dump.states[2].disabled_cpus == [0]


# ------------------------------------------------------------------------------------------ counters


def test_counter_shares_over_uptime() -> None:
    def counters(cpu: int, idx: int) -> tuple[int, int, int, int, int]:
        # cpu1 never reaches C6 and spends that time in C1 instead.
        table = [(1000, 1_000_000, 0, 100, 0), (2000, 4_000_000, 20, 200, 0), (500, 5_000_000, 50, 5, 0)]
        table.append((3000, 60_000_000, 300, 0, 0))
        if cpu == 1 and idx == 1:
            return (9000, 64_000_000, 20, 900, 0)
        if cpu == 1 and idx == 3:
            return (0, 0, 0, 0, 0)
        return table[idx]

    dump = parse_dump(grep_text(machine_files(SKX, 96, layout=skx_layout, counters=counters), HEADER))
    summary = counter_summary(dump)
    assert summary.basis == "uptime"
    cpu0 = summary.per_cpu[0]
    assert cpu0.shares == pytest.approx([0.01, 0.04, 0.05, 0.60])
    assert cpu0.idle_share == pytest.approx(0.70)
    assert summary.per_cpu[1].shares == pytest.approx([0.01, 0.64, 0.05, 0.0])
    c6 = summary.states[3]
    assert c6.share == pytest.approx(95 * 60e6 / (96 * 100e6))  # 0.59375
    assert (c6.usage, c6.above, c6.below) == (95 * 3000, 95 * 300, 0)
    assert c6.above_ratio == pytest.approx(0.1)
    c1 = summary.states[1]
    assert c1.below_ratio == pytest.approx((95 * 200 + 900) / (95 * 2000 + 9000))
    assert summary.idle_share == pytest.approx(0.70)  # cpu1 moved C6 time to C1: the same 70 %


def test_counter_shares_without_uptime_are_among_idle_states() -> None:
    dump = parse_dump(grep_text(machine_files(SKX, 2)))
    summary = counter_summary(dump)
    assert summary.basis == "idle" and "idle states only" in summary.note
    assert summary.idle_share is None
    assert summary.states[3].share == pytest.approx(60 / 70)
    assert summary.per_cpu[0].shares == pytest.approx([1 / 70, 4 / 70, 5 / 70, 60 / 70])


# ------------------------------------------------------------------------------------------ bad input


def test_empty_file() -> None:
    expect_error(b"", None, "empty")
    expect_error("\n\n", None, "empty")


def test_random_bytes_name_the_line() -> None:
    expect_error(b"\x89PNG\r\n\x1a\nIHDR\x00\x00", 3, "binary")
    good = grep_text(machine_files(SKX, 1)).encode()
    expect_error(good[:200] + b"\n\xff\xfe\xfd garbage\n", good[:200].count(b"\n") + 2, "UTF-8")


def test_foreign_text_is_refused_on_its_first_line() -> None:
    expect_error("Busy%\tCPU%c1\tCPU%c6\n0.21\t0.30\t99.48\n", 1, "no ':'")
    expect_error("/etc/passwd:root:x:0:0:root:/root:/bin/bash\n", 1, "not a record")


def test_a_truncated_line_is_named() -> None:
    text = skx96()
    cut = text[: text.index("/sys/devices/system/cpu/cpu1/cpuidle/state2/latency") + 30]
    expect_error(cut, cut.count("\n") + 1, "no ':'")
    empty_value = replace_line(
        text,
        "/sys/devices/system/cpu/cpu7/cpuidle/state3/time:",
        "/sys/devices/system/cpu/cpu7/cpuidle/state3/time:",
    )
    expect_error(empty_value, line_of(text, "/sys/devices/system/cpu/cpu7/cpuidle/state3/time:"), "no value")


def test_a_state_with_no_name() -> None:
    text = skx96()
    no_name = replace_line(text, "/sys/devices/system/cpu/cpu5/cpuidle/state2/name:", None)
    first = line_of(no_name, "/sys/devices/system/cpu/cpu5/cpuidle/state2/")
    expect_error(no_name, first, "cpu5/cpuidle/state2 has no name")


def test_contradictory_values() -> None:
    text = skx96()
    path = "/sys/devices/system/cpu/cpu7/cpuidle/state3/latency:"
    err = expect_error(replace_line(text, path, path + "92"), line_of(text, path), "contradictory", "cpu0")
    assert f"line {line_of(text, '/sys/devices/system/cpu/cpu0/cpuidle/state3/latency:')}" in err.reason
    # The same file twice with two values.
    twice = text + "/sys/devices/system/cpu/cpu3/cpuidle/state1/usage:7\n"
    expect_error(twice, text.count("\n") + 1, "contradictory", "state1/usage")
    # cpu0 names cpu48 as its sibling, but cpu48 says it sits in another core.
    core = "/sys/devices/system/cpu/cpu48/topology/core_id:"
    moved = replace_line(text, core, core + "30")
    expect_error(moved, line_of(text, "/sys/devices/system/cpu/cpu0/topology/core_cpus_list:"), "cpu48")
    ro = replace_line(
        text,
        "/sys/devices/system/cpu/cpuidle/current_governor_ro:",
        "/sys/devices/system/cpu/cpuidle/current_governor_ro:teo",
    )
    expect_error(
        ro, line_of(text, "/sys/devices/system/cpu/cpuidle/current_governor_ro:"), "current_governor"
    )


def test_bad_values() -> None:
    text = skx96()
    path = "/sys/devices/system/cpu/cpu2/cpuidle/state1/residency:"
    expect_error(replace_line(text, path, path + "two"), line_of(text, path), "integer")
    path = "/sys/devices/system/cpu/cpu2/cpuidle/state1/disable:"
    expect_error(replace_line(text, path, path + "2"), line_of(text, path), "0 or 1")
    path = "/sys/devices/system/cpu/cpu2/topology/thread_siblings_list:"
    expect_error(replace_line(text, path, path + "2-x"), line_of(text, path), "CPU list")
    expect_error(
        replace_line(text, "/proc/uptime:", "/proc/uptime:soon"), line_of(text, "/proc/uptime:"), "uptime"
    )


def test_hostile_numbers_are_refused_without_building_them() -> None:
    text = skx96()
    expect_error(
        text + "/sys/devices/system/cpu/cpu" + "9" * 5000 + "/cpuidle/state0/name:X\n", text.count("\n") + 1
    )
    path = "/sys/devices/system/cpu/cpu2/topology/thread_siblings_list:"
    huge = ",".join(["0-8191"] * 100_000)
    expect_error(replace_line(text, path, path + huge), line_of(text, path), "ranges")
    expect_error(replace_line(text, path, path + "0-9999"), line_of(text, path), "bad CPU range")
    path = "/sys/devices/system/cpu/cpu2/cpuidle/state1/usage:"
    expect_error(replace_line(text, path, path + "9" * 30), line_of(text, path), "integer")


def test_too_many_cpus_is_named_at_the_first_cpu_over() -> None:
    text = "".join(f"/sys/devices/system/cpu/cpu{c}/cpuidle/state0/name:POLL\n" for c in range(MAX_CPUS + 1))
    expect_error(text, MAX_CPUS + 1, "too many CPUs", f"cpu{MAX_CPUS}", "at most 1024")


def test_too_many_states() -> None:
    text = "".join(f"/sys/devices/system/cpu/cpu0/cpuidle/state{i}/name:S{i}\n" for i in range(33))
    expect_error(text, 33, "too many states", "state32")


def test_a_gap_in_the_state_indices() -> None:
    files = {p: v for p, v in machine_files(SKX, 2).items() if "/state2/" not in p}
    text = grep_text(files)
    expect_error(text, line_of(text, "/sys/devices/system/cpu/cpu0/cpuidle/state3/"), "state2")


def test_no_states_at_all() -> None:
    expect_error(HEADER, None, "no cpuidle state records")


def test_a_large_dump_is_bounded_by_cpus_not_lines() -> None:
    # 1,024 CPUs x 6 states: ~74k lines, well past any line count a careless bound would pick.
    dump = parse_dump(grep_text(machine_files(CLIENT, MAX_CPUS)))
    assert len(dump.cpus) == MAX_CPUS


def test_a_table_the_engine_refuses_names_the_state_line() -> None:
    bad = [SKX[0], SKX[1], ("C1E", "MWAIT 0x01", 10, 20, 0), ("C6", "MWAIT 0x20", 5, 600, 0)]
    text = grep_text(machine_files(bad, 1))
    dump = parse_dump(text)  # sysfs allows it; the engine's table rules do not
    with pytest.raises(DumpError) as info:
        build_platform(dump, "odd")
    assert info.value.line == line_of(text, "/sys/devices/system/cpu/cpu0/cpuidle/state3/")
    assert "exit latencies must not decrease" in info.value.reason
    # Two names that become the same engine name.
    twins = [SKX[0], ("C1 x", "MWAIT 0x00", 2, 2, 0), ("C1/x", "MWAIT 0x01", 2, 2, 0)]
    text = grep_text(machine_files(twins, 1))
    with pytest.raises(DumpError) as info:
        build_platform(parse_dump(text), "odd")
    assert info.value.line == line_of(text, "/sys/devices/system/cpu/cpu0/cpuidle/state2/")
    assert "duplicate state name 'C1_x'" in info.value.reason


def test_a_guest_with_haltpoll() -> None:
    # cpuidle-haltpoll registers "haltpoll idle": sysfs names may hold a blank, engine names may not.
    guest = [SKX[0], ("haltpoll idle", "default architecture idle", 1, 1, 0)]
    dump = parse_dump(grep_text(machine_files(guest, 2, driver="haltpoll", governor="haltpoll")))
    assert dump.state_names() == ["POLL", "haltpoll idle"] and dump.driver == "haltpoll"
    assert dump.states[1].mwait_hint is None
    platform = build_platform(dump, "guest")
    assert platform.state_names() == ["POLL", "haltpoll_idle"]
    assert any("'haltpoll idle' -> 'haltpoll_idle'" in n for n in platform.notes)
    # Nothing in common with the first three tables (the engine now has haltpoll's): icx and skx are
    # equally far (1 + 3 unmatched states, 2 each).
    match = match_builtin(dump, FIRST_THREE)
    assert (match.builtin, match.distance) == ("icx", 8.0) and "tied with 'skx'" in match.message


def test_a_table_without_poll_gets_it_in_front() -> None:
    acpi = [("C1_ACPI", "ACPI FFH MWAIT 0x0", 1, 1, 0), ("C2_ACPI", "ACPI FFH MWAIT 0x21", 41, 123, 0)]
    dump = parse_dump(grep_text(machine_files(acpi, 2)))
    assert [s.mwait_hint for s in dump.states] == ["0x00", "0x21"]
    assert build_platform(dump, "acpi").state_names() == ["POLL", "C1_ACPI", "C2_ACPI"]


# ----------------------------------------------------------------------------------------- properties

SMALL = grep_text(machine_files(SKX, 2, layout=lambda c: (0, 0, "0-1")), HEADER)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_give_a_dump_or_a_dump_error(data: bytes) -> None:
    try:
        parse_dump(data)
    except DumpError as err:
        assert err.line is None or err.line >= 1


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=len(SMALL)), st.binary(max_size=40))
def test_a_dump_cut_anywhere_or_spliced_gives_a_dump_or_a_dump_error(cut: int, junk: bytes) -> None:
    data = SMALL.encode()
    try:
        parse_dump(data[:cut] + junk + data[cut:])
    except DumpError as err:
        assert err.line is None or 1 <= err.line <= SMALL.count("\n") + junk.count(b"\n") + 1
    try:
        parse_dump(data[:cut])
    except DumpError:
        pass


def _topology_files(n: int, record: Callable[[int], dict[str, str]]) -> dict[str, str]:
    files = machine_files(SKX, n)
    for cpu in range(n):
        for key, value in record(cpu).items():
            files[f"/sys/devices/system/cpu/cpu{cpu}/topology/{key}"] = value
    return files


def test_a_multi_die_part_counts_sockets_by_package_and_cores_per_die() -> None:
    # Cascade Lake-AP: 2 packages of 2 dies, core_id repeating on each die; 1 thread per core here.
    def record(cpu: int) -> dict[str, str]:
        return {"physical_package_id": str(cpu // 8), "die_id": str(cpu // 4 % 2), "core_id": str(cpu % 4)}

    topo = parse_dump(grep_text(_topology_files(16, record))).topology
    assert (topo.sockets, topo.cores, topo.cores_per_socket, topo.threads_per_core) == (2, 16, 8, 1)
    assert "4 dies: a die is not a socket" in topo.note
    assert run_topology(topo) == {"sockets": 2, "cores_per_socket": 8, "threads_per_core": 1, "cpus": 16}


def test_modules_from_cluster_id_and_four_threads_per_core() -> None:
    def record(cpu: int) -> dict[str, str]:
        core = cpu // 4
        siblings = f"{core * 4}-{core * 4 + 3}"
        return {"physical_package_id": "0", "core_id": str(core), "cluster_id": str(core // 2),
                "thread_siblings_list": siblings}  # fmt: skip

    topo = parse_dump(grep_text(_topology_files(16, record))).topology
    assert (topo.cores, topo.threads_per_core, topo.cores_per_module) == (4, 4, 2)
    assert run_topology(topo) == {
        "sockets": 1, "cores_per_socket": 4, "threads_per_core": 4, "cpus": 16, "cores_per_module": 2
    }  # fmt: skip


def test_offline_cpus_by_their_online_file_are_not_simulated() -> None:
    files = machine_files(SKX, 8, layout=lambda c: (0, c, str(c)))
    files["/sys/devices/system/cpu/cpu7/online"] = "0"
    files["/sys/devices/system/cpu/cpu6/online"] = "1"
    dump = parse_dump(grep_text(files))
    assert [c.cpu for c in dump.cpus if not c.online] == [7]
    assert dump.topology.online_cpus == 7 and run_topology(dump.topology)["cpus"] == 7
    assert any("offline when the dump was taken" in n for n in dump.notes)


def test_topology_from_proc_cpuinfo_when_sysfs_has_none() -> None:
    header = "".join(
        f"/proc/cpuinfo:processor\t: {c}\n/proc/cpuinfo:physical id\t: {c // 4}\n"
        f"/proc/cpuinfo:core id\t: {c % 4}\n"
        for c in range(8)
    )
    topo = parse_dump(grep_text(machine_files(SKX, 8), header)).topology
    assert (topo.sockets, topo.cores_per_socket, topo.inferred, topo.source) == (2, 4, False, "/proc/cpuinfo")


def test_a_dump_without_topology_says_what_it_inferred_from() -> None:
    topo = parse_dump(grep_text(machine_files(SKX, 8))).topology
    assert topo.inferred and topo.source == "inferred from the CPU count"


def test_a_cpu_in_two_packages_is_refused_naming_the_line() -> None:
    files = machine_files(SKX, 4, layout=lambda c: (c // 2, c % 2, str(c)))
    files["/sys/devices/system/cpu/cpu0/topology/package_cpus_list"] = "0-2"  # cpu2 is package 1's
    text = grep_text(files)
    expect_error(
        text, line_of(text, "/sys/devices/system/cpu/cpu0/topology/package_cpus_list"), "two packages"
    )
    header = "/proc/cpuinfo:processor\t: 1\n/proc/cpuinfo:physical id\t: 1\n"  # sysfs says package 0
    text = grep_text(machine_files(SKX, 4, layout=lambda c: (c // 2, c % 2, str(c))), header)
    expect_error(text, 2, "contradictory topology", "cpu1")


def test_a_dump_mixing_two_drivers_is_refused() -> None:
    files = machine_files(SKX, 2)
    files["/sys/devices/system/cpu/cpu1/cpuidle/driver/name"] = "acpi_idle"
    text = grep_text(files)
    expect_error(
        text, line_of(text, "/sys/devices/system/cpu/cpu1/cpuidle/driver/name"), "two cpuidle drivers"
    )
