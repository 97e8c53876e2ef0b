"""What a machine's cpuidle table is: the built-in table it comes from, and how and why it differs.

`recognise(DumpTable) -> Recognition` is pure: the caller (the app's importer) reads the sysfs
dump and passes what it says. The reasons a dump differs from its intel_idle table are the
kernel's own (drivers/idle/intel_idle.c, intel_idle_init_cstates_icpu() and the *_table_update()
functions), each named as a variant:

- `mwait-subset:<states>`: states dropped because CPUID's MWAIT leaf enumerates no sub-state for
  their major C-state (intel_idle_verify_cstate() tests the major nibble only, so states sharing
  a major, GNR's C6 and C6P, stand or fall together);
- `unusable:<states>`: CPUIDLE_FLAG_UNUSABLE states, never registered (adl's C1);
- `max-cstate:<n>`: the table cut after n rows by `intel_idle.max_cstate=n` (where no major
  C-state group explains the cut);
- `acpi-off:<states>`: on the Xeons (`use_acpi`), native states missing from the firmware's _CST,
  registered with default_status disabled (never ALWAYS_ENABLE ones);
- `states-off:<states>`: default_status disabled by `intel_idle.states_off` (any state);
- `pc6-off`: skx's C6 92/276 or spr's 190/600 (skx_/spr_idle_state_table_update(): package
  C-state limit PC0 or PC2; the dump cannot tell which, so the run takes PC2, inferred);
- `ivt-4s`, `ivt-8s`: ivt_idle_state_table_update()'s tables for 3-4 and more than 4 packages;
- `acpi-cst`: intel_idle on `C<n>_ACPI` states from _CST (no native table for the model, or
  `intel_idle.no_native=1`): no built-in table, the states as the dump has them.

acpi_idle, haltpoll and "no cpuidle driver" dumps are recognised by their driver.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from engine.config import GovernorName
from engine.drivers import CstEntry, acpi_idle_states, driver_platform, intel_idle_acpi_states
from engine.platforms import BUILTIN_PLATFORMS, CState, Platform, custom_platform

_ACPI_NAME = re.compile(r"^C\d+_ACPI$")
_HINT = re.compile(r"MWAIT\s+(0x[0-9a-fA-F]+)")
_PC6_OFF = {"skx", "spr"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DumpState(_Model):
    """One state as `cpuN/cpuidle/stateK/` shows it (K = its index)."""

    name: str
    desc: str | None = None
    latency_us: int | None = None
    residency_us: int | None = None
    default_status: Literal["enabled", "disabled"] | None = None
    disabled: bool = Field(default=False, description="The user's `disable` bit (on every CPU).")


class DumpTable(_Model):
    """What recognition needs of a dump."""

    states: list[DumpState] = Field(description="In sysfs index order, POLL (state0) first.")
    driver: str | None = Field(default=None, description="current_driver; none or null without a driver.")
    governor: str | None = None
    cpu_vendor: str | None = None
    cpu_family: int | None = None
    cpu_model: int | None = None
    packages: int | None = Field(default=None, description="Physical packages (ivt's table depends on it).")
    online_cpus: int | None = None
    cores_per_socket: int | None = None
    threads_per_core: int | None = None
    cpus_per_socket: list[int] | None = Field(
        default=None, description="Online CPUs of each package, where the packages differ."
    )
    threads_per_core_by_socket: list[int] | None = Field(
        default=None,
        description="With cpus_per_socket: each package's SMT threads per core (its sibling lists; 1 "
        "where they pair no CPUs).",
    )
    core_threads: list[list[int]] | None = Field(
        default=None,
        description="With cpus_per_socket, where a package's cores differ: each package's cores as their "
        "online threads.",
    )


class Recognition(_Model):
    """The answer: what the table is, and how to simulate the machine as it is."""

    based_on: str | None = Field(description="The built-in table the dump's is, or null.")
    variant: list[str] = Field(description="Each way the dump differs from it, as the kernel explains it.")
    driver: str
    governor: str | None
    family_modelled: bool
    platform: Platform = Field(description="The table as the dump has it, on the base's cost model.")
    config: dict[str, Any] = Field(
        description="A SimConfig body that runs this machine as it is: its table, online CPUs, governor, "
        "disabled states and the package limit its table implies."
    )
    notes: list[str] = Field(default_factory=list)
    message: str


def _hint(desc: str | None) -> str | None:
    m = _HINT.search(desc or "")
    return f"0x{int(m.group(1), 16):02x}" if m else None


def _major(state: CState) -> int | None:
    return int(state.mwait_hint, 16) >> 4 if state.mwait_hint else None


def _explain(dump: DumpTable, table: Platform, uses_acpi: bool) -> tuple[list[str], list[str]] | None:
    """The variants that turn `table` into the dump's rows (with the names kept), or None."""
    rows = [s for s in dump.states if s.name != "POLL"]
    theirs = table.states[1:]
    names = [s.name for s in rows]
    if len(set(names)) != len(names):
        return None
    by_name = {s.name: s for s in theirs}
    if any(n not in by_name for n in names):
        return None
    # Order must be the table's.
    order = [s.name for s in theirs if s.name in names]
    if order != names:
        return None
    variants: list[str] = []
    kept = [s.name for s in theirs if s.name in names]
    unusable = [s.name for s in theirs if s.name not in names and "CPUIDLE_FLAG_UNUSABLE" in s.flags]
    present_majors = {_major(by_name[n]) for n in names}
    # A missing state whose major C-state another present state shares is no MWAIT-subset drop:
    # only max_cstate explains it, which cuts the table from that row on (the kernel's index).
    cut_at = next(
        (
            i
            for i, t in enumerate(theirs)
            if t.name not in names and t.name not in unusable and _major(t) in present_majors
        ),
        None,
    )
    if cut_at is not None and any(t.name in names for t in theirs[cut_at:]):
        return None
    limit = len(theirs) if cut_at is None else cut_at
    by_mwait = [t.name for t in theirs[:limit] if t.name not in names and t.name not in unusable]
    if unusable:
        variants.append("unusable:" + ",".join(unusable))
    if by_mwait:
        variants.append("mwait-subset:" + ",".join(by_mwait))
    if cut_at is not None:
        variants.append(f"max-cstate:{cut_at}")
    # Figures: the table's, or a rewrite the kernel makes.
    shown: dict[str, tuple[float | None, float | None]] = {
        r.name: (r.latency_us, r.residency_us) for r in rows
    }
    own = {n: (by_name[n].exit_latency_us, by_name[n].target_residency_us) for n in shown}
    rewrites: dict[str, tuple[float, float]] = {}
    for t in table.socket_tables:
        chosen = {n: t.changes.get(n, own[n]) for n in shown}
        if shown == chosen and shown != own:
            # ivt_idle_state_table_update()'s table for more packages: ivt_cstates_4s -> ivt-4s.
            variants.append(f"{table.name}-{t.table.rsplit('_', 1)[1]}")
            rewrites = dict(t.changes)
            break
    limited = table.package.limited_table if table.package is not None and table.name in _PC6_OFF else {}
    pc6_off = False
    for r in rows:
        s = by_name[r.name]
        if r.desc is not None and s.desc and r.desc != s.desc:
            return None
        want = rewrites.get(r.name, (s.exit_latency_us, s.target_residency_us))
        got = (r.latency_us, r.residency_us)
        if got == want:
            continue
        rw = limited.get(r.name)
        if rw is not None and got == (rw.exit_latency_us, rw.target_residency_us):
            pc6_off = True
            continue
        return None
    if pc6_off:
        variants.append("pc6-off")
    off = [r.name for r in rows if r.default_status == "disabled"]
    acpi_off = [n for n in off if uses_acpi and "CPUIDLE_FLAG_ALWAYS_ENABLE" not in by_name[n].flags]
    if acpi_off:
        variants.append("acpi-off:" + ",".join(acpi_off))
    states_off = [n for n in off if n not in acpi_off]
    if states_off:
        variants.append("states-off:" + ",".join(states_off))
    return variants, kept


def _models_match(table: Platform, dump: DumpTable) -> bool:
    if dump.cpu_family is None or dump.cpu_model is None:
        return True
    return any(m.family == dump.cpu_family and m.model == dump.cpu_model for m in table.cpu_models)


def _uses_acpi(table: Platform, dump: DumpTable) -> bool:
    """intel_idle's use_acpi for the dump's model; without a model, whether any of the table's has it."""
    models = [m for m in table.cpu_models if dump.cpu_model is None or m.model == dump.cpu_model]
    return any(m.use_acpi for m in models)


def _socket_shape(core_threads: list[int]) -> str:
    """'26 cores of 2 thread(s)', or '14 cores (6 of 2 threads, 8 of 1)' where they differ."""
    counts = {k: core_threads.count(k) for k in sorted(set(core_threads), reverse=True)}
    if len(counts) == 1:
        return f"{len(core_threads)} cores of {core_threads[0]} thread(s)"
    return f"{len(core_threads)} cores (" + ", ".join(f"{m} of {k}" for k, m in counts.items()) + " threads)"


def _topology(dump: DumpTable, notes: list[str]) -> dict[str, Any]:
    """The online layout, every count set, so that no platform default applies on top of it."""
    n = dump.online_cpus or max(len(dump.states), 1)
    uneven = dump.cpus_per_socket
    if uneven and sum(uneven) == n and len(uneven) == (dump.packages or len(uneven)):
        core_threads = dump.core_threads
        if core_threads is None or [sum(c) for c in core_threads] != list(uneven):
            by_socket = dump.threads_per_core_by_socket
            whole = by_socket is not None and len(by_socket) == len(uneven)
            if by_socket is None or not whole or any(c % k for c, k in zip(uneven, by_socket, strict=True)):
                by_socket = [1] * len(uneven)
            core_threads = [[k] * (c // k) for c, k in zip(uneven, by_socket, strict=True)]
        most = max(max(c) for c in core_threads)
        shape = (
            ", ".join(_socket_shape(c) for c in core_threads) if most > 1 else "that many single-thread cores"
        )
        notes.append(
            f"the packages have {', '.join(map(str, uneven))} online CPUs: simulated as "
            f"{len(uneven)} sockets of {shape}"
        )
        out: dict[str, Any] = {"sockets": len(uneven), "cpus_per_socket": list(uneven)}
        if any(len(set(c)) > 1 for c in core_threads):
            out["core_threads"] = core_threads
        elif most > 1:
            out["threads_per_core_by_socket"] = [c[0] for c in core_threads]
        return {**out, "threads_per_core": most, "cpus": n}
    sockets = dump.packages or 1
    threads = dump.threads_per_core or 1
    cores = dump.cores_per_socket
    if cores is None or sockets * cores * threads != n:
        if n % (sockets * threads) == 0 and dump.cores_per_socket is None:
            cores = n // (sockets * threads)
        else:
            notes.append(
                f"the dump's layout ({sockets} package(s), {dump.cores_per_socket} cores, "
                f"{threads} thread(s)) "
                f"does not make its {n} online CPUs: simulated as 1 socket of {n} single-thread cores"
            )
            sockets, cores, threads = 1, n, 1
    if dump.packages is None or dump.threads_per_core is None:
        notes.append(
            f"topology inferred: {sockets} socket(s) x {cores} cores x {threads} thread(s) = {n} online CPUs "
            "(the dump has no package, core or sibling records)"
        )
    return {"sockets": sockets, "cores_per_socket": cores, "threads_per_core": threads, "cpus": n}


def _config(
    platform: Platform, builtin: bool, dump: DumpTable, notes: list[str], limit: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"platform": platform.name, "topology": _topology(dump, notes)}
    if not builtin:
        body["platform_table"] = platform.model_dump(mode="json")
    disabled = [s.name for s in dump.states if s.disabled and s.name in platform.state_names()]
    if disabled:
        body["states"] = {"disabled": disabled}
    if limit is not None:
        body["package"] = {"limit": limit}
    if dump.governor and platform.driver != "none":
        if dump.governor in get_args(GovernorName):
            body["governor"] = {"name": dump.governor}
        else:
            notes.append(f"the dump's governor {dump.governor!r} is not modelled yet: the run uses menu")
    return body


def _cst(dump: DumpTable) -> list[CstEntry]:
    out = []
    for s in dump.states[1:]:
        desc = s.desc or ""
        c1 = "HLT" in desc or _hint(desc) == "0x00"
        out.append(CstEntry(type=1 if c1 else 2, latency_us=s.latency_us or 0, desc=desc))
    return out


def recognise(dump: DumpTable) -> Recognition:
    """Name the dump's table and its variants, and give the config that simulates it as it is."""
    notes: list[str] = []
    driver = (dump.driver or "none").strip()
    if driver in ("", "none"):
        base = BUILTIN_PLATFORMS["default_idle"]
        config = _config(base, True, dump, notes, None)
        return Recognition(
            based_on=base.name,
            variant=[],
            driver="none",
            governor=None,
            family_modelled=False,
            platform=base,
            config=config,
            notes=notes,
            message="no cpuidle driver: default_idle(), HLT every time (most KVM guests)",
        )
    if driver in ("acpi_idle", "haltpoll"):
        known = BUILTIN_PLATFORMS["acpi_idle" if driver == "acpi_idle" else "haltpoll"]
        rows = [(s.name, s.desc, s.latency_us, s.residency_us) for s in dump.states]
        same = rows == [(s.name, s.desc, s.exit_latency_us, s.target_residency_us) for s in known.states]
        if same:
            platform, based_on = known, known.name
        elif driver == "acpi_idle":
            factors = {
                s.residency_us // s.latency_us for s in dump.states[1:] if s.latency_us and s.residency_us
            }
            factor = factors.pop() if len(factors) == 1 else 2
            states = acpi_idle_states(_cst(dump), latency_factor=factor)
            platform = driver_platform(
                "acpi_idle-dump",
                "acpi_idle",
                states,
                BUILTIN_PLATFORMS["skx"],
                title="acpi_idle table from a dump",
            )
            based_on = None
        else:
            platform, based_on = known, None
            notes.append("haltpoll's table differs from the driver's: simulated with the driver's own")
        config = _config(platform, same, dump, notes, None)
        return Recognition(
            based_on=based_on,
            variant=[],
            driver=driver,
            governor=dump.governor,
            family_modelled=False,
            platform=platform,
            config=config,
            notes=notes,
            message=f"{driver}: not intel_idle; simulated at the OS level, its hardware not modelled",
        )
    if driver != "intel_idle":
        raise ValueError(
            f"driver: unknown cpuidle driver {driver!r} (intel_idle, acpi_idle, haltpoll or none)"
        )

    names = [s.name for s in dump.states[1:]]
    if names and all(_ACPI_NAME.match(n) for n in names):
        states = intel_idle_acpi_states(_cst(dump))
        platform = driver_platform(
            "intel_idle-acpi",
            "intel_idle",
            states,
            BUILTIN_PLATFORMS["skx"],
            title="intel_idle on the firmware's _CST (C<n>_ACPI)",
        )
        platform = platform.model_copy(
            update={
                "notes": [
                    *platform.notes,
                    "States from _CST: no native table for this model, or intel_idle.no_native=1.",
                ]
            }
        )
        config = _config(platform, False, dump, notes, None)
        return Recognition(
            based_on=None,
            variant=["acpi-cst"],
            driver=driver,
            governor=dump.governor,
            family_modelled=False,
            platform=platform,
            config=config,
            notes=notes,
            message="intel_idle with the firmware's _CST states (C<n>_ACPI): no built-in table",
        )

    found: list[tuple[int, str, list[str], list[str]]] = []
    for pid, table in sorted(BUILTIN_PLATFORMS.items()):
        if table.driver != "intel_idle" or not _models_match(table, dump):
            continue
        explained = _explain(dump, table, _uses_acpi(table, dump))
        if explained is not None:
            variants, kept = explained
            found.append((len(variants), pid, variants, kept))
    if not found:
        return Recognition(
            based_on=None,
            variant=[],
            driver=driver,
            governor=dump.governor,
            family_modelled=False,
            platform=BUILTIN_PLATFORMS["skx"],
            config={},
            notes=notes,
            message="no built-in intel_idle table explains this table (nor a variant the kernel makes "
            "of one)",
        )
    found.sort()
    _, pid, variants, kept = found[0]
    if len(found) > 1 and found[1][0] == found[0][0]:
        notes.append(f"as well explained by {found[1][1]!r}; {pid!r} taken (the first by name)")
    base = BUILTIN_PLATFORMS[pid]
    limit = "PC2" if "pc6-off" in variants else None
    if limit:
        notes.append(
            f"{pid}'s PC6-off table means a package C-state limit of PC0 or PC2, which the dump cannot tell "
            "apart: PC2 is taken (inferred)"
        )
    if any(v.startswith("ivt-") for v in variants) and dump.packages is None:
        notes.append("ivt's multi-socket table: the run is given the package count it implies")
    # The states the dump lacks are not simulated: a table of the kept ones on the base's model.
    builtin = len(kept) == len(base.states) - 1 and not any(v.startswith("ivt-") for v in variants)
    if builtin:
        platform = base
    else:
        figures = {s.name: (s.latency_us, s.residency_us) for s in dump.states}
        states = []
        for s in base.states:
            if s.is_poll or s.name in kept:
                if s.name in kept and "pc6-off" not in variants:
                    lat, res = figures[s.name]
                    s = s.model_copy(
                        update={"exit_latency_us": float(lat or 0), "target_residency_us": float(res or 0)}
                    )
                states.append(s)
        platform = custom_platform(f"{pid}-dump", states, based_on=base, title=f"{pid} as the dump has it")
        platform = platform.model_copy(
            update={"family_modelled": base.family_modelled, "kernel_table": base.kernel_table}
        )
    config = _config(platform, builtin, dump, notes, limit)
    if any(v == "ivt-4s" for v in variants) and config["topology"]["sockets"] < 3:
        notes.append("the dump's ivt-4s table implies 3-4 packages, but its layout says fewer")
    desc = f"{pid} ({base.title})" + (f", {', '.join(variants)}" if variants else "")
    return Recognition(
        based_on=pid,
        variant=variants,
        driver=driver,
        governor=dump.governor,
        family_modelled=base.family_modelled,
        platform=platform,
        config=config,
        notes=notes,
        message=f"the table is {desc}",
    )
