"""The lines of a sysfs dump as records: each `path:value` line checked and filed by CPU, state and
field, or refused with a `DumpError` naming the line and the reason.

Nothing here knows what the records mean together: `app.platforms.sysfs` builds the machine from
them (its table, counters and topology) and checks them against each other.
"""

from __future__ import annotations

import re
import zlib
from datetime import datetime

# Bounds: by CPUs and states, never by a line count (a 1,024-CPU dump with topology is ~3.5 MB).
MAX_CPUS = 1024
MAX_STATES = 32
# The highest CPU number x86 Linux can have (CONFIG_NR_CPUS is at most 8192): a CPU list such as
# "0-4000000000" is refused before it becomes a list.
MAX_CPU_NUMBER = 8191

STATE_TABLE_FIELDS = ("name", "desc", "latency", "residency", "power", "default_status")
STATE_COUNTER_FIELDS = ("usage", "time", "above", "below", "rejected")
_STATE_FIELDS = {*STATE_TABLE_FIELDS, *STATE_COUNTER_FIELDS, "disable", "s2idle/usage", "s2idle/time"}
TOPOLOGY_INT_FIELDS = ("physical_package_id", "die_id", "cluster_id", "core_id")
_TOPOLOGY_LIST_FIELDS = ("thread_siblings_list", "core_cpus_list", "core_siblings_list", "package_cpus_list")
_GLOBAL_FIELDS = (
    "available_governors", "current_driver", "current_governor", "current_governor_ro", "intel_c1_demotion"
)  # fmt: skip
_SYSTEM_LINE = re.compile(r"^/sys/devices/system/cpu/(nohz_full|isolated)$")
_PM_QOS_LINE = re.compile(r"^(?:/sys/devices/system/cpu/)?cpu(\d{1,6})/power/pm_qos_resume_latency_us$")
_HZ_LINE = re.compile(r"^(/boot/config-[^:/]{1,200}|/proc/config\.gz)$")
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
_CPU_LIST = re.compile(r"^\d{1,6}(-\d{1,6})?(,\d{1,6}(-\d{1,6})?)*$")


class DumpError(ValueError):
    """The dump is not a usable sysfs cpuidle dump; `line` (1-based) is where, None for the whole file."""

    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(f"line {line}: {reason}" if line is not None else reason)
        self.line = line
        self.reason = reason


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


def text_lines(data: bytes | str) -> list[str]:
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


def parse_int(value: str, line: int, what: str, *, signed: bool = False) -> int:
    v = value.strip()
    if not re.fullmatch(r"-?\d{1,20}" if signed else r"\d{1,20}", v):
        kind = "an integer" if signed else "a non-negative integer"
        raise DumpError(line, f"{what}: expected {kind}, got {value!r}")
    return int(v)


def parse_cpu_list(value: str, line: int, what: str) -> list[int]:
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


class Record:
    """A single-line sysfs file's value and the line it came from."""

    __slots__ = ("value", "line")

    def __init__(self, value: str, line: int) -> None:
        self.value = value
        self.line = line


def _put(into: dict[str, Record], key: str, value: str, line: int, where: str) -> None:
    """Record a file's value; the same file twice must say the same thing."""
    old = into.get(key)
    if old is None:
        into[key] = Record(value, line)
    elif old.value != value:
        raise DumpError(
            line, f"contradictory values: {where} is {value!r} here and {old.value!r} on line {old.line}"
        )


class Records:
    """The records of a dump, grouped by what they describe, before any cross-checks."""

    def __init__(self) -> None:
        self.states: dict[tuple[int, int], dict[str, Record]] = {}
        self.state_first_line: dict[tuple[int, int], int] = {}
        self.topology: dict[int, dict[str, Record]] = {}
        self.cpu_driver: dict[str, Record] = {}
        self.cpu_first_line: dict[int, int] = {}
        self.globals: dict[str, Record] = {}
        self.cpuinfo: dict[str, Record] = {}
        self.cpuinfo_cpus: dict[int, dict[str, Record]] = {}  # per processor: its topology keys
        self.cpuinfo_processor: int | None = None  # the processor whose keys come next
        self.online: dict[str, Record] = {}
        self.proc: dict[str, Record] = {}
        self.collected_at: str | None = None
        self.grep_errors: list[int] = []


def read_records(lines: list[str], first_line: int = 1) -> Records:
    raw = Records()
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


def _read_record(raw: Records, n: int, path: str, value: str) -> None:
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
        if parse_int(value, n, f"cpu{cpu}/online") not in (0, 1):
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


def _read_proc(raw: Records, n: int, path: str, value: str) -> None:
    if path == "/proc/cpuinfo":
        key, sep, val = value.partition(":")
        key = key.strip()
        if not sep:
            raise DumpError(n, f"/proc/cpuinfo: expected 'key : value', got {value!r}")
        if key == "processor":
            raw.cpuinfo_processor = parse_int(val, n, "/proc/cpuinfo processor")
            if raw.cpuinfo_processor > MAX_CPU_NUMBER:
                raise DumpError(n, f"/proc/cpuinfo processor: CPU numbers go up to {MAX_CPU_NUMBER}")
        elif key in _CPUINFO_TOPOLOGY_KEYS and raw.cpuinfo_processor is not None:
            where = f"/proc/cpuinfo processor {raw.cpuinfo_processor} {key}"
            _put(raw.cpuinfo_cpus.setdefault(raw.cpuinfo_processor, {}), key, val.strip(), n, where)
        if key in _CPUINFO_KEYS and key not in raw.cpuinfo:
            raw.cpuinfo[key] = Record(val.strip(), n)  # the first processor's; later ones repeat it
        return
    if path in ("/proc/uptime", "/proc/sys/kernel/osrelease", "/proc/cmdline"):
        _put(raw.proc, path, value, n, path)
        return
    raise DumpError(n, f"not a record of a sysfs cpuidle dump: {path[:80]!r}")


def _read_cpuidle(raw: Records, n: int, cpu: int, rest: str, value: str) -> None:
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


def _read_topology(raw: Records, n: int, cpu: int, rest: str, value: str) -> None:
    if rest in TOPOLOGY_INT_FIELDS or rest in _TOPOLOGY_LIST_FIELDS:
        _put(raw.topology.setdefault(cpu, {}), rest, value, n, f"cpu{cpu}/topology/{rest}")
