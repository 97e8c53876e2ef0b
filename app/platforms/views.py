"""Loaders shared by the platform pages and their JSON twins; creating a custom table."""

from __future__ import annotations

import math
from typing import Any

import orjson
from pydantic import ValidationError
from sqlalchemy.orm import Session

from app.errors import Conflict, InvalidInput, NotFound
from app.platforms import store
from app.schemas import PlatformCreate, PlatformList, PlatformRead
from engine import BUILTIN_PLATFORMS, Platform, custom_platform, load_platform
from engine.config import CostsConfig, PowerConfig, config_errors

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
    "spec_ctrl_write_ns": ("SPEC_CTRL write around MWAIT (IBRS states, SMT on)", "ns"),
}


def _builtin_read(p: Platform) -> PlatformRead:
    return PlatformRead(name=p.name, title=p.title, custom=False, based_on=None, created_at=None, table=p)


def _custom_read(row: Any) -> PlatformRead:
    table = Platform.model_validate_json(row.table)
    return PlatformRead(
        name=row.name,
        title=row.title or table.title,
        custom=True,
        based_on=row.based_on,
        created_at=row.created_at,
        table=table,
        machine=orjson.loads(row.machine) if row.machine else None,
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


def create_platform(session: Session, body: PlatformCreate) -> PlatformRead:
    """Store a custom table. 422 names the field (indices count the states as the user gave them);
    409 if the name is taken."""
    if body.based_on not in BUILTIN_PLATFORMS:
        raise InvalidInput.one(
            ["body", "based_on"],
            f"unknown platform {body.based_on!r}; built-in tables are {', '.join(sorted(BUILTIN_PLATFORMS))}",
        )
    if body.name in BUILTIN_PLATFORMS or store.get_platform(session, body.name) is not None:
        raise Conflict(f"platform {body.name!r} already exists; choose another name")
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
    row = store.create_platform(
        session,
        name=body.name,
        title=body.title,
        based_on=body.based_on,
        states=orjson.dumps([s.model_dump(mode="json") for s in body.states]).decode(),
        table=table.model_dump_json(),
    )
    return _custom_read(row)


# --- limits: the same for a custom table and for a table given inline in a run's config ---------

MAX_STATES = 32


def _bounds(model: Any, name: str) -> tuple[float, float]:
    """The (low, high) a config override of `name` accepts: a table's own value may not go further."""
    meta = model.model_fields[name].metadata
    low = next((m.ge if m.ge is not None else m.gt for m in meta if hasattr(m, "ge")), 0.0)
    high = next(m.le for m in meta if getattr(m, "le", None) is not None)
    return float(low or 0.0), float(high)


def _param_errors(value: float, low: float, high: float, loc: list[str | int]) -> list[dict[str, Any]]:
    if math.isfinite(value) and low <= value <= high:
        return []
    return [{"loc": loc, "msg": f"must be {low:g}..{high:g}, got {value!r}", "type": "value_error"}]


def table_errors(table: Platform, loc: list[str | int]) -> list[dict[str, Any]]:
    """Why a C-state table cannot be simulated: too many states, or a parameter that is not a
    finite number within what the config's own overrides accept (a negative power, an entry
    cost of 1e300 or a 1e-300 MHz clock would fail the run or make nonsense)."""
    if len(table.states) > MAX_STATES:
        msg = f"at most {MAX_STATES} states, got {len(table.states)}"
        return [{"loc": [*loc, "states"], "msg": msg, "type": "too_long"}]
    errors = []
    for name in CostsConfig.model_fields:
        low, high = _bounds(CostsConfig, name)
        low = max(low, MIN_TSC_MHZ) if name == "tsc_mhz" else low
        errors += _param_errors(getattr(table.costs, name).value, low, high, [*loc, "costs", name, "value"])
    watts = _bounds(PowerConfig, "busy_watts")
    errors += _param_errors(table.busy_watts.value, *watts, [*loc, "busy_watts", "value"])
    for i, s in enumerate(table.states):
        at = [*loc, "states", i]
        errors += _param_errors(s.power_watts.value, *watts, [*at, "power_watts", "value"])
        errors += _param_errors(s.entry_cost_ns.value, 0, MAX_ENTRY_COST_NS, [*at, "entry_cost_ns", "value"])
        if s.exit_latency_median_us is not None:
            median = s.exit_latency_median_us.value
            errors += _param_errors(median, 0, s.exit_latency_us, [*at, "exit_latency_median_us", "value"])
    return errors


# A TSC slower than 1 MHz, or an idle entry costing more than 10 ms, is a typo, not a platform.
MIN_TSC_MHZ = 1.0
MAX_ENTRY_COST_NS = 10_000_000.0
