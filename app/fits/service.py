"""Twins of imported machines: what a fit starts from (`prepare`: the platform's dump read again,
its per-CPU counters checked), submitting one (`submit`), the one loader of `/fits/{id}` and its
JSON twin (`fit_view`), and what-if runs on a finished twin (`submit_whatif`, `whatif_view`).

A fit is computed by `app.fits.runner` in the web process, its evaluations on the cluster; its row
holds its progress and history while it runs and the engine's `FitResult` once done.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.inputs import SimConfigSchema, check_id, no_nul_strings
from app.core.models import Fit, utcnow
from app.core.tokens import new_id, new_token
from app.fits import store
from app.platforms.service import MachineView, dump_error
from app.platforms.sysfs import DumpError, SysfsDump, parse_dump
from app.runs.lifecycle import RunSpec, Submitter
from app.runs.service import resolve_config, run_path
from engine import BUILTIN_PLATFORMS, Platform, engine_version
from engine.config import GovernorName
from engine.repeats import MAX_REPEATS, MIN_REPEATS
from engine.twin import CounterError, Figures, MachineCounters, figures
from engine.twin.fit import (
    DEFAULT_BUDGET,
    DEFAULT_SAMPLE,
    MAX_BUDGET,
    MIN_BUDGET,
    CrossValidation,
    Distance,
    HistoryPoint,
)
from engine.twin.objective import Miss

# fit_twin's HZ when the dump does not say (collect reads CONFIG_HZ; pepc's dumps lack it): an
# assumption, shown as one.
ASSUMED_HZ = 250
# A what-if keeps the machine: these config keys are the twin's, not a change a user makes on it.
MACHINE_KEYS = ("platform", "platform_table", "topology")
MAX_SEED = 2**63 - 1
# Said wherever a what-if shows figures a sysfs dump has no counters for.
NOT_IN_DUMP = (
    "a sysfs cpuidle dump holds per-state usage, time, above and below only: WakeLatency, package "
    "residency and power are not measured, so only the twin and the what-if have them"
)


class FitCreate(BaseModel):
    """Body of `POST /api/platforms/{name}/fit` (every field optional)."""

    model_config = ConfigDict(extra="forbid")

    seed: Annotated[
        int, Field(ge=0, le=MAX_SEED, json_schema_extra={"exclusiveMaximum": MAX_SEED + 1})
    ] = Field(
        default=1, description="The fit's seed: the same seed gives the same config and distance."
    )
    budget: Annotated[int, Field(ge=MIN_BUDGET, le=MAX_BUDGET)] = Field(
        default=DEFAULT_BUDGET, description="Evaluations the search may spend."
    )
    cpus: Annotated[int, Field(ge=2, le=512)] = Field(
        default=DEFAULT_SAMPLE, description="CPUs sampled per evaluation (seeded, stratified by class)."
    )
    unlisted: bool = Field(default=False, description="Only the fit's link finds it (and its what-ifs).")


class WhatIfCreate(BaseModel):
    """Body of `POST /api/fits/{id}/whatif`: changes to the twin's config, as a partial SimConfig
    (`{"governor": {"name": "teo"}, "states": {"disabled": ["C6"]}}`), merged into it."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)

    changes: Annotated[dict[str, Any], SimConfigSchema] = Field(
        default_factory=dict, description="A partial SimConfig."
    )
    repeats: Annotated[int, Field(ge=MIN_REPEATS, le=MAX_REPEATS)] = Field(
        default=1, description="Seeds of the what-if run and of the twin's run beside it (repeats)."
    )
    title: Annotated[str, Field(max_length=200)] = ""


class FitSubmitted(BaseModel):
    """The answer to `POST /api/platforms/{name}/fit`."""

    id: str
    url: str
    status: str
    delete_token: str = Field(description="Shown once: DELETE /api/fits/{id} needs it (X-Delete-Token).")


class FitRow(BaseModel):
    """A fit in `GET /api/fits`."""

    id: str
    url: str
    platform: str
    status: str
    progress: float
    seed: int
    budget: int
    cpus: int = Field(description="The CPU sample's size asked for.")
    evaluations: int | None
    distance_total: float | None
    goal_met: bool | None
    created_at: str


class FitList(BaseModel):
    fits: list[FitRow]
    total: int
    limit: int
    offset: int


class WhatIfRef(BaseModel):
    run: str = Field(description="The what-if run.")
    twin_run: str = Field(description="The twin's own run beside it (same seed).")
    changes: dict[str, Any]
    url: str
    run_url: str
    status: str | None


class FitRead(FitRow):
    """`GET /api/fits/{id}`: DESIGN section 7's fields (null until the fit is done, but `progress`
    and `history`), and what the fit page shows beside them."""

    error: str | None
    unlisted: bool
    engine_version: str
    started_at: str | None
    finished_at: str | None
    history: list[HistoryPoint]
    optimizer: dict[str, str] | None
    objective: dict[str, Any] | None
    measured: Figures | None
    fitted: Figures | None
    distance: Distance | None
    misses: list[Miss] | None
    cross_validation: CrossValidation | None
    config: dict[str, Any] | None = Field(description="The fitted SimConfig on the whole machine.")
    sampled_cpus: list[int] | None
    classes: dict[str, int] | None = Field(description="Each measured CPU's class.")
    parameters: dict[str, float] | None = Field(description="The fitted load's parameters.")
    unseparated: list[str] | None = Field(description="Parameters the counters leave undetermined.")
    check_seed: int | None = Field(description="The seed of the final whole-machine check.")
    inputs: dict[str, Any] | None = Field(
        description="The governor and HZ the twin ran, the counters' window."
    )
    whatifs: list[WhatIfRef]


class WhatIfSubmitted(BaseModel):
    """The answer to `POST /api/fits/{id}/whatif`: the what-if run's `RunSubmitted` fields."""

    id: str
    url: str
    status: str
    delete_token: str
    reused_from: str | None
    fit_id: str
    twin_run: str
    whatif_url: str


@dataclass(frozen=True)
class FitInputs:
    """What a fit of an imported machine starts from."""

    counters: MachineCounters
    table: Platform
    governor: str
    hz: int
    hz_assumed: bool
    dump: SysfsDump

    def describe(self) -> dict[str, Any]:
        return {
            "governor": self.governor,
            "hz": self.hz,
            "hz_assumed": self.hz_assumed,
            "cpus": len(self.counters.cpus),
            "window_s": self.dump.window_s,
            "uptime_s": self.dump.uptime_s,
            "kernel": self.dump.kernel,
        }


def fit_path(fit_id: str) -> str:
    return f"/fits/{fit_id}"


def whatif_path(fit_id: str, run_id: str) -> str:
    return f"/fits/{fit_id}/whatif/{run_id}"


def _counter_error(exc: CounterError) -> InvalidInput:
    """The engine's reason as a 422: its message starts with the field it is about."""
    text = str(exc)
    field, _, _ = text.partition(":")
    return InvalidInput.one(["counters", field.strip() or "counters"], text, "counters_invalid")


def prepare(session: Session, name: str) -> FitInputs:
    """The platform's counters and table, checked as a fit needs them: `NotFound` for no such
    platform, `InvalidInput` for one without counters or counters that cannot be fitted."""
    if name in BUILTIN_PLATFORMS:
        raise InvalidInput.one(
            ["path", "name"],
            f"{name!r} is a built-in table: it has no measured counters to fit; import the dump of a machine "
            "(POST /api/platforms/import) and fit that platform",
            "no_counters",
        )
    found = store.platform_dump(session, name)
    if found is None:
        raise NotFound(f"platform {name!r} not found")
    if found.dump is None:
        raise InvalidInput.one(
            ["path", "name"],
            f"platform {name!r} has no imported counters (a table typed in, or imported before dumps "
            "were kept): import the dump of that machine again",
            "no_counters",
        )
    try:
        dump = parse_dump(found.dump)
    except DumpError as err:
        raise dump_error(err) from None
    table = Platform.model_validate_json(found.table)
    try:
        counters = MachineCounters.from_dump(dump)
        # fit_twin refuses these too when it starts; checked here, they answer the POST.
        if counters.states != [s.name for s in table.states]:
            raise CounterError(
                f"states: the counters have {', '.join(counters.states)} but the table has "
                f"{', '.join(s.name for s in table.states)}"
            )
        if sum(not d for d in counters.disabled) < 2:
            raise CounterError("states: a twin needs at least two enabled states (nothing to choose from)")
    except CounterError as exc:
        raise _counter_error(exc) from None
    view = MachineView.model_validate_json(found.machine) if found.machine else None
    governor = _governor(view, dump)
    return FitInputs(counters, table, governor, dump.hz or ASSUMED_HZ, dump.hz is None, dump)


def _governor(view: MachineView | None, dump: SysfsDump) -> str:
    """The machine's governor as the import recognised it (else the dump's, else menu)."""
    recognised = (view.config or {}).get("governor", {}).get("name") if view is not None else None
    for candidate in (recognised, dump.governor):
        if candidate in get_args(GovernorName):
            return str(candidate)
    return "menu"


def submit(session: Session, name: str, body: FitCreate) -> dict[str, Any]:
    """Check the platform's counters and queue a fit; its id and delete token (shown once)."""
    prepare(session, name)
    token, token_hash = new_token()
    fit = Fit(
        id=new_id(),
        platform=name,
        status="queued",
        progress=0.0,
        unlisted=body.unlisted,
        delete_token_hash=token_hash,
        seed=body.seed,
        budget=body.budget,
        cpus=body.cpus,
        engine_version=engine_version(),
        created_at=utcnow(),
        history="[]",
        whatifs="[]",
    )
    session.add(fit)
    session.flush()
    return {"id": fit.id, "status": "queued", "delete_token": token}


# ------------------------------------------------------------------------------------- views

RESULT_FIELDS = (
    "optimizer",
    "objective",
    "measured",
    "fitted",
    "distance",
    "misses",
    "cross_validation",
    "config",
    "classes",
    "parameters",
    "unseparated",
    "check_seed",
    "goal_met",
    "inputs",
)


def find_fit(session: Session, fit_id: str) -> Fit | None:
    """The fit, or None; an id no fit can have is a 404 before any query."""
    check_id(fit_id, "fit")
    return store.get_fit(session, fit_id)


def get_fit(session: Session, fit_id: str) -> Fit:
    fit = find_fit(session, fit_id)
    if fit is None:
        raise NotFound(f"fit {fit_id!r} not found")
    return fit


def summary(fit: Fit) -> dict[str, Any]:
    """A fit's list row."""
    return {
        "id": fit.id,
        "url": fit_path(fit.id),
        "platform": fit.platform,
        "status": fit.status,
        "progress": fit.progress,
        "seed": fit.seed,
        "budget": fit.budget,
        "cpus": fit.cpus,
        "evaluations": fit.evaluations,
        "distance_total": fit.distance,
        "goal_met": fit.goal_met,
        "created_at": fit.created_at.isoformat(),
    }


def fit_view(session: Session, fit_id: str) -> dict[str, Any]:
    """`GET /api/fits/{id}` and the page's data: DESIGN 7's fields (null until done, but the
    progress and history), the CPUs sampled, and the what-if runs made from it."""
    fit = get_fit(session, fit_id)
    result = orjson.loads(fit.result) if fit.result else {}
    view = summary(fit)
    view.update(
        error=fit.error,
        unlisted=fit.unlisted,
        engine_version=fit.engine_version,
        started_at=fit.started_at.isoformat() if fit.started_at else None,
        finished_at=fit.finished_at.isoformat() if fit.finished_at else None,
        sampled_cpus=result.get("cpus"),
        history=result.get("history", orjson.loads(fit.history)),
        **{k: result.get(k) for k in RESULT_FIELDS},
    )
    if result:
        view["evaluations"] = result["evaluations"]
    statuses = store.runs_status(session, [w["run"] for w in orjson.loads(fit.whatifs)])
    view["whatifs"] = [
        {
            **w,
            "url": whatif_path(fit.id, w["run"]),
            "run_url": run_path(w["run"]),
            "status": statuses.get(w["run"]),
        }
        for w in orjson.loads(fit.whatifs)
    ]
    return view


def list_view(session: Session, *, platform: str | None, limit: int, offset: int) -> dict[str, Any]:
    fits, total = store.list_fits(session, platform=platform, limit=limit, offset=offset)
    return {"fits": [summary(f) for f in fits], "total": total, "limit": limit, "offset": offset}


def delete(session: Session, fit: Fit) -> None:
    store.delete_fit(session, fit.id)


# ----------------------------------------------------------------------------------- what-if


def merge(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `changes` laid over it: objects merged key by key, anything else replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def submit_whatif(session: Session, submitter: Submitter, fit_id: str, body: WhatIfCreate) -> dict[str, Any]:
    """Run the twin with the changes (and the twin itself, its baseline, under the same seed):
    two ordinary runs, validated once like every config; unlisted when the fit is."""
    fit = get_fit(session, fit_id)
    if fit.status != "done" or not fit.result:
        raise Conflict(f"fit {fit_id!r} is {fit.status}: a what-if needs a finished twin")
    for key in MACHINE_KEYS:
        if key in body.changes:
            raise InvalidInput.one(
                ["body", "changes", key],
                "a what-if keeps the twin's machine (platform, table and CPUs); change how it runs",
                "value_error",
            )
    twin_config = orjson.loads(fit.result)["config"]
    whatif = resolve_config(session, merge(twin_config, body.changes), loc=("body", "changes"))
    twin = resolve_config(session, twin_config, loc=("body", "changes"))
    session.commit()  # ends the read: the submission writes in its own transaction
    title = body.title or f"what-if on twin {fit_id}: {_describe(body.changes)}"
    made, base = submitter(
        [
            RunSpec(whatif, title[:200], fit.unlisted, repeats=body.repeats),
            RunSpec(twin, f"twin {fit_id} ({fit.platform})"[:200], fit.unlisted, repeats=body.repeats),
        ]
    )
    entry = {"run": made.id, "twin_run": base.id, "changes": body.changes}
    fit = get_fit(session, fit_id)
    store.add_whatif(session, fit_id, orjson.dumps([*orjson.loads(fit.whatifs), entry]).decode())
    return {
        **made.answer(run_path(made.id)),
        "fit_id": fit_id,
        "twin_run": base.id,
        "whatif_url": whatif_path(fit_id, made.id),
    }


def _describe(changes: Mapping[str, Any], prefix: str = "") -> str:
    parts = []
    for key, value in changes.items():
        if isinstance(value, Mapping) and value:
            parts.append(_describe(value, f"{prefix}{key}."))
        else:
            parts.append(f"{prefix}{key}={orjson.dumps(value).decode()}")
    return ", ".join(parts) or "no change"


def run_figures(result: Mapping[str, Any]) -> dict[str, Any]:
    """A finished run's figures in the fit's terms (per state shares, ratios, mean stay; entries
    per idle and per elapsed second), and what a dump cannot hold: WakeLatency percentiles,
    package residency, power."""
    states = result["states"]
    names = [s["name"] for s in states]
    counters = np.array(
        [[[s["usage"] for s in states]], [[s["time_ns"] / 1000 for s in states]],
         [[s["above"] for s in states]], [[s["below"] for s in states]]],
        dtype=np.float64,
    )  # fmt: skip
    figs = figures(counters, names).model_dump(mode="json")
    elapsed_s = result["duration_ns"] / 1e9
    figs["entries_per_s"] = sum(s["usage"] for s in states) / result["cpus"] / elapsed_s
    wake = result["latency"]["wake"]
    system = result["hardware"]["system"]
    turbostat = system.get("turbostat", {})
    figs["wake_latency_us"] = {
        k.removesuffix("_ns"): (wake[k] / 1000 if wake.get(k) is not None else None)
        for k in ("mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns")
    }
    figs["package"] = {k: v for k, v in turbostat.items() if k.startswith(("Pkg%", "Mod%"))}
    figs["pkg_watts"] = turbostat.get("PkgWatt")
    figs["busy_pct"] = turbostat.get("Busy%")
    return figs


def whatif_view(session: Session, fit_id: str, run_id: str) -> dict[str, Any]:
    """The what-if page's data: measured | twin | what-if, side by side."""
    fit = get_fit(session, fit_id)
    entry = next((w for w in orjson.loads(fit.whatifs) if w["run"] == run_id), None)
    if entry is None:
        raise NotFound(f"run {run_id!r} is not a what-if of fit {fit_id!r}")
    result = orjson.loads(fit.result or b"{}")
    runs = store.runs_status_and_result(session, [entry["twin_run"], entry["run"]])
    columns = {}
    for role, rid in (("twin", entry["twin_run"]), ("whatif", entry["run"])):
        status, data = runs.get(rid, ("deleted", None))
        columns[role] = {
            "id": rid,
            "url": run_path(rid),
            "status": status,
            "figures": run_figures(orjson.loads(data)) if data is not None else None,
        }
    return {
        "fit": summary(fit),
        "run_id": run_id,
        "changes": entry["changes"],
        "measured": result.get("measured"),
        "twin": columns["twin"],
        "whatif": columns["whatif"],
        "state_names": list((result.get("measured") or {}).get("states", {})),
        "not_in_dump": NOT_IN_DUMP,
    }
