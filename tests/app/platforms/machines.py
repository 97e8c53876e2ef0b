"""Hand-made sysfs trees in real machines' shapes (path -> file content), and their `grep -r .` text.

Layouts follow the kernel's ABI documents: per state name/desc/latency/residency/power/usage/time/
above/below/rejected/disable/default_status, per CPU topology IDs and lists, the global cpuidle
files. Values are chosen so the tests can work the shares out by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

# (name, desc, latency_us, residency_us, power as sysfs prints it)
SKX = [
    ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0, 4294967295),
    ("C1", "MWAIT 0x00", 2, 2, 0),
    ("C1E", "MWAIT 0x01", 10, 20, 0),
    ("C6", "MWAIT 0x20", 133, 600, 0),
]
SKX_PC6_OFF = [*SKX[:3], ("C6", "MWAIT 0x20", 92, 276, 0)]
ICX = [
    ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0, 4294967295),
    ("C1", "MWAIT 0x00", 1, 1, 0),
    ("C1E", "MWAIT 0x01", 4, 4, 0),
    ("C6", "MWAIT 0x20", 170, 600, 0),
]
CLIENT = [
    ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0, 4294967295),
    ("C1", "MWAIT 0x00", 1, 1, 0),
    ("C1E", "MWAIT 0x01", 2, 4, 0),
    ("C6", "MWAIT 0x20", 220, 600, 0),
    ("C8", "MWAIT 0x40", 280, 800, 0),
    ("C10", "MWAIT 0x60", 680, 2000, 0),
]

# Per state of every CPU (unless a test says otherwise): usage, time_us, above, below, rejected.
# With 100 s of uptime a CPU spends 1% in POLL, 4% in C1, 5% in C1E and 60% in C6.
UPTIME_S = 100.0
COUNTERS = [(1000, 1_000_000, 0, 100, 0), (2000, 4_000_000, 20, 200, 0), (500, 5_000_000, 50, 5, 0)]
COUNTERS.append((3000, 60_000_000, 300, 0, 0))

Counters = Callable[[int, int], tuple[int, int, int, int, int]]


def default_counters(cpu: int, idx: int) -> tuple[int, int, int, int, int]:
    return COUNTERS[idx] if idx < len(COUNTERS) else (10, 1000, 1, 1, 0)


def skx_layout(cpu: int) -> tuple[int, int, str]:
    """96 CPUs, 2 sockets of 24 cores, 2 threads: CPUs 0-47 first threads, 48-95 their siblings.

    core_id is sparse (0-5, 8-13, 16-21, 24-29) and restarts in each package, as on real Xeons.
    """
    first = cpu % 48
    package, index = divmod(first, 24)
    core_id = (index // 6) * 8 + index % 6
    return package, core_id, f"{first},{first + 48}"


def machine_files(
    states: list[tuple[str, str, int, int, int]],
    n_cpus: int,
    *,
    layout: Callable[[int], tuple[int, int, str]] | None = None,
    counters: Counters = default_counters,
    disabled: Mapping[tuple[int, int], int] | None = None,
    driver: str = "intel_idle",
    governor: str = "menu",
) -> dict[str, str]:
    """The files `grep -r .` reads, in the order of DUMP_COMMAND's globs (cpu0, cpu1, cpu10, ...)."""
    files: dict[str, str] = {}
    cpus = sorted(range(n_cpus), key=str)  # the shell sorts globs lexically
    for cpu in cpus:
        for idx, (name, desc, lat, res, power) in enumerate(states):
            d = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{idx}/"
            usage, time_us, above, below, rejected = counters(cpu, idx)
            files[d + "name"] = f"{name}\n"
            files[d + "desc"] = f"{desc}\n"
            files[d + "latency"] = f"{lat}\n"
            files[d + "residency"] = f"{res}\n"
            files[d + "power"] = f"{power}\n"
            files[d + "usage"] = f"{usage}\n"
            files[d + "time"] = f"{time_us}\n"
            files[d + "above"] = f"{above}\n"
            files[d + "below"] = f"{below}\n"
            files[d + "rejected"] = f"{rejected}\n"
            files[d + "disable"] = f"{(disabled or {}).get((cpu, idx), 0)}\n"
            files[d + "default_status"] = "enabled\n"
    if layout is not None:
        for cpu in cpus:
            package, core_id, siblings = layout(cpu)
            d = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
            files[d + "physical_package_id"] = f"{package}\n"
            files[d + "die_id"] = "0\n"
            files[d + "core_id"] = f"{core_id}\n"
            files[d + "thread_siblings_list"] = f"{siblings}\n"
            files[d + "core_cpus_list"] = f"{siblings}\n"
            files[d + "thread_siblings"] = "00000000,00000000\n"  # masks: the importer reads the lists
    g = "/sys/devices/system/cpu/cpuidle/"
    files[g + "available_governors"] = "ladder menu teo \n"  # sysfs ends this one with a blank
    files[g + "current_driver"] = f"{driver}\n"
    files[g + "current_governor"] = f"{governor}\n"
    files[g + "current_governor_ro"] = f"{governor}\n"
    return files


HEADER = (
    "# idlelab collect\n"
    "# time: 2026-12-01T11:00:00+00:00\n"
    "/proc/cpuinfo:vendor_id\t: GenuineIntel\n"
    "/proc/cpuinfo:cpu family\t: 6\n"
    "/proc/cpuinfo:model\t\t: 85\n"
    "/proc/cpuinfo:model name\t: Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz\n"
    "/proc/sys/kernel/osrelease:6.8.0-45-generic\n"
    f"/proc/uptime:{UPTIME_S:.2f} 9000.00\n"
)


def grep_text(files: Mapping[str, str], header: str = "") -> str:
    """What `grep -r .` prints for these files: one `path:line` per non-empty line."""
    out = [header] if header else []
    for path, content in files.items():
        out.extend(f"{path}:{line}\n" for line in content.split("\n") if line)
    return "".join(out)


def skx96(header: str = HEADER) -> str:
    """The 96-CPU, 2-socket SMT Cascade Lake the tests use most, with the collect header."""
    return grep_text(machine_files(SKX, 96, layout=skx_layout), header)
