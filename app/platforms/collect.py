"""`idlelab collect`: a machine's cpuidle table, counters and topology as the text `parse_dump` reads.

It prints what `DUMP_COMMAND` (app/platforms/sysfs.py) prints: header records (/proc/cpuinfo's
model and topology keys per processor, never `flags`, `bugs` or `microcode`; the kernel release
and command line; nohz_full and isolated CPUs; each CPU's `online` and PM QoS resume latency
limit; CONFIG_HZ from /boot/config-<release> or /proc/config.gz; the uptime, read just before
the counters so that shares can be worked out), then `grep -r .` over cpu*/cpuidle/,
cpu*/topology/ and cpuidle/ (which holds `intel_c1_demotion` where the driver has it). With an
interval it sleeps and writes a second snapshot of the uptime and counters after `SNAPSHOT_MARK`,
so that the importer takes rates over that window. It only reads sysfs and /proc, so it needs no root.
"""

from __future__ import annotations

import gzip
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path

from app.platforms.sysfs import CPUINFO_KEYS, GREP_COMMAND, SNAPSHOT_MARK

_CPUINFO_LINE = re.compile(r"^(" + "|".join(re.escape(k) for k in CPUINFO_KEYS) + r")\s*:")
_CPU_DIR = re.compile(r"^cpu\d+$")
_HZ = re.compile(r"^CONFIG_HZ=.*$", re.M)


def collect(root: Path | str = "/", *, now: datetime | None = None, interval_s: float | None = None) -> str:
    """The dump of the machine whose filesystem is at `root` (tests point it at a fake tree).

    Paths are written as the machine sees them (`/sys/...`), whatever `root` is. Files that
    cannot be read are left out, as grep leaves them out of its standard output.
    """
    base = Path(root)
    when = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    out = [f"# idlelab collect: the records of {GREP_COMMAND}\n", f"# time: {when}\n"]
    out.extend(_cpuinfo(base))
    for proc in ("proc/sys/kernel/osrelease", "proc/cmdline"):
        out.extend(_records(base, base / proc))
    cpu_root = base / "sys/devices/system/cpu"
    for name in ("nohz_full", "isolated"):
        out.extend(_records(base, cpu_root / name))
    cpus = _cpus(cpu_root)
    for cpu in cpus:
        out.extend(_records(base, cpu_root / cpu / "online"))
    for cpu in cpus:
        out.extend(_records(base, cpu_root / cpu / "power/pm_qos_resume_latency_us"))
    out.extend(_hz(base))
    out.extend(_records(base, base / "proc/uptime"))
    for sub in ("cpuidle", "topology"):
        for cpu in cpus:
            out.extend(_walk(base, cpu_root / cpu / sub))
    out.extend(_walk(base, cpu_root / "cpuidle"))
    if interval_s is not None:
        time.sleep(interval_s)
        out.append(f"{SNAPSHOT_MARK} (after {interval_s:g} s)\n")
        out.extend(_records(base, base / "proc/uptime"))
        for cpu in cpus:
            out.extend(_walk(base, cpu_root / cpu / "cpuidle"))
    return "".join(out)


def _cpus(cpu_root: Path) -> list[str]:
    try:
        # The shell sorts `cpu*` lexically (cpu0, cpu1, cpu10, ...); cpufreq/ and cpuidle/ match
        # the glob too but have no cpuidle/ or topology/ inside, so only cpuN dirs count.
        return sorted(e.name for e in os.scandir(cpu_root) if _CPU_DIR.match(e.name) and e.is_dir())
    except OSError:
        return []


def _cpuinfo(base: Path) -> list[str]:
    """Every processor's model and topology lines, as `grep -H -E` prints them."""
    text = _read(base / "proc/cpuinfo")
    if text is None:
        return []
    return [f"/proc/cpuinfo:{line}\n" for line in text.split("\n") if _CPUINFO_LINE.match(line)]


def _hz(base: Path) -> list[str]:
    """CONFIG_HZ (the tick; `getconf CLK_TCK` is USER_HZ), from the running kernel's config."""
    release = (_read(base / "proc/sys/kernel/osrelease") or "").strip()
    config = base / "boot" / f"config-{release}"
    text = _read(config) if release else None
    shown = f"/boot/config-{release}"
    if text is None:
        try:
            text = gzip.decompress((base / "proc/config.gz").read_bytes()).decode("utf-8", errors="replace")
            shown = "/proc/config.gz"
        except (OSError, EOFError, gzip.BadGzipFile):
            return []
    m = _HZ.search(text)
    return [f"{shown}:{m.group(0)}\n"] if m else []


def _walk(base: Path, directory: Path) -> list[str]:
    """`grep -r .` over a directory: every non-empty line of every regular file below it.

    Like grep -r, it does not follow symbolic links found on the way down.
    """
    out: list[str] = []
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        path = Path(entry.path)
        if entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            out.extend(_walk(base, path))
        elif entry.is_file(follow_symlinks=False):
            out.extend(_records(base, path))
    return out


def _records(base: Path, path: Path) -> list[str]:
    text = _read(path)
    if text is None:
        return []
    shown = "/" + path.relative_to(base).as_posix()
    return [f"{shown}:{line}\n" for line in text.split("\n") if line]


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None  # unreadable (or gone: a CPU went offline meanwhile); grep would say so on stderr
