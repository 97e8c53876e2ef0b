"""`idlelab collect`: a machine's cpuidle table, counters and topology as the text `parse_dump` reads.

It prints what `DUMP_COMMAND` (app/platforms/sysfs.py) prints: header records from /proc (the
first processor's vendor, family, model and model name; the kernel release; the uptime, read
just before the counters so that shares can be worked out), then `grep -r .` over
cpu*/cpuidle/, cpu*/topology/ and cpuidle/. It only reads sysfs and /proc, so it needs no root.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

from app.platforms.sysfs import GREP_COMMAND

_CPUINFO_LINE = re.compile(r"^(vendor_id|cpu family|model|model name)\s*:")
_CPU_DIR = re.compile(r"^cpu\d+$")


def collect(root: Path | str = "/", *, now: datetime | None = None) -> str:
    """The dump of the machine whose filesystem is at `root` (tests point it at a fake tree).

    Paths are written as the machine sees them (`/sys/...`), whatever `root` is. Files that
    cannot be read are left out, as grep leaves them out of its standard output.
    """
    base = Path(root)
    when = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    out = [f"# idlelab collect: the records of {GREP_COMMAND}\n", f"# time: {when}\n"]
    out.extend(_cpuinfo(base))
    for proc in ("proc/sys/kernel/osrelease", "proc/uptime"):
        out.extend(_records(base, base / proc))
    cpu_root = base / "sys/devices/system/cpu"
    try:
        # The shell sorts `cpu*` lexically (cpu0, cpu1, cpu10, ...); cpufreq/ and cpuidle/ match
        # the glob too but have no cpuidle/ or topology/ inside, so only cpuN dirs count.
        cpus = sorted(e.name for e in os.scandir(cpu_root) if _CPU_DIR.match(e.name) and e.is_dir())
    except OSError:
        cpus = []
    for sub in ("cpuidle", "topology"):
        for cpu in cpus:
            out.extend(_walk(base, cpu_root / cpu / sub))
    out.extend(_walk(base, cpu_root / "cpuidle"))
    return "".join(out)


def _cpuinfo(base: Path) -> list[str]:
    """The first processor's identity lines, as `grep -H -m4` prints them."""
    text = _read(base / "proc/cpuinfo")
    if text is None:
        return []
    out: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            if out:
                break  # the end of the first processor's block
            continue
        if _CPUINFO_LINE.match(line):
            out.append(f"/proc/cpuinfo:{line}\n")
    return out


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
