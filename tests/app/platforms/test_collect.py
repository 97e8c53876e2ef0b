"""`idlelab collect` against fake sysfs and /proc trees: the exact text, and collect -> parse round trips."""

from __future__ import annotations

import gzip
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.platforms.collect import collect
from app.platforms.machine import counter_summary
from app.platforms.sysfs import SysfsDump, parse_dump
from tests.app.platforms.machines import HEADER, ICX, SKX, grep_text, machine_files, skx_layout

NOW = datetime(2026, 12, 1, 11, 0, 0, tzinfo=UTC)
CPUINFO = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz\nstepping\t: 7\nmicrocode\t: 0x5003604\n"
    "physical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu vme de\nbugs\t\t: spectre_v1\n\n"
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
    files["/proc/cmdline"] = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 nohz_full=2-3\n"
    files["/sys/devices/system/cpu/nohz_full"] = "2-3\n"
    files["/sys/devices/system/cpu/isolated"] = "\n"  # none: grep prints no line
    files["/sys/devices/system/cpu/cpu0/power/pm_qos_resume_latency_us"] = "0\n"
    files["/boot/config-6.8.0-45-generic"] = "CONFIG_NO_HZ_FULL=y\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"
    make_tree(tmp_path, files)
    (tmp_path / "sys/devices/system/cpu/cpufreq/policy0").mkdir(parents=True)  # matches cpu*, ignored
    (tmp_path / "sys/devices/system/cpu/cpu0/cpuidle/state0/empty").write_text("")  # no line, as with grep
    assert (
        collect(tmp_path, now=NOW)
        == (
            "# idlelab collect: the records of grep -r . /sys/devices/system/cpu/cpu*/cpuidle/ "
            "/sys/devices/system/cpu/cpu*/topology/ /sys/devices/system/cpu/cpuidle/\n"
            "# time: 2026-12-01T11:00:00+00:00\n"
            # Every processor's model and topology keys; never flags, bugs or microcode.
            + "".join(
                f"/proc/cpuinfo:processor\t: {n}\n/proc/cpuinfo:vendor_id\t: GenuineIntel\n"
                "/proc/cpuinfo:cpu family\t: 6\n/proc/cpuinfo:model\t\t: 85\n"
                "/proc/cpuinfo:model name\t: Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz\n"
                + ("/proc/cpuinfo:physical id\t: 0\n/proc/cpuinfo:core id\t\t: 0\n" if n == 0 else "")
                for n in (0, 1)
            )
            + "/proc/sys/kernel/osrelease:6.8.0-45-generic\n"
            "/proc/cmdline:BOOT_IMAGE=/vmlinuz root=/dev/sda1 nohz_full=2-3\n"
            "/sys/devices/system/cpu/nohz_full:2-3\n"
            "/sys/devices/system/cpu/cpu0/power/pm_qos_resume_latency_us:0\n"
            "/boot/config-6.8.0-45-generic:CONFIG_HZ=250\n"
            "/proc/uptime:100.00 9000.00\n"
            "/sys/devices/system/cpu/cpu0/cpuidle/state0/latency:0\n"
            "/sys/devices/system/cpu/cpu0/cpuidle/state0/name:POLL\n"
            "/sys/devices/system/cpu/cpu0/topology/core_id:0\n"
            "/sys/devices/system/cpu/cpuidle/available_governors:menu \n"  # the trailing blank is kept
        )
    )


def test_round_trip_skx_96(tmp_path: Path) -> None:
    files = machine_files(SKX, 96, layout=skx_layout)
    make_tree(tmp_path, files)
    collected = parse_dump(collect(tmp_path, now=NOW))

    # The same machine as the hand-made grep text with the same header: equal in every field but
    # the line numbers (collect's header has more lines).
    def same(dump: SysfsDump) -> dict[str, object]:
        return dump.model_dump(exclude={"states": {"__all__": {"line"}}})

    assert same(collected) == same(parse_dump(grep_text(files, HEADER)))
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


def test_an_interval_gives_counters_over_the_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = machine_files(SKX, 2, layout=lambda c: (0, c, str(c)))
    make_tree(tmp_path, files)
    usage = tmp_path / "sys/devices/system/cpu/cpu0/cpuidle/state3/usage"

    def sleep(seconds: float) -> None:  # the machine idles meanwhile: 30 more C6 entries, 10 s later
        assert seconds == 10
        usage.write_text("3030\n")
        (tmp_path / "proc/uptime").write_text("110.00 9000.00\n")

    monkeypatch.setattr("app.platforms.collect.time.sleep", sleep)
    text = collect(tmp_path, now=NOW, interval_s=10)
    assert "# snapshot: 2 (after 10 s)" in text
    dump = parse_dump(text)
    assert dump.window_s == 10.0
    assert [c.counters[3].usage for c in dump.cpus] == [30, 0]  # type: ignore[union-attr]
    summary = counter_summary(dump)
    assert summary.window_s == 10.0 and "window" in summary.note
    # One snapshot still works: counters since boot, per idle second, and said so.
    single = parse_dump(collect(tmp_path, now=NOW))
    assert single.window_s is None and any("one snapshot" in n for n in single.notes)
    assert counter_summary(single).entries_per_idle_s is not None


def test_the_twin_records_are_read(tmp_path: Path) -> None:
    files = machine_files(SKX, 2, layout=lambda c: (0, c, str(c)))
    files["/proc/cmdline"] = "root=/dev/sda1 nohz_full=1\n"
    files["/sys/devices/system/cpu/nohz_full"] = "1\n"
    files["/sys/devices/system/cpu/cpu1/online"] = "1\n"
    files["/sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us"] = "20\n"
    files["/sys/devices/system/cpu/cpuidle/intel_c1_demotion"] = "1\n"
    make_tree(tmp_path, files)
    config = gzip.compress(b"CONFIG_HZ_1000=y\nCONFIG_HZ=1000\n")
    (tmp_path / "proc/config.gz").write_bytes(config)  # no /boot/config-<release>: the kernel's own
    dump = parse_dump(collect(tmp_path, now=NOW))
    assert (dump.cmdline, dump.nohz_full, dump.hz, dump.intel_c1_demotion) == (
        "root=/dev/sda1 nohz_full=1",
        "1",
        1000,
        "1",
    )
    assert dump.pm_qos_resume_latency_us == {1: "20"}
