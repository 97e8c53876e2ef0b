"""Importing a real machine: a sysfs dump becomes a stored custom platform, with what was recognised,
its topology and its counter snapshot kept beside the table (`CustomPlatform.machine`).

One function stores (`import_dump`) and one builds the run that simulates the machine's table
(`simulation_config`); the API, the page form and `idlelab platforms import` all call them.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict
from sqlalchemy.orm import Session

from app.errors import Conflict, InvalidInput
from app.platforms import store
from app.platforms.machine import CounterSummary, TableMatch, build_platform, counter_summary, match_builtin
from app.platforms.sysfs import DumpError, SysfsDump, Topology, parse_dump
from app.platforms.views import table_errors
from engine import BUILTIN_PLATFORMS, Platform

# The paths that take a dump as their body (their own body limit: `Settings.import_max_body_bytes`).
IMPORT_PATHS = ("/api/platforms/import", "/platforms/import")
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,47}$")
# A machine's own simulation: the default mixed load on its table and topology for one simulated
# second (a 96-CPU machine simulates in about 0.01 s of wall time).
SIMULATED_MS = 1000.0


class MachineView(BaseModel):
    """What an imported dump said, kept with its custom platform."""

    model_config = ConfigDict(extra="forbid")

    recognised: TableMatch
    borrowed_from: str = ""  # the built-in platform costs and power come from, labelled `estimate`
    topology: Topology
    driver: str | None = None
    governor: str | None = None
    model_name: str | None = None
    kernel: str | None = None
    collected_at: str | None = None
    disabled_states: list[str] = []  # engine state names the user disabled on every CPU
    counters: CounterSummary
    notes: list[str] = []


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
    while name in BUILTIN_PLATFORMS or store.get_platform(session, name) is not None:
        n += 1
        name = f"{base}-{n}"
    return name


def import_dump(
    session: Session, data: bytes | str, *, name: str | None = None, title: str = ""
) -> tuple[Platform, MachineView]:
    """Parse, recognise and store a dump as a custom platform. Raises `InvalidInput` (422, the line
    and reason) for a bad dump or name, `Conflict` (409) for a name that is taken; stores nothing then."""
    if name is not None and not NAME_PATTERN.match(name):
        raise InvalidInput.one(
            ["query", "name"], "1 to 48 of a-z, 0-9, - and _, starting with a letter or digit", "value_error"
        )
    if len(title) > 200:
        raise InvalidInput.one(["query", "title"], "at most 200 characters", "too_long")
    try:
        dump = parse_dump(data)
        match = match_builtin(dump)
        if name is None:
            name = unique_name(session, derive_name(dump))
        elif name in BUILTIN_PLATFORMS or store.get_platform(session, name) is not None:
            raise Conflict(f"platform {name!r} already exists; choose another name")
        table = build_platform(dump, name, title=title)
        counters = counter_summary(dump)
    except DumpError as err:
        raise dump_error(err) from None
    errors = table_errors(table, [])
    if errors:
        raise InvalidInput([{**e, "loc": ["body", *e["loc"]]} for e in errors])
    offset = len(table.states) - len(dump.states)  # POLL added in front when the dump has none
    view = MachineView(
        recognised=match,
        borrowed_from=match.builtin,
        topology=dump.topology,
        driver=dump.driver,
        governor=dump.governor,
        model_name=dump.model_name,
        kernel=dump.kernel,
        collected_at=dump.collected_at,
        disabled_states=[table.states[s.index + offset].name for s in dump.states if s.disabled],
        counters=counters,
        notes=list(dump.notes),
    )
    store.create_platform(
        session,
        name=name,
        title=table.title,
        based_on=match.builtin,
        states=orjson.dumps([s.model_dump(mode="json") for s in table.states]).decode(),
        table=table.model_dump_json(),
        machine=view.model_dump_json(),
    )
    return table, view


def simulation_config(name: str, view: MachineView) -> dict[str, Any]:
    """The run that simulates an imported machine: its table and topology, its disabled states."""
    topo = view.topology
    config: dict[str, Any] = {"platform": name, "duration_ms": SIMULATED_MS}
    if not topo.inferred:
        config["topology"] = {
            "sockets": min(max(topo.sockets, 1), 8),
            "cores_per_socket": min(max(topo.cores_per_socket, 1), 256),
            "threads_per_core": min(max(topo.threads_per_core, 1), 2),
        }
    if view.disabled_states:
        config["states"] = {"disabled": list(view.disabled_states)}
    return config
