"""Platforms: the built-in C-state tables (with provenance), users' custom ones, and tables imported
from real machines. Loaders shared by the platform pages and their JSON twins; creating a custom
table; resolving a run's platform id to its table.

Importing a machine: a sysfs dump becomes a stored custom platform, with what was recognised, its
topology and its counter snapshot kept beside the table (`CustomPlatform.machine`). One function
stores (`import_dump`) and one builds the config that simulates the machine's table
(`simulation_config`); the API, the page form and `idlelab platforms import` all call them.
"""

from __future__ import annotations

import copy
import gzip
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, get_args

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.orm import Session

from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.inputs import no_nul_strings
from app.core.web import url_for
from app.platforms import store
from app.platforms.machine import (
    CounterSummary,
    TableMatch,
    as_registered,
    counter_summary,
    machine_platform,
    recognise_dump,
    run_topology,
)
from app.platforms.sysfs import DumpError, SysfsDump, Topology, parse_dump
from engine import BUILTIN_PLATFORMS, CState, Platform, custom_platform, load_platform
from engine.config import GovernorName, config_errors, unknown_platform_message
from engine.intel_idle_table import TableStringError, apply_table_string, table_string
from engine.platforms import KNOWN_FLAGS, Param
from engine.table_rules import CPUIDLE_DESC_LEN, MAX_ENTRY_COST_NS, POWER_RANGE, table_errors
from engine.twin import CounterError, MachineCounters, unfit_reasons

# The cost model's parameters as the platform page and the new-run form label them.
COST_LABELS: dict[str, tuple[str, str]] = {
    "tsc_mhz": ("TSC frequency", "MHz"),
    "line_same_socket_ns": ("Cache-line transfer, same socket", "ns"),
    "line_other_socket_ns": ("Cache-line transfer, other socket", "ns"),
    "call_setup_cycles": ("smp_call_function_single setup", "cycles"),
    "apic_send_same_socket_cycles": ("APIC IPI send, same socket", "cycles"),
    "apic_send_other_socket_cycles": ("APIC IPI send, other socket", "cycles"),
    "ipi_delivery_ns": ("IPI delivery to the target", "ns"),
    "irq_entry_ns": ("Interrupt entry to the handler", "ns"),
    "exit_housekeeping_ns": ("cpuidle exit housekeeping (h)", "ns"),
    "entry_housekeeping_ns": ("Idle entry and governor select", "ns"),
    "irq_direct_saving_ns": ("IRQ_ENABLE direct-interrupt saving", "ns"),
    "sched_switch_ns": ("Idle exit and switch to the woken task", "ns"),
    "llc_hit_ns": ("LLC hit (the line's last writer in core C3 or deeper)", "ns"),
    "spec_ctrl_write_ns": ("SPEC_CTRL write around MWAIT (IBRS states, SMT on)", "ns"),
}


def _value_within(low: float, high: float) -> dict[str, Any]:
    """A `Param` field's schema beside its `$ref`: the range `table_errors` holds its value to."""
    return {"properties": {"value": {"minimum": low, "maximum": high}}}


class CStateCreate(CState):
    """A state as a custom table gives it: its `desc` bounded in the schema as the engine bounds it,
    and its cost and power within the ranges the engine holds a table to (`table_errors`)."""

    desc: Annotated[str, Field(max_length=CPUIDLE_DESC_LEN)] = ""
    flags: list[Annotated[str, Field(json_schema_extra={"enum": sorted(KNOWN_FLAGS)})]] = Field(
        default_factory=list, description="intel_idle's CPUIDLE_FLAG_* names (include/linux/cpuidle.h)."
    )
    entry_cost_ns: Param = Field(
        default_factory=CState.model_fields["entry_cost_ns"].default_factory,
        json_schema_extra=_value_within(0, MAX_ENTRY_COST_NS),
    )
    power_watts: Param = Field(
        default_factory=CState.model_fields["power_watts"].default_factory,
        description=CState.model_fields["power_watts"].description,
        json_schema_extra=_value_within(*POWER_RANGE),
    )


# The body gives `states`, or `intel_idle_table` with `base`: one of the two, said in the schema.
_STATES_OR_STRING = {
    "oneOf": [
        {
            "required": ["states"],
            "properties": {"states": {"type": "array"}, "intel_idle_table": {"type": "null"}},
        },
        {
            "required": ["intel_idle_table", "base"],
            "properties": {
                "intel_idle_table": {"type": "string"},
                "base": {"type": "string"},
                "states": {"type": "null"},
            },
        },
    ]
}


def _platform_create_schema(schema: dict[str, Any], model: type | None = None) -> None:
    schema.update(copy.deepcopy(_STATES_OR_STRING))
    no_nul_strings(schema)


class PlatformCreate(BaseModel):
    """Body of `POST /api/platforms`: a custom C-state table on a built-in platform's cost model,
    given as `states` or as an `intel_idle.table=` string on a `base` table.

    POLL is added as state 0 when `states` does not start with it. Exit latencies and target
    residencies must not decrease. A string is parsed and validated as the kernel does (each
    latency and residency strictly greater than the previous state's, over the whole table); where
    the kernel would ignore it, the 422 quotes the kernel's message.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_platform_create_schema)

    name: Annotated[
        str,
        Field(
            min_length=1,
            max_length=48,
            pattern=r"^[a-z0-9][a-z0-9_\-]*$",
            description="The custom platform's id (lower case, digits, - and _); runs name it in `platform`.",
        ),
    ]
    title: Annotated[str, Field(max_length=200)] = ""
    based_on: str = Field(
        default="skx",
        description="Built-in platform whose topology, costs and power it uses.",
        json_schema_extra={"enum": sorted(BUILTIN_PLATFORMS)},
    )
    states: Annotated[list[CStateCreate] | None, Field(min_length=1, max_length=32)] = None
    base: str | None = Field(
        default=None,
        description="With `intel_idle_table`: the built-in intel_idle platform whose states it adjusts.",
        json_schema_extra={"enum": [*sorted(BUILTIN_PLATFORMS), None]},
    )
    # Empty, the kernel ignores it (the 422 quotes it): the schema says so; the rest of its parsing
    # is the kernel's (`engine.intel_idle_table`), checked by the server.
    intel_idle_table: Annotated[
        str, Field(max_length=1024, json_schema_extra={"minLength": 1})
    ] | None = Field(
        default=None,
        description="An `intel_idle.table=` value (`name:latency:residency`, comma-separated), e.g. "
        '"C1:1:1,C1E:4:4,C6:170:600", applied to `base` as the kernel applies it at boot.',
    )


class PlatformRead(BaseModel):
    name: str
    title: str
    custom: bool
    based_on: str | None
    created_at: datetime | None
    table: Platform
    machine: dict[str, Any] | None = Field(
        default=None,
        description="For a platform imported from a sysfs dump: what was recognised (equal to, variant "
        "of or closest built-in), the topology (and whether inferred), the measured counter snapshot.",
    )
    variant: list[str] = Field(
        default_factory=list,
        description="An imported machine's differences from `based_on`, as the kernel explains them "
        "(`pc6-off`, `acpi-cst`, `acpi-off:<states>`, `mwait-subset:<states>`, `unusable:<states>`...).",
    )
    driver: str = Field(description="The cpuidle driver: intel_idle, acpi_idle, haltpoll or none.")
    governor: str | None = Field(
        default=None, description="An imported machine's governor, as its dump names it."
    )
    family_modelled: bool = Field(
        description="False where idlelab has no hardware model of the family (its runs say so)."
    )
    intel_idle_table: str | None = Field(
        description="The table as an `intel_idle.table=` string, or null (then `intel_idle_table_error`)."
    )
    intel_idle_table_error: str | None = Field(description="Why no valid `intel_idle.table=` string exists.")


class PlatformList(BaseModel):
    platforms: list[PlatformRead]


def _table_facts(table: Platform) -> dict[str, Any]:
    string = table_string(table)
    return {
        "driver": table.driver,
        "family_modelled": table.family_modelled,
        "intel_idle_table": string.string,
        "intel_idle_table_error": string.error,
    }


def _builtin_read(p: Platform) -> PlatformRead:
    return PlatformRead(
        name=p.name, title=p.title, custom=False, based_on=None, created_at=None, table=p, **_table_facts(p)
    )


def _custom_read(row: Any) -> PlatformRead:
    machine = orjson.loads(row.machine) if row.machine else None
    table = as_registered(Platform.model_validate_json(row.table), machine)
    facts = _table_facts(table)
    based_on = row.based_on
    if machine is not None and "recognition" in machine:
        rec = machine["recognition"]
        based_on = rec["based_on"]
        facts.update(variant=rec["variant"], governor=rec["governor"], family_modelled=rec["family_modelled"])
    return PlatformRead(
        name=row.name,
        title=row.title or table.title,
        custom=True,
        based_on=based_on,
        created_at=row.created_at,
        table=table,
        machine=machine,
        **facts,
    )


def platforms_view(session: Session) -> PlatformList:
    """Built-in tables (by name), then custom ones."""
    builtin = [_builtin_read(BUILTIN_PLATFORMS[n]) for n in sorted(BUILTIN_PLATFORMS)]
    return PlatformList(platforms=builtin + [_custom_read(r) for r in store.list_platforms(session)])


def platform_view(session: Session, name: str) -> PlatformRead:
    if name in BUILTIN_PLATFORMS:
        return _builtin_read(BUILTIN_PLATFORMS[name])
    row = store.get_platform(session, name)
    if row is None:
        raise NotFound(f"platform {name!r} not found")
    return _custom_read(row)


def _as_given(error: dict[str, Any], poll_added: bool) -> dict[str, Any]:
    """An error under `body`, a state's index counted as the user gave them (without POLL)."""
    loc = list(error["loc"])
    if poll_added and len(loc) >= 2 and loc[0] == "states" and isinstance(loc[1], int) and loc[1] > 0:
        loc[1] -= 1
    return {**error, "loc": ["body", *loc]}


def create_platform(session: Session, body: PlatformCreate, *, limit: int) -> PlatformRead:
    """Store a custom table. 422 names the field (indices count the states as the user gave them);
    409 if the name is taken or `limit` custom platforms are stored."""
    if body.based_on not in BUILTIN_PLATFORMS:
        raise InvalidInput.one(
            ["body", "based_on"],
            unknown_platform_message(body.based_on),
        )
    if (body.states is None) == (body.intel_idle_table is None):
        raise InvalidInput.one(
            ["body"], "give `states` or `intel_idle_table` (with `base`), not both", "missing"
        )
    if taken(session, body.name):
        raise Conflict(f"platform {body.name!r} already exists; choose another name")
    if body.intel_idle_table is not None:
        return _create_from_string(session, body, body.intel_idle_table, limit)
    assert body.states is not None
    poll_added = body.states[0].name != "POLL"
    try:
        table = custom_platform(
            body.name, body.states, based_on=load_platform(body.based_on), title=body.title
        )
        errors = table_errors(table, [])
    except ValidationError as exc:
        errors = config_errors(exc)  # type: ignore[assignment]
    if errors:
        raise InvalidInput([_as_given(e, poll_added) for e in errors])
    row = store.create_platform(session, table, based_on=body.based_on, limit=limit, states=body.states)
    return _custom_read(row)


def _create_from_string(session: Session, body: PlatformCreate, string: str, limit: int) -> PlatformRead:
    """A custom platform that is `base` under `intel_idle.table=<string>`."""
    if body.base is None or body.base not in BUILTIN_PLATFORMS:
        message = "the table the string adjusts" if body.base is None else unknown_platform_message(body.base)
        raise InvalidInput.one(["body", "base"], message, "missing" if body.base is None else "value_error")
    base = load_platform(body.base)
    try:
        table = apply_table_string(base, string, name=body.name)
    except TableStringError as exc:
        raise InvalidInput.one(
            ["body", "intel_idle_table"], f"the kernel ignores this string: {exc.message}", "value_error"
        ) from None
    if body.title:
        table = table.model_copy(update={"title": body.title})
    errors = table_errors(table, [])
    if errors:
        raise InvalidInput([{**e, "loc": ["body", *e["loc"]]} for e in errors])
    row = store.create_platform(session, table, based_on=body.base, limit=limit)
    return _custom_read(row)


def resolve_table(session: Session, name: Any, inline: Any, loc: Sequence[str | int]) -> Platform | None:
    """A custom platform's stored table for a run that names it (None when the platform is built
    in, or its table is given inline); `InvalidInput` at `loc` for a name that is neither."""
    if not isinstance(name, str) or name in BUILTIN_PLATFORMS or inline is not None:
        return None
    row = store.get_platform(session, name)
    if row is None:
        custom = [p.name for p in store.list_platforms(session)]
        raise InvalidInput.one(list(loc), unknown_platform_message(name, custom))
    return Platform.model_validate_json(row.table)


# The paths that take a dump as their body (their own body limit: `Settings.import_max_body_bytes`).
IMPORT_PATHS = ("/api/platforms/import", "/platforms/import")
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,47}$")
# A machine's own simulation: the default mixed load on its table and topology for one simulated
# second (a 96-CPU machine simulates in about 0.01 s of wall time).
SIMULATED_MS = 1000.0


class Recognised(BaseModel):
    """The engine's recognition of an imported dump, in the import answer's contract fields."""

    based_on: str | None
    variant: list[str]
    driver: str
    governor: str | None
    family_modelled: bool
    message: str
    notes: list[str] = []


class MachineView(BaseModel):
    """What an imported dump said, kept with its custom platform."""

    model_config = ConfigDict(extra="forbid")

    recognised: TableMatch
    recognition: Recognised | None = None  # None in machines imported before recognition
    config: dict[str, Any] | None = None  # the run that is this machine (its platform named by the row)
    borrowed_from: str = ""  # the built-in platform costs and power come from, labelled `estimate`
    topology: Topology
    driver: str | None = None
    governor: str | None = None
    model_name: str | None = None
    cpu_family: int | None = None
    cpu_model: int | None = None
    kernel: str | None = None
    collected_at: str | None = None
    disabled_states: list[str] = []  # engine state names the user disabled on every CPU
    # What a twin needs beside the counters: cmdline, hz, nohz_full, isolated, pm_qos_resume_latency_us,
    # intel_c1_demotion, window_s (the dump's fields of those names; absent where it does not say).
    twin: dict[str, Any] = {}
    counters: CounterSummary
    notes: list[str] = []
    # What makes the counters unfit for a twin (engine.twin.unfit_reasons): kind, message, state, cpus.
    unfit: list[dict[str, Any]] = []


def unfit_for_twin(dump: SysfsDump) -> list[dict[str, Any]]:
    """Why these counters would mislead a twin, for the import to say (none: [])."""
    try:
        return [u.model_dump() for u in unfit_reasons(MachineCounters.from_dump(dump))]
    except CounterError as exc:  # honest counters a twin still refuses: its fit answers 422 too
        return [{"kind": "counters", "message": str(exc), "state": None, "cpus": []}]


def dump_error(err: DumpError) -> InvalidInput:
    """A 422 naming the dump's line (`loc`: body, line, N) and the reason."""
    loc: list[str | int] = ["body"] + (["line", err.line] if err.line is not None else [])
    return InvalidInput.one(loc, str(err), "dump_invalid")


def derive_name(dump: SysfsDump) -> str:
    """A platform id from the CPU model name:
    "Intel(R) Xeon(R) Gold 6254 CPU @ 3.10GHz" -> "xeon-gold-6254"."""
    text = (dump.model_name or "").lower()
    text = re.sub(r"\((r|tm)\)|intel|cpu|@.*$", " ", text)
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:40].strip("-")
    return slug or "machine"


def unique_name(session: Session, base: str) -> str:
    """`base`, or `base-2`, `base-3`... whichever no platform has yet."""
    base = base[:44]
    name, n = base, 1
    while taken(session, name):
        n += 1
        name = f"{base}-{n}"
    return name


def import_dump(
    session: Session, data: bytes | str, *, limit: int, name: str | None = None, title: str = ""
) -> tuple[Platform, MachineView]:
    """Parse, recognise and store a dump as a custom platform. Raises `InvalidInput` (422, the line
    and reason) for a bad dump or name, `Conflict` (409) for a name that is taken or `limit` custom
    platforms stored; stores nothing then."""
    if name is not None and not NAME_PATTERN.match(name):
        raise InvalidInput.one(
            ["query", "name"], "1 to 48 of a-z, 0-9, - and _, starting with a letter or digit", "value_error"
        )
    if len(title) > 200:
        raise InvalidInput.one(["query", "title"], "at most 200 characters", "too_long")
    try:
        dump = parse_dump(data)
        topology = run_topology(dump.topology)
        rec, match = recognise_dump(dump, topology)
        if name is None:
            name = unique_name(session, derive_name(dump))
        elif taken(session, name):
            raise Conflict(f"platform {name!r} already exists; choose another name")
        table = machine_platform(dump, rec, match, name, title=title)
        counters = counter_summary(dump)
    except DumpError as err:
        raise dump_error(err) from None
    errors = table_errors(table, [])
    if errors:
        raise InvalidInput([{**e, "loc": ["body", *e["loc"]]} for e in errors])
    config = _machine_run(dump, rec.config, table, topology)
    view = MachineView(
        recognised=match,
        recognition=Recognised(
            based_on=rec.based_on,
            variant=rec.variant,
            driver=rec.driver,
            governor=rec.governor,
            family_modelled=rec.family_modelled,
            message=rec.message,
            notes=rec.notes,
        ),
        config=config,
        borrowed_from=match.builtin,
        topology=dump.topology,
        driver=dump.driver,
        governor=dump.governor,
        model_name=dump.model_name,
        cpu_family=dump.cpu_family,
        cpu_model=dump.cpu_model,
        kernel=dump.kernel,
        collected_at=dump.collected_at,
        disabled_states=list(config.get("states", {}).get("disabled", [])),
        counters=counters,
        notes=list(dump.notes),
        unfit=unfit_for_twin(dump),
        twin={
            k: v
            for k in (
                "cmdline",
                "hz",
                "nohz_full",
                "isolated",
                "pm_qos_resume_latency_us",
                "intel_c1_demotion",
                "window_s",
            )
            if (v := getattr(dump, k)) not in (None, {})
        },
    )
    # The row's based_on is the built-in whose costs the table has (the answer's is recognition's).
    machine = view.model_dump_json()
    store.create_platform(
        session, table, based_on=match.builtin, limit=limit, machine=machine, dump=gzipped(data)
    )
    return table, view


def gzipped(data: bytes | str) -> bytes:
    """A dump as stored beside its platform (a twin reads its per-CPU counters again): gzip."""
    raw = data.encode() if isinstance(data, str) else data
    return raw if raw[:2] == b"\x1f\x8b" else gzip.compress(raw, mtime=0)


def _machine_run(
    dump: SysfsDump, recognised: dict[str, Any], table: Platform, topology: dict[str, Any]
) -> dict[str, Any]:
    """The config that is the machine: recognition's (its governor, disabled states and package
    limit) on the stored table and the dump's online layout; for a table nothing explains, the
    same from the dump directly."""
    config = {k: v for k, v in recognised.items() if k != "platform_table"}
    config["platform"] = table.name
    config["topology"] = topology
    if not recognised and dump.states:
        offset = len(table.states) - len(dump.states)  # POLL added in front when the dump has none
        disabled = [table.states[offset + s.index].name for s in dump.states if s.disabled]
        if disabled:
            config["states"] = {"disabled": disabled}
        if dump.governor in get_args(GovernorName):
            config["governor"] = {"name": dump.governor}
    return config


def simulation_config(name: str, view: MachineView) -> dict[str, Any]:
    """The run that simulates an imported machine: its online CPUs, governor, disabled states and
    package limit (each still changeable), for `SIMULATED_MS`."""
    if view.config is not None:
        return {**view.config, "platform": name, "duration_ms": SIMULATED_MS}
    # A machine imported before recognition: its table, layout and disabled states.
    config: dict[str, Any] = {
        "platform": name,
        "duration_ms": SIMULATED_MS,
        "topology": run_topology(view.topology),
    }
    if view.disabled_states:
        config["states"] = {"disabled": list(view.disabled_states)}
    return config


def machine_config(session: Session, name: str) -> dict[str, Any]:
    """The simulation config of a platform: an imported one's topology and disabled states."""
    view = platform_view(session, name)
    if view.machine is None:
        return {"platform": name, "duration_ms": SIMULATED_MS}
    return simulation_config(name, MachineView.model_validate(view.machine))


def _simulated(result: dict[str, Any]) -> dict[str, Any]:
    """A run's figures in the snapshot's terms: residency share and above/below ratios per state,
    and per CPU the share of each state."""
    states = {}
    for s in result["states"]:
        usage = s["usage"]
        states[s["name"]] = {
            "share": s["residency"],
            "above_ratio": s["above"] / usage if usage else None,
            "below_ratio": s["below"] / usage if usage else None,
        }
    names = result["per_cpu_state_names"]
    per_cpu = [dict(zip(names, row, strict=False)) for row in result["per_cpu_residency"]]
    turbostat = result.get("hardware", {}).get("system", {}).get("turbostat", {})
    package = {k: v / 100 for k, v in turbostat.items() if k.startswith(("Pkg%pc", "Mod%c"))}
    return {
        "states": states,
        "per_cpu": per_cpu,
        "idle_share": 1.0 - result["busy_share"],
        "package": package,
    }


def machine_context(session: Session, view: dict[str, Any], run_id: str | None) -> dict[str, Any]:
    """`machine` (the snapshot, or None) and `sim` (the run's status and, once done, its figures)."""
    if view.get("machine") is None:
        return {"machine": None, "sim": None}
    sim = None
    if run_id:
        run = store.run_status_and_result(session, run_id)
        if run is None:
            raise NotFound(f"run {run_id!r} not found")
        status, result_json = run
        sim = {"id": run_id, "status": status, "url": url_for("run_page", run_id=run_id)}
        result = orjson.loads(result_json) if result_json is not None else None
        if result is not None and result.get("platform") == view["name"]:
            sim.update(_simulated(result))
    return {"machine": view["machine"], "sim": sim}


def taken(session: Session, name: str) -> bool:
    """Whether a built-in or custom platform has this name."""
    return name in BUILTIN_PLATFORMS or store.get_platform(session, name) is not None
