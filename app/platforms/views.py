"""Loaders shared by the platform pages and their JSON twins; creating a custom table."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import ValidationError
from sqlalchemy.orm import Session

from app.errors import Conflict, InvalidInput, NotFound
from app.platforms import store
from app.schemas import PlatformCreate, PlatformList, PlatformRead
from engine import BUILTIN_PLATFORMS, Platform, custom_platform, load_platform
from engine.config import config_errors

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
    except ValidationError as exc:
        errors = []
        for e in config_errors(exc):
            loc = list(e["loc"])  # type: ignore[call-overload]
            if poll_added and len(loc) >= 2 and loc[0] == "states" and isinstance(loc[1], int) and loc[1] > 0:
                loc[1] -= 1  # the user's list has no POLL row: point at their index
            errors.append({**e, "loc": ["body", *loc]})
        raise InvalidInput(errors) from None
    row = store.create_platform(
        session,
        name=body.name,
        title=body.title,
        based_on=body.based_on,
        states=orjson.dumps([s.model_dump(mode="json") for s in body.states]).decode(),
        table=table.model_dump_json(),
    )
    return _custom_read(row)
