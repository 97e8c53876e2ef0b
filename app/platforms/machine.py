"""What an imported machine is: its table matched against the built-in ones, an engine `Platform`
built from it (costs and power borrowed, labelled so), and its counters as residency shares.

`app.platforms.sysfs` reads the dump; this module decides what it means. They change apart: a
new sysfs field touches the reader, a new known variant or a new share touches this.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from app.platforms.sysfs import DumpError, SysfsDump, Topology
from engine.platforms import (
    BUILTIN_PLATFORMS,
    CostModel,
    CState,
    Param,
    Platform,
    PlatformTopology,
    custom_platform,
)
from engine.recognise import DumpState as RecognisedState
from engine.recognise import DumpTable, Recognition, recognise


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------------------------------- matching


# Table distance: per pair of same-named states, |ln| of the latency and residency ratios (+1 us so
# that 0 and 1 us compare); a state on one side only costs as much as a factor e^2 off on both.
_UNMATCHED_COST = 2.0


class TableMatch(_Model):
    """How a dump's table relates to the built-in ones."""

    builtin: str  # the closest built-in platform (the one costs and power are borrowed from)
    relation: Literal["equal", "variant", "closest"]
    variant: str | None = None  # the recognised variants, comma-separated
    distance: float
    message: str


def _norm(name: str) -> str:
    # Old intel_idle names carried the platform ("C1-SKX"); turbostat cuts them at '-' too.
    return name.split("-", 1)[0].upper()


def _rows(dump: SysfsDump) -> list[tuple[str, int | None, int | None, str | None]]:
    return [(s.name, s.latency_us, s.residency_us, s.mwait_hint) for s in dump.states]


def _builtin_rows(p: Platform) -> list[tuple[str, float, float, str | None]]:
    return [(s.name, s.exit_latency_us, s.target_residency_us, s.mwait_hint) for s in p.states]


def _same(
    dump_rows: list[tuple[str, int | None, int | None, str | None]],
    rows: list[tuple[str, float, float, str | None]],
) -> bool:
    if len(dump_rows) != len(rows):
        return False
    for (name, lat, res, hint), (bname, blat, bres, bhint) in zip(dump_rows, rows, strict=True):
        if name != bname or lat != blat or res != bres:
            return False
        if hint is not None and bhint is not None and hint != bhint:
            return False
    return True


def table_distance(dump: SysfsDump, platform: Platform) -> float:
    """0 for the same rows; larger the further apart (see `_UNMATCHED_COST`)."""
    ours = {_norm(s.name): s for s in dump.states if s.index > 0 or s.name != "POLL"}
    theirs = {_norm(s.name): s for s in platform.states if not s.is_poll}
    d = 0.0
    for key in ours.keys() | theirs.keys():
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None or a.latency_us is None or a.residency_us is None:
            d += _UNMATCHED_COST
            continue
        d += abs(math.log((a.latency_us + 1) / (b.exit_latency_us + 1)))
        d += abs(math.log((a.residency_us + 1) / (b.target_residency_us + 1)))
    return d


def match_builtin(dump: SysfsDump, builtins: Mapping[str, Platform] | None = None) -> TableMatch:
    """Say whether the dump's table equals a built-in one, or which is closest (by rows alone: for
    what the kernel makes of a table, `recognise_dump`)."""
    platforms = dict(BUILTIN_PLATFORMS if builtins is None else builtins)
    rows = _rows(dump)
    for name in sorted(platforms):
        if _same(rows, _builtin_rows(platforms[name])):
            return TableMatch(
                builtin=name,
                relation="equal",
                distance=0.0,
                message=f"the table equals the built-in {name!r} table ({platforms[name].title})",
            )
    scored = sorted((table_distance(dump, platforms[n]), n) for n in platforms)
    dist, best = scored[0]
    tied = [n for d, n in scored if math.isclose(d, dist)]
    message = (
        f"no built-in table matches; the closest is {best!r} ({platforms[best].title}), distance {dist:.2f}"
    )
    if len(tied) > 1:
        message += f" (tied with {', '.join(repr(n) for n in tied[1:])}; the first by name is taken)"
    return TableMatch(builtin=best, relation="closest", distance=round(dist, 6), message=message)


def run_topology(topo: Topology) -> dict[str, Any]:
    """The layout a run of the machine has: exactly its online CPUs, with every count set (so no
    platform default applies on top). The dump's sockets x cores x threads where they make the
    online CPUs (and the engine's bounds hold); else, where the records place every online CPU in
    its package, those packages with their own online counts (CPUs taken offline leave the
    packages uneven) and their cores' online threads (`threads_per_core_by_socket` where each
    package's cores have as many, else `core_threads`: hybrid parts, single siblings offline);
    else single-thread cores on as few sockets as fit."""
    n = topo.online_cpus or topo.cpus
    layout = (topo.sockets, topo.cores_per_socket, topo.threads_per_core)
    out: dict[str, Any]
    per_package = topo.package_cpus
    if (
        not topo.inferred
        and layout[0] * layout[1] * layout[2] == n
        and layout[0] <= 16
        and layout[1] <= 512
        and layout[2] <= 4
    ):
        out = {"sockets": layout[0], "cores_per_socket": layout[1], "threads_per_core": layout[2]}
    elif per_package and sum(per_package) == n and len(per_package) <= 16 and max(per_package) <= 512:
        core_threads = _core_threads(topo, per_package)
        widest, most = max(map(len, core_threads)), max(max(c) for c in core_threads)
        out = {"sockets": len(per_package), "cores_per_socket": widest, "threads_per_core": most}
        uniform = [set(c) for c in core_threads]
        if len(set(per_package)) > 1 or len(set().union(*uniform)) > 1:
            out["cpus_per_socket"] = list(per_package)
            if any(len(u) > 1 for u in uniform):
                out["core_threads"] = core_threads
            elif most > 1:
                out["threads_per_core_by_socket"] = [c[0] for c in core_threads]
    else:
        sockets = next((k for k in range(max(topo.sockets, 1), 17) if n % k == 0 and n // k <= 512), 1)
        out = {"sockets": sockets, "cores_per_socket": n // sockets, "threads_per_core": 1}
    out["cpus"] = n
    module = topo.cores_per_module
    # A module counts cores: kept where the run's cores are the dump's (alike, and whole modules).
    same_cores = out["threads_per_core"] == topo.threads_per_core and "cpus_per_socket" not in out
    if module is not None and 1 < module <= 16 and same_cores and out["cores_per_socket"] % module == 0:
        out["cores_per_module"] = module
    return out


def _core_threads(topo: Topology, per_package: list[int]) -> list[list[int]]:
    """Each package's cores as their online threads for the run: the dump's where its records
    give them for every online CPU (and the engine's bounds hold), else single-thread cores."""
    given = topo.package_core_threads
    if (
        given is not None
        and [sum(c) for c in given] == per_package
        and all(len(c) <= 512 and max(c) <= 4 for c in given)
    ):
        return [list(c) for c in given]
    return [[1] * n for n in per_package]


def platform_topology(topology: Mapping[str, Any], part: str) -> PlatformTopology:
    return PlatformTopology(
        sockets=topology["sockets"],
        cores_per_socket=topology["cores_per_socket"],
        threads_per_core=topology["threads_per_core"],
        cores_per_module=topology.get("cores_per_module", 1),
        cpus_per_socket=topology.get("cpus_per_socket"),
        threads_per_core_by_socket=topology.get("threads_per_core_by_socket"),
        core_threads=topology.get("core_threads"),
        part=part,
    )


def dump_table(dump: SysfsDump, topology: Mapping[str, Any]) -> DumpTable:
    """What recognition needs of a dump, with the layout the run will have."""
    return DumpTable(
        states=[
            RecognisedState(
                name=s.name,
                desc=s.desc,
                latency_us=s.latency_us,
                residency_us=s.residency_us,
                default_status=s.default_status,  # type: ignore[arg-type]
                disabled=s.disabled,
            )
            for s in dump.states
        ],
        driver=dump.driver,
        governor=dump.governor,
        cpu_vendor=dump.vendor,
        cpu_family=dump.cpu_family,
        cpu_model=dump.cpu_model,
        packages=topology["sockets"],
        online_cpus=topology["cpus"],
        cores_per_socket=topology["cores_per_socket"],
        threads_per_core=topology["threads_per_core"],
        cpus_per_socket=topology.get("cpus_per_socket"),
        threads_per_core_by_socket=topology.get("threads_per_core_by_socket"),
        core_threads=topology.get("core_threads"),
    )


def recognise_dump(dump: SysfsDump, topology: Mapping[str, Any]) -> tuple[Recognition, TableMatch]:
    """The engine's recognition of the dump, and the match in the import answer's older terms (equal
    to, a variant of, or, when no table explains it, closest to a built-in table)."""
    try:
        rec = recognise(dump_table(dump, topology))
    except ValueError as err:  # an unknown driver
        raise DumpError(None, str(err)) from None
    if rec.based_on is None and rec.driver == "intel_idle" and not rec.variant:
        closest = match_builtin(dump)
        return rec, closest.model_copy(update={"message": f"{rec.message}; {closest.message}"})
    relation: Literal["equal", "variant", "closest"] = "variant" if rec.variant else "equal"
    builtin = rec.based_on
    if builtin is None:  # acpi_idle's or haltpoll's other table, intel_idle's _CST states
        relation = "closest"
        builtin = rec.driver if rec.driver in BUILTIN_PLATFORMS else match_builtin(dump).builtin
    match = TableMatch(
        builtin=builtin,
        relation=relation,
        variant=", ".join(rec.variant) or None,
        distance=0.0 if rec.based_on else round(table_distance(dump, rec.platform), 6),
        message=rec.message,
    )
    return rec, match


# -------------------------------------------------------------------------------------- platforms


def _borrowed(p: Param, base: str, what: str) -> Param:
    """A value taken from a built-in platform: an estimate for this machine, its origin kept in the text."""
    origin = f"{p.kind}: {p.source}" if p.source else p.kind
    return Param(value=p.value, kind="estimate", source=f"borrowed from built-in {base!r} {what} ({origin})")


def build_platform(dump: SysfsDump, name: str, *, based_on: str | None = None, title: str = "") -> Platform:
    """An engine `Platform` with the dump's table and topology; costs, power and per-state terms are
    borrowed from the closest built-in platform (or `based_on`), labelled so.

    State flags are not in sysfs: they come from the base's state of the same name (listed in the
    notes); a state the driver leaves disabled by default gets CPUIDLE_FLAG_OFF.
    """
    if not 1 <= len(name) <= 64:
        raise ValueError(f"name: 1 to 64 characters, got {len(name)}")
    match = match_builtin(dump)
    base_name = based_on or match.builtin
    if base_name not in BUILTIN_PLATFORMS:
        raise KeyError(f"unknown platform {base_name!r}; built-in: {', '.join(sorted(BUILTIN_PLATFORMS))}")
    base = BUILTIN_PLATFORMS[base_name]
    base_states = {_norm(s.name): s for s in base.states}
    states: list[CState] = []
    lines: list[int] = []
    borrowed_flags: list[str] = []
    renamed: list[str] = []  # sysfs names may hold blanks (haltpoll's "haltpoll idle"); engine names may not
    for s in dump.states:
        if s.latency_us is None or s.residency_us is None:
            missing = "latency" if s.latency_us is None else "residency"
            raise DumpError(s.line, f"state{s.index} ({s.name}) has no {missing} record")
        twin = base_states.get(_norm(s.name))
        flags = list(twin.flags) if twin is not None else []
        if s.index == 0 and s.name == "POLL":
            flags = ["CPUIDLE_FLAG_POLLING"]
        elif flags:
            borrowed_flags.append(f"{s.name}: {', '.join(flags)}")
        if s.default_status == "disabled" and "CPUIDLE_FLAG_OFF" not in flags:
            flags.append("CPUIDLE_FLAG_OFF")
        engine_name = re.sub(r"[^A-Za-z0-9_\-]", "_", s.name)[:16]
        if engine_name != s.name:
            renamed.append(f"{s.name!r} -> {engine_name!r}")
        fields: dict[str, object] = {
            "name": engine_name,
            "desc": s.desc or "",
            "mwait_hint": s.mwait_hint,
            "flags": flags,
            "exit_latency_us": s.latency_us,
            "target_residency_us": s.residency_us,
        }
        if twin is not None:
            what = f"{twin.name}"
            fields["entry_cost_ns"] = _borrowed(twin.entry_cost_ns, base_name, f"{what} entry cost")
            fields["power_watts"] = _borrowed(twin.power_watts, base_name, f"{what} power")
            # A median only carries over when the worst case it belongs to is the same.
            if twin.exit_latency_median_us is not None and twin.exit_latency_us == s.latency_us:
                fields["exit_latency_median_us"] = _borrowed(
                    twin.exit_latency_median_us, base_name, f"{what} median exit latency"
                )
        try:
            states.append(CState.model_validate(fields))
        except ValidationError as err:
            raise DumpError(s.line, f"state{s.index} ({s.name}): {_first_error(err)}") from None
        lines.append(s.line)
    try:
        platform = custom_platform(name, states, base, title)
    except (ValidationError, ValueError) as err:
        msg = _first_error(err) if isinstance(err, ValidationError) else str(err)
        m = re.search(r"states\.(\d+)", msg)
        shift = 0 if states and states[0].name == "POLL" else 1  # custom_platform added POLL in front
        line = lines[int(m.group(1)) - shift] if m and 0 <= int(m.group(1)) - shift < len(lines) else None
        raise DumpError(line, msg) from None
    topology = platform_topology(run_topology(dump.topology), dump.model_name or "")
    topo_note = f"Topology from the dump: {dump.topology.note}."
    costs = CostModel.model_validate(
        {k: _borrowed(base.costs.param(k), base_name, k) for k in CostModel.model_fields}
    )
    notes = [
        match.message + ".",
        topo_note,
        f"Cost model, busy power, per-state power and entry costs borrowed from the built-in {base_name!r} "
        "platform (estimates for this machine).",
    ]
    if renamed:
        notes.append("State names made engine-safe: " + ", ".join(renamed) + ".")
    if borrowed_flags:
        notes.append(
            f"State flags (not in sysfs) borrowed from {base_name!r}: " + "; ".join(borrowed_flags) + "."
        )
    notes.extend(dump.notes)
    source = "sysfs dump" + (f" of {dump.model_name}" if dump.model_name else "")
    if dump.driver:
        source += f", driver {dump.driver}"
    data = platform.model_dump()
    data.update(
        title=title or f"{dump.model_name or 'imported machine'} ({match.message})"[:200],
        source=source,
        kernel=dump.kernel or "",
        topology=topology.model_dump(),
        costs=costs.model_dump(),
        busy_watts=_borrowed(base.busy_watts, base_name, "busy power").model_dump(),
        notes=notes,
    )
    return Platform.model_validate(data)


def machine_platform(
    dump: SysfsDump, rec: Recognition, match: TableMatch, name: str, title: str = ""
) -> Platform:
    """The stored platform of an imported machine: the recognised table as the dump has it (on its
    own base's costs), or, when no table explains the dump, its rows on the closest one's (borrowed,
    labelled so); the dump's topology either way."""
    if not rec.config:
        return build_platform(dump, name, based_on=match.builtin, title=title)
    topology = platform_topology(run_topology(dump.topology), dump.model_name or "")
    source = "sysfs dump" + (f" of {dump.model_name}" if dump.model_name else "") + f", driver {rec.driver}"
    data = rec.platform.model_dump()
    data.update(
        name=name,
        title=title or f"{dump.model_name or 'imported machine'} ({rec.message})"[:200],
        source=source,
        kernel=dump.kernel or "",
        topology=topology.model_dump(),
        notes=[
            f"{match.message}.",
            f"Topology from the dump: {dump.topology.note}.",
            *rec.notes,
            *dump.notes,
        ],
    )
    return Platform.model_validate(data)


def as_registered(table: Platform, machine: Mapping[str, Any] | None) -> Platform:
    """The table as the machine's driver registers it: under the package limit its import implies
    (skx's C6 92/276 and spr's 190/600 when package C6 is off), so that a page shows the figures the
    dump has. The stored table keeps the kernel's own rows: a run at another limit rewrites them anew."""
    limit = ((machine or {}).get("config") or {}).get("package", {}).get("limit")
    return table.under_package_limit(limit) if isinstance(limit, str) else table


def _first_error(err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(x) for x in e["loc"])
    return f"{loc}: {e['msg']}" if loc else str(e["msg"])


# --------------------------------------------------------------------------------------- counters


class StateShare(_Model):
    """One state over every CPU: counter totals, residency share and above/below ratios."""

    name: str
    usage: int
    time_us: int
    above: int
    below: int
    rejected: int
    share: float | None  # of elapsed CPU time (basis "uptime") or of idle time (basis "idle")
    above_ratio: float | None  # above / usage: entries the governor should have made shallower
    below_ratio: float | None  # below / usage: entries where a deeper state would have fit


class CpuShares(_Model):
    cpu: int
    shares: list[float | None]  # by state index
    idle_share: float | None  # all states together, basis "uptime" only


class CounterSummary(_Model):
    """The dump's counters as shares; cumulative since each CPU's cpuidle device registered."""

    basis: Literal["uptime", "idle"]
    note: str
    states: list[StateShare]
    idle_share: float | None  # basis "uptime": the share of CPU time in any idle state
    per_cpu: list[CpuShares]
    entries_per_idle_s: float | None = None  # sum of usage over sum of time: always available
    window_s: float | None = None  # two snapshots: the counters are over this window, not since boot


def counter_summary(dump: SysfsDump) -> CounterSummary:
    """Residency shares per state, per CPU and overall, and above/below ratios.

    With `/proc/uptime` in the dump a state's share is its `time` over the elapsed time (so the
    rest is C0, busy or in the idle loop outside any state); without it, shares are among idle
    states only. `time` is what the kernel measured (it can exceed the hardware residency), and
    a CPU onlined after boot counts from then, so its share is low.
    """
    n_states = len(dump.states)
    elapsed_s = dump.window_s if dump.window_s is not None else dump.uptime_s
    up_us = elapsed_s * 1e6 if elapsed_s is not None else None
    per_cpu: list[CpuShares] = []
    totals = {k: [0] * n_states for k in ("usage", "time_us", "above", "below", "rejected")}
    time_cpus = [0] * n_states  # CPUs that report each state's time, for the overall denominator
    idle_sum_all = 0
    for c in dump.cpus:
        times = [ctr.time_us if ctr is not None else None for ctr in c.counters]
        for i, ctr in enumerate(c.counters):
            if ctr is None:
                continue
            for k in totals:
                v = getattr(ctr, k)
                if v is not None:
                    totals[k][i] += v
            if ctr.time_us is not None:
                time_cpus[i] += 1
        idle = sum(t for t in times if t is not None)
        idle_sum_all += idle
        if up_us is not None:
            shares = [t / up_us if t is not None else None for t in times]
            per_cpu.append(CpuShares(cpu=c.cpu, shares=shares, idle_share=idle / up_us))
        else:
            shares = [t / idle if t is not None and idle > 0 else None for t in times]
            per_cpu.append(CpuShares(cpu=c.cpu, shares=shares, idle_share=None))
    out_states: list[StateShare] = []
    for i, s in enumerate(dump.states):
        t = totals["time_us"][i]
        if up_us is not None:
            share = t / (up_us * time_cpus[i]) if time_cpus[i] else None
        else:
            share = t / idle_sum_all if idle_sum_all > 0 and time_cpus[i] else None
        usage = totals["usage"][i]
        out_states.append(
            StateShare(
                name=s.name,
                usage=usage,
                time_us=t,
                above=totals["above"][i],
                below=totals["below"][i],
                rejected=totals["rejected"][i],
                share=share,
                above_ratio=totals["above"][i] / usage if usage else None,
                below_ratio=totals["below"][i] / usage if usage else None,
            )
        )
    if dump.window_s is not None:
        basis: Literal["uptime", "idle"] = "uptime"
        note = f"shares of the {dump.window_s:g} s window between the dump's two snapshots, per CPU"
    elif up_us is not None:
        basis = "uptime"
        note = (
            f"shares of {dump.uptime_s:g} s of uptime per CPU (from /proc/uptime); counters run since each "
            "CPU's cpuidle device registered, so a CPU onlined later shows less"
        )
    else:
        basis = "idle"
        note = "no /proc/uptime in the dump: shares are among idle states only (busy time unknown)"
    idle_share = idle_sum_all / (up_us * len(dump.cpus)) if up_us is not None and dump.cpus else None
    entries = sum(s.usage for s in out_states)
    idle_s = idle_sum_all / 1e6
    return CounterSummary(
        basis=basis,
        note=note,
        states=out_states,
        idle_share=idle_share,
        per_cpu=per_cpu,
        entries_per_idle_s=entries / idle_s if idle_s > 0 else None,
        window_s=dump.window_s,
    )
