"""`idlelab collect` against fake sysfs and /proc trees: the exact text, and collect -> parse round trips."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from app.platforms.collect import collect
from app.platforms.sysfs import parse_dump
from tests.app.platforms.machines import HEADER, ICX, SKX, grep_text, machine_files, skx_layout

NOW = datetime(2026, 12, 1, 11, 0, 0, tzinfo=UTC)
CPUINFO = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz\nstepping\t: 7\nflags\t\t: fpu vme de\n\n"
    "processor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz\n\n"
)


def make_tree(root: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    proc = {
        "/proc/cpuinfo": CPUINFO,
        "/proc/sys/kernel/osrelease": "6.8.0-45-generic\n",
        "/proc/uptime": "100.00 9000.00\n",
    }
    for path, content in proc.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)


def test_the_exact_text_of_a_tiny_machine(tmp_path: Path) -> None:
    files = {
        "/sys/devices/system/cpu/cpu0/cpuidle/state0/name": "POLL\n",
        "/sys/devices/system/cpu/cpu0/cpuidle/state0/latency": "0\n",
        "/sys/devices/system/cpu/cpu0/topology/core_id": "0\n",
        "/sys/devices/system/cpu/cpuidle/available_governors": "menu \n",
    }
    make_tree(tmp_path, files)
    (tmp_path / "sys/devices/system/cpu/cpufreq/policy0").mkdir(parents=True)  # matches cpu*, ignored
    (tmp_path / "sys/devices/system/cpu/cpu0/cpuidle/state0/empty").write_text("")  # no line, as with grep
    assert collect(tmp_path, now=NOW) == (
        "# idlelab collect: the records of grep -r . /sys/devices/system/cpu/cpu*/cpuidle/ "
        "/sys/devices/system/cpu/cpu*/topology/ /sys/devices/system/cpu/cpuidle/\n"
        "# time: 2026-12-01T11:00:00+00:00\n"
        "/proc/cpuinfo:vendor_id\t: GenuineIntel\n"
        "/proc/cpuinfo:cpu family\t: 6\n"
        "/proc/cpuinfo:model\t\t: 85\n"
        "/proc/cpuinfo:model name\t: Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz\n"
        "/proc/sys/kernel/osrelease:6.8.0-45-generic\n"
        "/proc/uptime:100.00 9000.00\n"
        "/sys/devices/system/cpu/cpu0/cpuidle/state0/latency:0\n"
        "/sys/devices/system/cpu/cpu0/cpuidle/state0/name:POLL\n"
        "/sys/devices/system/cpu/cpu0/topology/core_id:0\n"
        "/sys/devices/system/cpu/cpuidle/available_governors:menu \n"  # the trailing blank is kept
    )


def test_round_trip_skx_96(tmp_path: Path) -> None:
    files = machine_files(SKX, 96, layout=skx_layout)
    make_tree(tmp_path, files)
    collected = parse_dump(collect(tmp_path, now=NOW))
    # The same machine as the hand-made grep text with the same header: equal in every field.
    assert collected == parse_dump(grep_text(files, HEADER))
    assert collected.topology.sockets == 2 and collected.uptime_s == 100.0
    assert collected.collected_at == "2026-12-01T11:00:00+00:00"


def test_round_trip_without_topology_or_proc(tmp_path: Path) -> None:
    files = machine_files(ICX, 4)
    for path, content in files.items():
        p = tmp_path / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    dump = parse_dump(collect(tmp_path, now=NOW))
    assert dump.topology.inferred and dump.uptime_s is None and dump.kernel is None
    assert dump.state_names() == ["POLL", "C1", "C1E", "C6"]


def test_symlinks_below_are_not_followed(tmp_path: Path) -> None:
    files = machine_files(SKX, 1)
    make_tree(tmp_path, files)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "name").write_text("NOT-A-STATE\n")
    os.symlink(elsewhere, tmp_path / "sys/devices/system/cpu/cpu0/cpuidle/state9")
    text = collect(tmp_path, now=NOW)
    assert "NOT-A-STATE" not in text
    assert parse_dump(text).state_names() == ["POLL", "C1", "C1E", "C6"]


def test_an_empty_root_gives_only_the_header(tmp_path: Path) -> None:
    text = collect(tmp_path, now=NOW)
    assert [ln.split(":")[0] for ln in text.splitlines()] == ["# idlelab collect", "# time"]
