"""A real machine's cpuidle table, counters and topology, read from a sysfs dump (`grep -r .` output).

The dump is what `DUMP_COMMAND` prints (one `path:value` record per line, as `grep -r .` writes
them), optionally preceded by the header lines `idlelab collect` adds (`/proc/cpuinfo`,
`/proc/sys/kernel/osrelease`, `/proc/uptime` records and a `# time:` comment). Anything else is
refused with a `DumpError` that names the line and the reason, so the API can answer 422.

`app.platforms.sysfs_records` reads the lines into records, one at a time; this module makes the
machine of them and checks them against each other (every CPU the same table, one CPU in one
package, one driver, two snapshots whose counters only grow).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from app.platforms.sysfs_records import (
    STATE_COUNTER_FIELDS,
    STATE_TABLE_FIELDS,
    TOPOLOGY_INT_FIELDS,
    DumpError,
    Record,
    Records,
    parse_cpu_list,
    parse_int,
    read_records,
    text_lines,
)

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
# `idlelab collect --interval` writes a second snapshot of the counters after this line.
SNAPSHOT_MARK = "# snapshot: 2"
_MWAIT = re.compile(r"MWAIT\s+(0x[0-9a-fA-F]+)")


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
    # Online CPUs of each package, in package order, where the records place them all (None when
    # inferred, or in machines stored before it was kept).
    package_cpus: list[int] | None = None
    # Each package's cores as their online threads, in (die, core_id) order, where the records
    # place every online CPU (None when inferred, or in machines stored before it was kept).
    package_core_threads: list[list[int]] | None = None
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


def parse_dump(data: bytes | str) -> SysfsDump:
    """Parse a sysfs dump; raise `DumpError(line, reason)` on anything that is not one."""
    lines = text_lines(data)
    if not any(ln.strip() for ln in lines):
        raise DumpError(None, "the file is empty")
    mark = next((i for i, ln in enumerate(lines) if ln.startswith(SNAPSHOT_MARK)), None)
    raw = read_records(lines if mark is None else lines[:mark])
    later = None if mark is None else read_records(lines[mark + 1 :], first_line=mark + 2)
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


def _proc(raw: Records, key: str) -> str | None:
    f = raw.proc.get(key)
    return f.value.strip() if f is not None else None


def _over_window(
    raw: Records, later: Records, cpus: list[CpuRecord], n_states: int, mark_line: int
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


def _cpuinfo(raw: Records, key: str) -> str | None:
    f = raw.cpuinfo.get(key)
    return f.value if f is not None else None


def _cpuinfo_int(raw: Records, key: str) -> int | None:
    f = raw.cpuinfo.get(key)
    return parse_int(f.value, f.line, f"/proc/cpuinfo {key}") if f is not None else None


def _uptime(raw: Records) -> float | None:
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


def _driver(raw: Records) -> str | None:
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


def _governor(raw: Records) -> str | None:
    rw, ro = raw.globals.get("current_governor"), raw.globals.get("current_governor_ro")
    if rw is not None and ro is not None and rw.value.strip() != ro.value.strip():
        raise DumpError(
            ro.line,
            f"contradictory values: current_governor_ro is {ro.value!r}, current_governor is {rw.value!r} "
            f"(line {rw.line})",
        )
    f = rw or ro
    return f.value.strip() if f is not None else None


def _build_states(raw: Records) -> list[DumpState]:
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
            for fname in STATE_TABLE_FIELDS:
                f = raw.states[(cpu, idx)].get(fname)
                if f is None:
                    continue
                if fname in ("latency", "residency", "power"):
                    parse_int(f.value, f.line, f"cpu{cpu}/cpuidle/state{idx}/{fname}")  # a bad number first
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
            v = parse_int(f.value, f.line, f"cpu{cpu}/cpuidle/state{idx}/disable")
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
    return parse_int(value, line, f"cpu{cpu}/cpuidle/state{idx}/{fname}")


def _build_cpus(raw: Records, n_states: int) -> list[CpuRecord]:
    out: list[CpuRecord] = []
    for cpu in sorted(raw.cpu_first_line):
        counters: list[StateCounters | None] = []
        for idx in range(n_states):
            fields = raw.states.get((cpu, idx))
            if fields is None:
                counters.append(None)
                continue
            vals: dict[str, int | None] = {}
            for fname in STATE_COUNTER_FIELDS:
                f = fields.get(fname)
                where = f"cpu{cpu}/cpuidle/state{idx}/{fname}"
                vals[fname] = parse_int(f.value, f.line, where) if f else None
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
        for fname in TOPOLOGY_INT_FIELDS:
            f = topo.get(fname)
            ids[fname] = parse_int(f.value, f.line, f"cpu{cpu}/topology/{fname}", signed=True) if f else None
        siblings = _siblings(cpu, topo)
        info = raw.cpuinfo_cpus.get(cpu, {})
        package_id, core_id = ids["physical_package_id"], ids["core_id"]
        for key, sysfs_value in (("physical id", package_id), ("core id", core_id)):
            f = info.get(key)
            if f is None:
                continue
            value = parse_int(f.value, f.line, f"/proc/cpuinfo processor {cpu} {key}")
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


def _siblings(cpu: int, topo: Mapping[str, Record]) -> list[int] | None:
    """The CPU's SMT siblings; thread_siblings_list and core_cpus_list are the same file under two names."""
    found: list[tuple[list[int], Record]] = []
    for fname in ("core_cpus_list", "thread_siblings_list"):
        f = topo.get(fname)
        if f is not None:
            found.append((parse_cpu_list(f.value, f.line, f"cpu{cpu}/topology/{fname}"), f))
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


def _build_topology(raw: Records, cpus: list[CpuRecord]) -> tuple[Topology, list[str]]:
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
    package_cpus = [sum(1 for key in core_of.values() if key[0] == p) for p in packages]
    core_threads = [[len(groups[key]) for key in sorted(groups) if key[0] == p] for p in packages]
    return (
        Topology(
            cpus=n,
            online_cpus=n_online,
            sockets=len(packages),
            cores=len(groups),
            cores_per_socket=cores_per_socket,
            threads_per_core=threads,
            cores_per_module=_cores_per_module(placed, core_of),
            package_cpus=None if unplaced else package_cpus,
            package_core_threads=None if unplaced else core_threads,
            inferred=False,
            note=note,
            source=source,
        ),
        notes,
    )


def _check_packages(raw: Records, placed: list[CpuRecord]) -> None:
    """Each CPU in one package: its package's CPU list names no CPU of another package."""
    package_of = {c.cpu: c.package_id for c in placed}
    for c in placed:
        for fname in ("package_cpus_list", "core_siblings_list"):
            f = raw.topology.get(c.cpu, {}).get(fname)
            if f is None:
                continue
            for other in parse_cpu_list(f.value, f.line, f"cpu{c.cpu}/topology/{fname}"):
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
