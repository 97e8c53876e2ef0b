"""A real machine's cpuidle table, counters and topology, read from a sysfs dump (`grep -r .` output).

The dump is what `DUMP_COMMAND` prints (one `path:value` record per line, as `grep -r .` writes
them), optionally preceded by the header lines `idlelab collect` adds (`/proc/cpuinfo`,
`/proc/sys/kernel/osrelease`, `/proc/uptime` records and a `# time:` comment). Anything else is
refused with a `DumpError` that names the line and the reason, so the API can answer 422.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import BaseModel, ConfigDict

# Bounds: by CPUs and states, never by a line count (a 1,024-CPU dump with topology is ~3.5 MB).
MAX_CPUS = 1024
MAX_STATES = 32
# The highest CPU number x86 Linux can have (CONFIG_NR_CPUS is at most 8192): a CPU list such as
# "0-4000000000" is refused before it becomes a list.
MAX_CPU_NUMBER = 8191

GREP_COMMAND = (
    "grep -r . /sys/devices/system/cpu/cpu*/cpuidle/ /sys/devices/system/cpu/cpu*/topology/ "
    "/sys/devices/system/cpu/cpuidle/"
)
# /proc/cpuinfo's keys a dump keeps: the model and the topology, never `flags`, `bugs` or
# `microcode` (a shared machine's vulnerability state).
CPUINFO_KEYS = (
    "processor", "vendor_id", "cpu family", "model", "model name",
    "physical id", "siblings", "core id", "cpu cores",
)  # fmt: skip
# What a twin needs beside the table and counters (what `idlelab collect` writes too): the kernel
# command line, CONFIG_HZ, nohz_full and isolated CPUs, online CPUs, per-CPU PM QoS limits.
TWIN_RECORDS = (
    "grep -H . /proc/sys/kernel/osrelease /proc/cmdline /sys/devices/system/cpu/nohz_full "
    "/sys/devices/system/cpu/isolated /sys/devices/system/cpu/cpu*/online "
    "/sys/devices/system/cpu/cpu*/power/pm_qos_resume_latency_us; "
    "{ grep -H '^CONFIG_HZ=' /boot/config-$(uname -r) || zgrep -H '^CONFIG_HZ=' /proc/config.gz; } "
    "2>/dev/null; "
    "grep -H . /proc/uptime"
)
# The same file as `idlelab collect` writes, for a machine without idlelab (header lines first).
DUMP_COMMAND = (
    "{ grep -H -E '^(" + "|".join(CPUINFO_KEYS) + ")[[:space:]]*:' /proc/cpuinfo; "
    + TWIN_RECORDS + "; " + GREP_COMMAND + "; } > machine.txt"
)  # fmt: skip

# sysfs prints `power` unsigned: POLL's -1 reads 4294967295; 0 means unknown too.
_POWER_UNKNOWN = {0, 4294967295}
_STATE_TABLE_FIELDS = ("name", "desc", "latency", "residency", "power", "default_status")
_STATE_COUNTER_FIELDS = ("usage", "time", "above", "below", "rejected")
_STATE_FIELDS = {*_STATE_TABLE_FIELDS, *_STATE_COUNTER_FIELDS, "disable", "s2idle/usage", "s2idle/time"}
_TOPOLOGY_INT_FIELDS = ("physical_package_id", "die_id", "cluster_id", "core_id")
_TOPOLOGY_LIST_FIELDS = ("thread_siblings_list", "core_cpus_list", "core_siblings_list", "package_cpus_list")
_GLOBAL_FIELDS = (
    "available_governors", "current_driver", "current_governor", "current_governor_ro", "intel_c1_demotion"
)  # fmt: skip
_SYSTEM_LINE = re.compile(r"^/sys/devices/system/cpu/(nohz_full|isolated)$")
_PM_QOS_LINE = re.compile(r"^(?:/sys/devices/system/cpu/)?cpu(\d{1,6})/power/pm_qos_resume_latency_us$")
_HZ_LINE = re.compile(r"^(/boot/config-[^:/]{1,200}|/proc/config\.gz)$")
# `idlelab collect --interval` writes a second snapshot of the counters after this line.
SNAPSHOT_MARK = "# snapshot: 2"
_CPUINFO_KEYS = {"vendor_id", "cpu family", "model", "model name"}
# Per processor: its package and core, and the counts the first processor states for all.
_CPUINFO_TOPOLOGY_KEYS = {"physical id", "core id", "siblings", "cpu cores"}
# A gzip body is inflated up to this much: a 1,024-CPU dump of two snapshots fits.
MAX_INFLATED_BYTES = 32 * 1024 * 1024

# Digit runs are bounded so that a hostile line cannot ask int() for a million-digit number.
_CPU_LINE = re.compile(r"^(?:/sys/devices/system/cpu/)?cpu(\d{1,6})/(cpuidle|topology)/(.+)$")
_ONLINE_LINE = re.compile(r"^(?:/sys/devices/system/cpu/)?cpu(\d{1,6})/online$")
_GLOBAL_LINE = re.compile(r"^(?:/sys/devices/system/cpu/)?cpuidle/([^/]+)$")
_STATE_PATH = re.compile(r"^state(\d{1,6})/(.+)$")
_MWAIT = re.compile(r"MWAIT\s+(0x[0-9a-fA-F]+)")
_CPU_LIST = re.compile(r"^\d{1,6}(-\d{1,6})?(,\d{1,6}(-\d{1,6})?)*$")


class DumpError(ValueError):
    """The dump is not a usable sysfs cpuidle dump; `line` (1-based) is where, None for the whole file."""

    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(f"line {line}: {reason}" if line is not None else reason)
        self.line = line
        self.reason = reason


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DumpState(_Model):
    """One cpuidle state as the dump shows it (the same on every CPU, or the dump is refused)."""

    index: int
    name: str
    desc: str | None = None
    mwait_hint: str | None = None  # from `desc`, e.g. "MWAIT 0x20" -> "0x20"
    latency_us: int | None = None  # exit latency, as the governor sees it
    residency_us: int | None = None  # target residency
    power_mw: int | None = None  # None: the driver says unknown (0, or POLL's -1)
    default_status: str | None = None  # "enabled"/"disabled", v5.6+
    disabled_cpus: list[int] = []  # CPUs whose `disable` (the user's bit) is 1
    cpus_reporting_disable: int = 0
    disabled: bool = False  # by the user on every CPU that reports `disable`
    line: int  # the line of the state's first record, for errors found later


class StateCounters(_Model):
    """One CPU's counters of one state, cumulative since its cpuidle device registered (None: not shown)."""

    usage: int | None = None
    time_us: int | None = None
    above: int | None = None
    below: int | None = None
    rejected: int | None = None


class CpuRecord(_Model):
    """One CPU: its topology IDs (None when the dump has none, e.g. offline CPUs) and its counters."""

    cpu: int
    package_id: int | None = None
    die_id: int | None = None
    cluster_id: int | None = None
    core_id: int | None = None
    online: bool = True  # `cpuN/online`, or (without it) whether the CPU has topology records
    thread_siblings: list[int] | None = None
    counters: list[StateCounters | None]  # by state index; None: the CPU shows no such state


class Topology(_Model):
    """Sockets, cores and threads, from the topology records or, without them, inferred (and said so)."""

    cpus: int  # CPUs in the dump
    sockets: int
    cores: int
    cores_per_socket: int
    threads_per_core: int
    inferred: bool
    note: str = ""
    online_cpus: int | None = None  # None in machines stored before it was kept: `cpus`
    cores_per_module: int | None = None  # cores sharing a cluster_id, where the dump has them
    source: str = ""  # "sysfs topology", "/proc/cpuinfo", or what it was inferred from


class SysfsDump(_Model):
    """Everything a dump says about a machine."""

    states: list[DumpState]
    cpus: list[CpuRecord]
    topology: Topology
    driver: str | None = None
    governor: str | None = None
    available_governors: list[str] = []
    model_name: str | None = None
    vendor: str | None = None
    cpu_family: int | None = None
    cpu_model: int | None = None
    kernel: str | None = None
    uptime_s: float | None = None
    collected_at: str | None = None
    # What a twin needs (DESIGN 7 "Twins"); None where the dump does not say.
    cmdline: str | None = None
    hz: int | None = None  # CONFIG_HZ
    nohz_full: str | None = None  # a CPU list, or "(null)" as the kernel prints none
    isolated: str | None = None
    pm_qos_resume_latency_us: dict[int, str] = {}  # per CPU: "0" (no limit), "n/a", or microseconds
    intel_c1_demotion: str | None = None
    window_s: float | None = None  # two snapshots: the counters are their difference over this window
    notes: list[str] = []

    def state_names(self) -> list[str]:
        return [s.name for s in self.states]


# ----------------------------------------------------------------------------------------- parsing


def _inflate(data: bytes) -> bytes:
    """A gzip file's content (what `gzip machine.txt` makes), bounded against a decompression bomb."""
    out = zlib.decompressobj(wbits=31)
    try:
        text = out.decompress(data, MAX_INFLATED_BYTES)
    except zlib.error as err:
        raise DumpError(None, f"a damaged gzip body: {err}") from None
    if out.unconsumed_tail:
        raise DumpError(None, f"the gzip body inflates to more than {MAX_INFLATED_BYTES // 2**20} MiB")
    return text


def _text_lines(data: bytes | str) -> list[str]:
    if isinstance(data, bytes) and data[:2] == b"\x1f\x8b":
        data = _inflate(data)
    if isinstance(data, bytes):
        nul = data.find(b"\0")
        if nul >= 0:
            raise DumpError(data.count(b"\n", 0, nul) + 1, "binary data (a NUL byte): not a text dump")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DumpError(data.count(b"\n", 0, err.start) + 1, "not UTF-8 text") from None
    else:
        text = data
        nul = text.find("\0")
        if nul >= 0:
            raise DumpError(text.count("\n", 0, nul) + 1, "binary data (a NUL byte): not a text dump")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last record
    # A file that went through a Windows editor: sysfs values never end in a carriage return.
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _int(value: str, line: int, what: str, *, signed: bool = False) -> int:
    v = value.strip()
    if not re.fullmatch(r"-?\d{1,20}" if signed else r"\d{1,20}", v):
        kind = "an integer" if signed else "a non-negative integer"
        raise DumpError(line, f"{what}: expected {kind}, got {value!r}")
    return int(v)


def _cpu_list(value: str, line: int, what: str) -> list[int]:
    v = value.strip()
    if not _CPU_LIST.match(v):
        raise DumpError(line, f"{what}: expected a CPU list such as '0-39,160-199', got {value!r}")
    parts = v.split(",")
    if len(parts) > MAX_CPUS:  # each part may span thousands of CPUs: bound the work, not just the length
        raise DumpError(line, f"{what}: {len(parts)} ranges, more than {MAX_CPUS}")
    out: list[int] = []
    for part in parts:
        lo_s, _, hi_s = part.partition("-")
        lo, hi = int(lo_s), int(hi_s or lo_s)
        if hi < lo or hi > MAX_CPU_NUMBER:
            raise DumpError(line, f"{what}: bad CPU range {part!r} (CPU numbers go up to {MAX_CPU_NUMBER})")
        out.extend(range(lo, hi + 1))
    return sorted(set(out))


class _Field:
    """A single-line sysfs file's value and the line it came from."""

    __slots__ = ("value", "line")

    def __init__(self, value: str, line: int) -> None:
        self.value = value
        self.line = line


def _put(into: dict[str, _Field], key: str, value: str, line: int, where: str) -> None:
    """Record a file's value; the same file twice must say the same thing."""
    old = into.get(key)
    if old is None:
        into[key] = _Field(value, line)
    elif old.value != value:
        raise DumpError(
            line, f"contradictory values: {where} is {value!r} here and {old.value!r} on line {old.line}"
        )


class _Raw:
    """The records of a dump, grouped by what they describe, before any cross-checks."""

    def __init__(self) -> None:
        self.states: dict[tuple[int, int], dict[str, _Field]] = {}
        self.state_first_line: dict[tuple[int, int], int] = {}
        self.topology: dict[int, dict[str, _Field]] = {}
        self.cpu_driver: dict[str, _Field] = {}
        self.cpu_first_line: dict[int, int] = {}
        self.globals: dict[str, _Field] = {}
        self.cpuinfo: dict[str, _Field] = {}
        self.cpuinfo_cpus: dict[int, dict[str, _Field]] = {}  # per processor: its topology keys
        self.cpuinfo_processor: int | None = None  # the processor whose keys come next
        self.online: dict[str, _Field] = {}
        self.proc: dict[str, _Field] = {}
        self.collected_at: str | None = None
        self.grep_errors: list[int] = []


def _read_records(lines: list[str], first_line: int = 1) -> _Raw:
    raw = _Raw()
    for n, text in enumerate(lines, start=first_line):
        if not text.strip():
            continue  # grep prints none; a hand-edited file may have some
        if text.startswith("#"):
            m = re.match(r"#\s*time:\s*(.+?)\s*$", text)
            if m:
                try:
                    datetime.fromisoformat(m.group(1))
                except ValueError:
                    raise DumpError(
                        n, f"time: expected an ISO 8601 date and time, got {m.group(1)!r}"
                    ) from None
                raw.collected_at = m.group(1)
            continue
        if text.startswith("grep: "):
            raw.grep_errors.append(n)  # an unreadable path, reported by grep on stderr (2>&1)
            continue
        path, sep, value = text.partition(":")
        if not sep:
            raise DumpError(n, "truncated or foreign line: no ':' after a path")
        if value == "":
            raise DumpError(n, f"truncated line: {path} has no value (grep -r . prints no empty values)")
        _read_record(raw, n, path, value)
    return raw


def _read_record(raw: _Raw, n: int, path: str, value: str) -> None:
    if _HZ_LINE.match(path):
        m = re.fullmatch(r"CONFIG_HZ=(\d{1,5})", value.strip())
        if not m:
            raise DumpError(n, f"{path}: expected CONFIG_HZ=<number>, got {value!r}")
        _put(raw.proc, "CONFIG_HZ", m.group(1), n, "CONFIG_HZ")
        return
    if path.startswith("/proc/"):
        _read_proc(raw, n, path, value)
        return
    m = _SYSTEM_LINE.match(path) or _PM_QOS_LINE.match(path)
    if m:
        key = path.removeprefix("/sys/devices/system/cpu/")
        _put(raw.proc, key, value.strip(), n, path)
        return
    m = _CPU_LINE.match(path)
    if m:
        cpu = int(m.group(1))
        if cpu > MAX_CPU_NUMBER:
            raise DumpError(n, f"cpu{cpu}: CPU numbers go up to {MAX_CPU_NUMBER}")
        if cpu not in raw.cpu_first_line:
            if len(raw.cpu_first_line) >= MAX_CPUS:
                raise DumpError(
                    n, f"too many CPUs: cpu{cpu} is CPU number {MAX_CPUS + 1}; at most {MAX_CPUS}"
                )
            raw.cpu_first_line[cpu] = n
        group, rest = m.group(2), m.group(3)
        if group == "topology":
            _read_topology(raw, n, cpu, rest, value)
        else:
            _read_cpuidle(raw, n, cpu, rest, value)
        return
    m = _ONLINE_LINE.match(path)
    if m:
        cpu = int(m.group(1))
        if _int(value, n, f"cpu{cpu}/online") not in (0, 1):
            raise DumpError(n, f"cpu{cpu}/online: expected 0 or 1, got {value!r}")
        _put(raw.online, str(cpu), value.strip(), n, f"cpu{cpu}/online")
        raw.cpu_first_line.setdefault(cpu, n)
        return
    m = _GLOBAL_LINE.match(path)
    if m:
        if m.group(1) in _GLOBAL_FIELDS:
            _put(raw.globals, m.group(1), value, n, f"cpuidle/{m.group(1)}")
        return  # another global file: newer kernels may add some
    raise DumpError(n, f"not a record of a sysfs cpuidle dump: {path[:80]!r}")


def _read_proc(raw: _Raw, n: int, path: str, value: str) -> None:
    if path == "/proc/cpuinfo":
        key, sep, val = value.partition(":")
        key = key.strip()
        if not sep:
            raise DumpError(n, f"/proc/cpuinfo: expected 'key : value', got {value!r}")
        if key == "processor":
            raw.cpuinfo_processor = _int(val, n, "/proc/cpuinfo processor")
            if raw.cpuinfo_processor > MAX_CPU_NUMBER:
                raise DumpError(n, f"/proc/cpuinfo processor: CPU numbers go up to {MAX_CPU_NUMBER}")
        elif key in _CPUINFO_TOPOLOGY_KEYS and raw.cpuinfo_processor is not None:
            where = f"/proc/cpuinfo processor {raw.cpuinfo_processor} {key}"
            _put(raw.cpuinfo_cpus.setdefault(raw.cpuinfo_processor, {}), key, val.strip(), n, where)
        if key in _CPUINFO_KEYS and key not in raw.cpuinfo:
            raw.cpuinfo[key] = _Field(val.strip(), n)  # the first processor's; later ones repeat it
        return
    if path in ("/proc/uptime", "/proc/sys/kernel/osrelease", "/proc/cmdline"):
        _put(raw.proc, path, value, n, path)
        return
    raise DumpError(n, f"not a record of a sysfs cpuidle dump: {path[:80]!r}")


def _read_cpuidle(raw: _Raw, n: int, cpu: int, rest: str, value: str) -> None:
    if rest == "driver/name":
        _put(raw.cpu_driver, str(cpu), value, n, f"cpu{cpu}/cpuidle/driver/name")
        return
    m = _STATE_PATH.match(rest)
    if not m:
        return  # another per-CPU cpuidle file
    idx = int(m.group(1))
    if idx >= MAX_STATES:
        raise DumpError(
            n, f"too many states: state{idx}; at most {MAX_STATES} (state0..state{MAX_STATES - 1})"
        )
    key = (cpu, idx)
    fields = raw.states.setdefault(key, {})
    raw.state_first_line.setdefault(key, n)
    name = m.group(2)
    if name in _STATE_FIELDS:
        _put(fields, name, value, n, f"cpu{cpu}/cpuidle/state{idx}/{name}")


def _read_topology(raw: _Raw, n: int, cpu: int, rest: str, value: str) -> None:
    if rest in _TOPOLOGY_INT_FIELDS or rest in _TOPOLOGY_LIST_FIELDS:
        _put(raw.topology.setdefault(cpu, {}), rest, value, n, f"cpu{cpu}/topology/{rest}")


def parse_dump(data: bytes | str) -> SysfsDump:
    """Parse a sysfs dump; raise `DumpError(line, reason)` on anything that is not one."""
    lines = _text_lines(data)
    if not any(ln.strip() for ln in lines):
        raise DumpError(None, "the file is empty")
    mark = next((i for i, ln in enumerate(lines) if ln.startswith(SNAPSHOT_MARK)), None)
    raw = _read_records(lines if mark is None else lines[:mark])
    later = None if mark is None else _read_records(lines[mark + 1 :], first_line=mark + 2)
    # Most KVM guests have no cpuidle driver: no states, and current_driver says "none".
    no_driver = "current_driver" in raw.globals and raw.globals["current_driver"].value.strip() == "none"
    if not raw.states and not (no_driver and raw.cpu_first_line):
        raise DumpError(
            None,
            "no cpuidle state records (cpuN/cpuidle/stateK/...): cpuidle disabled, or another file?"
            + (
                " (current_driver none, but no CPU records either: add .../cpu*/topology/)"
                if no_driver
                else ""
            ),
        )
    states = _build_states(raw)
    cpus = _build_cpus(raw, len(states))
    topology, topo_notes = _build_topology(raw, cpus)
    notes = list(topo_notes)
    uptime_s, window_s = _uptime(raw), None
    if later is not None:
        assert mark is not None
        cpus, uptime_s, window_s = _over_window(raw, later, cpus, len(states), mark + 1)
        notes.append(f"counters over the {window_s:g} s between the dump's two snapshots")
    else:
        notes.append(
            "one snapshot: counters since boot (figures per idle second; collect --interval gives a window)"
        )
    if raw.grep_errors:
        notes.append(
            f"{len(raw.grep_errors)} 'grep:' error line(s) skipped (first on line {raw.grep_errors[0]})"
        )
    missing = [c.cpu for c in cpus if any(x is None for x in c.counters)]
    if missing:
        notes.append(f"{len(missing)} CPU(s) show fewer states than the table: {_ranges(missing)}")
    return SysfsDump(
        states=states,
        cpus=cpus,
        topology=topology,
        driver=_driver(raw),
        governor=_governor(raw),
        available_governors=raw.globals["available_governors"].value.split()
        if "available_governors" in raw.globals
        else [],
        model_name=_cpuinfo(raw, "model name"),
        vendor=_cpuinfo(raw, "vendor_id"),
        cpu_family=_cpuinfo_int(raw, "cpu family"),
        cpu_model=_cpuinfo_int(raw, "model"),
        kernel=raw.proc["/proc/sys/kernel/osrelease"].value.strip()
        if "/proc/sys/kernel/osrelease" in raw.proc
        else None,
        uptime_s=uptime_s,
        collected_at=raw.collected_at,
        cmdline=_proc(raw, "/proc/cmdline"),
        hz=int(raw.proc["CONFIG_HZ"].value) if "CONFIG_HZ" in raw.proc else None,
        nohz_full=_proc(raw, "nohz_full"),
        isolated=_proc(raw, "isolated"),
        pm_qos_resume_latency_us={
            int(k.split("/")[0][3:]): f.value
            for k, f in raw.proc.items()
            if k.endswith("pm_qos_resume_latency_us")
        },
        intel_c1_demotion=raw.globals["intel_c1_demotion"].value.strip()
        if "intel_c1_demotion" in raw.globals
        else None,
        window_s=window_s,
        notes=notes,
    )


def _proc(raw: _Raw, key: str) -> str | None:
    f = raw.proc.get(key)
    return f.value.strip() if f is not None else None


def _over_window(
    raw: _Raw, later: _Raw, cpus: list[CpuRecord], n_states: int, mark_line: int
) -> tuple[list[CpuRecord], float, float]:
    """Each CPU's counters as the second snapshot's minus the first's, and the window's length."""
    first_up, second_up = _uptime(raw), _uptime(later)
    if first_up is None or second_up is None:
        raise DumpError(mark_line, "two snapshots need /proc/uptime in each, to know the window")
    window = second_up - first_up
    if window <= 0:
        raise DumpError(
            later.proc["/proc/uptime"].line, f"the second snapshot's uptime is not later ({window:g} s)"
        )
    after = {c.cpu: c for c in _build_cpus(later, n_states)}
    out = []
    for c in cpus:
        b = after.get(c.cpu)
        counters: list[StateCounters | None] = []
        for idx, before in enumerate(c.counters):
            now = b.counters[idx] if b is not None and idx < len(b.counters) else None
            if before is None or now is None:
                counters.append(None)
                continue
            delta: dict[str, int | None] = {}
            for key in ("usage", "time_us", "above", "below", "rejected"):
                x, y = getattr(before, key), getattr(now, key)
                if x is not None and y is not None and y < x:
                    line = later.state_first_line.get((c.cpu, idx), mark_line)
                    raise DumpError(
                        line, f"cpu{c.cpu} state{idx} {key} went back between the snapshots ({x} -> {y})"
                    )
                delta[key] = None if x is None or y is None else y - x
            counters.append(StateCounters(**delta))
        out.append(c.model_copy(update={"counters": counters}))
    return out, second_up, window


def _cpuinfo(raw: _Raw, key: str) -> str | None:
    f = raw.cpuinfo.get(key)
    return f.value if f is not None else None


def _cpuinfo_int(raw: _Raw, key: str) -> int | None:
    f = raw.cpuinfo.get(key)
    return _int(f.value, f.line, f"/proc/cpuinfo {key}") if f is not None else None


def _uptime(raw: _Raw) -> float | None:
    f = raw.proc.get("/proc/uptime")
    if f is None:
        return None
    first = f.value.split()[0] if f.value.split() else ""
    try:
        up = float(first)
    except ValueError:
        up = math.nan
    if not math.isfinite(up) or up <= 0:
        raise DumpError(f.line, f"/proc/uptime: expected seconds since boot, got {f.value!r}")
    return up


def _driver(raw: _Raw) -> str | None:
    """The cpuidle driver; one serves every CPU, so a dump naming two is refused."""
    named = [(f.value.strip(), f.line, f"cpu{cpu}/cpuidle/driver/name") for cpu, f in raw.cpu_driver.items()]
    f = raw.globals.get("current_driver")
    if f is not None:
        named.insert(0, (f.value.strip(), f.line, "cpuidle/current_driver"))
    for value, line, where in named[1:]:
        if value != named[0][0]:
            raise DumpError(
                line,
                f"two cpuidle drivers: {where} is {value!r}, {named[0][2]} is {named[0][0]!r} (line "
                f"{named[0][1]}); one driver serves every CPU, so the dump mixes two machines or boots",
            )
    return named[0][0] if named else None


def _governor(raw: _Raw) -> str | None:
    rw, ro = raw.globals.get("current_governor"), raw.globals.get("current_governor_ro")
    if rw is not None and ro is not None and rw.value.strip() != ro.value.strip():
        raise DumpError(
            ro.line,
            f"contradictory values: current_governor_ro is {ro.value!r}, current_governor is {rw.value!r} "
            f"(line {rw.line})",
        )
    f = rw or ro
    return f.value.strip() if f is not None else None


def _build_states(raw: _Raw) -> list[DumpState]:
    indices = sorted({idx for _, idx in raw.states})
    for pos, idx in enumerate(indices):
        if pos != idx:
            first_line = min(ln for (_, i), ln in raw.state_first_line.items() if i == idx)
            raise DumpError(first_line, f"state{idx} appears but no CPU shows state{pos}")
    for key in sorted(raw.states, key=lambda k: raw.state_first_line[k]):
        if "name" not in raw.states[key]:
            cpu, idx = key
            raise DumpError(raw.state_first_line[key], f"cpu{cpu}/cpuidle/state{idx} has no name")
    out: list[DumpState] = []
    for idx in indices:
        keys = sorted(k for k in raw.states if k[1] == idx)
        table: dict[str, tuple[str, int, int]] = {}  # field -> (value, line, cpu) of the first CPU
        for cpu, _ in keys:
            for fname in _STATE_TABLE_FIELDS:
                f = raw.states[(cpu, idx)].get(fname)
                if f is None:
                    continue
                if fname in ("latency", "residency", "power"):
                    _int(f.value, f.line, f"cpu{cpu}/cpuidle/state{idx}/{fname}")  # a bad number first
                first = table.get(fname)
                if first is None:
                    table[fname] = (f.value, f.line, cpu)
                elif first[0] != f.value:
                    raise DumpError(
                        f.line,
                        f"contradictory values: cpu{cpu} state{idx} {fname} is {f.value!r}, "
                        f"cpu{first[2]}'s is {first[0]!r} (line {first[1]}); one table serves every CPU",
                    )
        disabled_cpus: list[int] = []
        reporting = 0
        for cpu, _ in keys:
            f = raw.states[(cpu, idx)].get("disable")
            if f is None:
                continue
            v = _int(f.value, f.line, f"cpu{cpu}/cpuidle/state{idx}/disable")
            if v not in (0, 1):
                raise DumpError(
                    f.line, f"cpu{cpu}/cpuidle/state{idx}/disable: expected 0 or 1, got {f.value!r}"
                )
            reporting += 1
            if v:
                disabled_cpus.append(cpu)
        desc = table["desc"][0] if "desc" in table else None
        hint = _MWAIT.search(desc) if desc else None
        status = table.get("default_status")
        if status is not None and status[0].strip() not in ("enabled", "disabled"):
            raise DumpError(status[1], f"default_status: expected 'enabled' or 'disabled', got {status[0]!r}")
        power = _table_int(table, "power", idx)
        out.append(
            DumpState(
                index=idx,
                name=table["name"][0].strip(),
                desc=desc,
                mwait_hint=f"0x{int(hint.group(1), 16):02x}" if hint else None,
                latency_us=_table_int(table, "latency", idx),
                residency_us=_table_int(table, "residency", idx),
                power_mw=None if power is None or power in _POWER_UNKNOWN else power,
                default_status=status[0].strip() if status is not None else None,
                disabled_cpus=disabled_cpus,
                cpus_reporting_disable=reporting,
                disabled=reporting > 0 and len(disabled_cpus) == reporting,
                line=min(raw.state_first_line[k] for k in keys),
            )
        )
    return out


def _table_int(table: Mapping[str, tuple[str, int, int]], fname: str, idx: int) -> int | None:
    if fname not in table:
        return None
    value, line, cpu = table[fname]
    return _int(value, line, f"cpu{cpu}/cpuidle/state{idx}/{fname}")


def _build_cpus(raw: _Raw, n_states: int) -> list[CpuRecord]:
    out: list[CpuRecord] = []
    for cpu in sorted(raw.cpu_first_line):
        counters: list[StateCounters | None] = []
        for idx in range(n_states):
            fields = raw.states.get((cpu, idx))
            if fields is None:
                counters.append(None)
                continue
            vals: dict[str, int | None] = {}
            for fname in _STATE_COUNTER_FIELDS:
                f = fields.get(fname)
                vals[fname] = _int(f.value, f.line, f"cpu{cpu}/cpuidle/state{idx}/{fname}") if f else None
            counters.append(
                StateCounters(
                    usage=vals["usage"],
                    time_us=vals["time"],
                    above=vals["above"],
                    below=vals["below"],
                    rejected=vals["rejected"],
                )
            )
        topo = raw.topology.get(cpu, {})
        ids: dict[str, int | None] = {}
        for fname in _TOPOLOGY_INT_FIELDS:
            f = topo.get(fname)
            ids[fname] = _int(f.value, f.line, f"cpu{cpu}/topology/{fname}", signed=True) if f else None
        siblings = _siblings(cpu, topo)
        info = raw.cpuinfo_cpus.get(cpu, {})
        package_id, core_id = ids["physical_package_id"], ids["core_id"]
        for key, sysfs_value in (("physical id", package_id), ("core id", core_id)):
            f = info.get(key)
            if f is None:
                continue
            value = _int(f.value, f.line, f"/proc/cpuinfo processor {cpu} {key}")
            if sysfs_value is not None and sysfs_value != value:
                what = "physical_package_id" if key == "physical id" else "core_id"
                raise DumpError(
                    f.line,
                    f"contradictory topology: /proc/cpuinfo puts cpu{cpu} in {key} {value}, "
                    f"cpu{cpu}/topology/{what} says {sysfs_value} (a CPU in two places)",
                )
            if key == "physical id":
                package_id = value
            else:
                core_id = value
        online_field = raw.online.get(str(cpu))
        if online_field is not None:
            online = online_field.value == "1"
        else:  # the kernel removes an offline CPU's topology directory
            online = not raw.topology or cpu in raw.topology or bool(info)
        out.append(
            CpuRecord(
                cpu=cpu,
                package_id=package_id,
                die_id=ids["die_id"],
                cluster_id=ids["cluster_id"],
                core_id=core_id,
                online=online,
                thread_siblings=siblings,
                counters=counters,
            )
        )
    return out


def _siblings(cpu: int, topo: Mapping[str, _Field]) -> list[int] | None:
    """The CPU's SMT siblings; thread_siblings_list and core_cpus_list are the same file under two names."""
    found: list[tuple[list[int], _Field]] = []
    for fname in ("core_cpus_list", "thread_siblings_list"):
        f = topo.get(fname)
        if f is not None:
            found.append((_cpu_list(f.value, f.line, f"cpu{cpu}/topology/{fname}"), f))
    if not found:
        return None
    if len(found) == 2 and found[0][0] != found[1][0]:
        raise DumpError(
            found[1][1].line,
            f"contradictory values: cpu{cpu} thread_siblings_list is {found[1][1].value!r}, "
            f"core_cpus_list is {found[0][1].value!r} (line {found[0][1].line})",
        )
    lst, f = found[-1]
    if cpu not in lst:
        raise DumpError(
            f.line, f"contradictory values: cpu{cpu}'s sibling list {f.value!r} does not include cpu{cpu}"
        )
    return lst


def _build_topology(raw: _Raw, cpus: list[CpuRecord]) -> tuple[Topology, list[str]]:
    by_cpu = {c.cpu: c for c in cpus}
    online = [c for c in cpus if c.online]
    n, n_online = len(cpus), len(online)
    placed = [c for c in online if c.package_id is not None and c.core_id is not None]
    if not placed:
        has_dies = any(c.die_id is not None for c in cpus)
        source = "inferred from the CPU count" + (
            " (the dump's die_id is not a socket on multi-die parts, so it does not tell sockets)"
            if has_dies
            else ""
        )
        note = (
            f"no package or core records in the dump: inferred 1 socket of {n_online} cores, 1 thread each, "
            f"{source} (collect with .../cpu*/topology/ or /proc/cpuinfo for the real layout)"
        )
        return Topology(
            cpus=n,
            online_cpus=n_online,
            sockets=1,
            cores=n_online,
            cores_per_socket=n_online,
            threads_per_core=1,
            inferred=True,
            note=note,
            source=source,
        ), [note]
    from_sysfs = any(raw.topology.get(c.cpu, {}).get("physical_package_id") for c in placed)
    source = "sysfs topology" if from_sysfs else "/proc/cpuinfo"
    notes: list[str] = []
    _check_packages(raw, placed)
    # Cores are keyed by (package, die, core_id): core_id is sparse, restarts in every package and,
    # on multi-die parts (Cascade Lake-AP), may repeat on each die of a package.
    core_of: dict[int, tuple[int, int, int]] = {}
    for c in placed:
        core_of[c.cpu] = (c.package_id or 0, c.die_id if c.die_id is not None else -1, c.core_id or 0)
    groups: dict[tuple[int, int, int], set[int]] = {}
    for cpu, key in core_of.items():
        groups.setdefault(key, set()).add(cpu)
    for c in placed:
        if c.thread_siblings is None:
            continue
        line = raw.topology[c.cpu].get("core_cpus_list") or raw.topology[c.cpu].get("thread_siblings_list")
        assert line is not None
        for s in c.thread_siblings:
            if s in core_of and core_of[s] != core_of[c.cpu]:
                raise DumpError(
                    line.line,
                    f"contradictory values: cpu{c.cpu} lists cpu{s} as its SMT sibling, but they sit in "
                    f"different cores (package, die, core_id) {core_of[c.cpu]} and {core_of[s]}",
                )
        mates = groups[core_of[c.cpu]]
        stray = sorted(m for m in mates if m not in c.thread_siblings)
        if stray:
            raise DumpError(
                line.line,
                f"contradictory values: cpu{stray[0]} has cpu{c.cpu}'s package and core_id, but cpu{c.cpu}'s "
                f"sibling list {line.value!r} leaves it out",
            )
    # The machine's threads per core: a sibling that is offline has no topology records, but its
    # online mate's list still names it.
    threads = max(
        max(len(mates), *(len(by_cpu[cpu].thread_siblings or ()) for cpu in mates))
        for mates in groups.values()
    )
    packages = sorted({k[0] for k in groups})
    cores_per_socket = max(sum(1 for k in groups if k[0] == p) for p in packages)
    unplaced = [c.cpu for c in online if c.cpu not in core_of]
    offline = [c.cpu for c in cpus if not c.online]
    dies = {(c.package_id, c.die_id) for c in placed if c.die_id is not None}
    note = (
        f"{len(packages)} socket(s), {len(groups)} cores, up to {threads} thread(s) per core, "
        f"from the {source} records"
        + (f" ({len(dies)} dies: a die is not a socket)" if len(dies) > len(packages) else "")
    )
    if unplaced:
        notes.append(f"{len(unplaced)} online CPU(s) have no topology records: " + _ranges(unplaced))
    if offline:
        notes.append(
            f"{len(offline)} CPU(s) offline when the dump was taken, not simulated: " + _ranges(offline)
        )
    sizes = {len(m) for m in groups.values()}
    if len(sizes) > 1:
        notes.append(f"cores have {sorted(sizes)} online threads: some siblings are offline")
    return (
        Topology(
            cpus=n,
            online_cpus=n_online,
            sockets=len(packages),
            cores=len(groups),
            cores_per_socket=cores_per_socket,
            threads_per_core=threads,
            cores_per_module=_cores_per_module(placed, core_of),
            inferred=False,
            note=note,
            source=source,
        ),
        notes,
    )


def _check_packages(raw: _Raw, placed: list[CpuRecord]) -> None:
    """Each CPU in one package: its package's CPU list names no CPU of another package."""
    package_of = {c.cpu: c.package_id for c in placed}
    for c in placed:
        for fname in ("package_cpus_list", "core_siblings_list"):
            f = raw.topology.get(c.cpu, {}).get(fname)
            if f is None:
                continue
            for other in _cpu_list(f.value, f.line, f"cpu{c.cpu}/topology/{fname}"):
                if other in package_of and package_of[other] != c.package_id:
                    raise DumpError(
                        f.line,
                        f"contradictory topology: cpu{c.cpu}/topology/{fname} puts cpu{other} in package "
                        f"{c.package_id}, but its physical_package_id is {package_of[other]} "
                        "(a CPU in two packages)",
                    )


def _cores_per_module(placed: list[CpuRecord], core_of: Mapping[int, tuple[int, int, int]]) -> int | None:
    """Cores sharing a cluster_id (Sierra Forest's 4-core modules), when every module has as many."""
    modules: dict[tuple[int, int, int], set[tuple[int, int, int]]] = {}
    for c in placed:
        if c.cluster_id is None:
            return None
        key = (c.package_id or 0, c.die_id if c.die_id is not None else -1, c.cluster_id)
        modules.setdefault(key, set()).add(core_of[c.cpu])
    sizes = {len(cores) for cores in modules.values()}
    return sizes.pop() if len(sizes) == 1 else None


def _ranges(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5', as the kernel prints CPU lists."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)
