"""API models, one family per resource: RunCreate / RunSubmitted / RunRead / RunSummary / RunList,
PlatformCreate / PlatformRead / PlatformList, Comparison.

`SimConfig` and `SimResult` come from the engine unchanged, so `/docs` shows the real schema.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from app.models import LIST_COLUMNS, Run, UTCDateTime
from engine import CState, Platform, SimConfig, SimResult

RunStatus = Literal["queued", "running", "done", "failed"]


class RunCreate(BaseModel):
    """Body of `POST /api/runs`. `{"config": {}}` (or `{}`) is the default run."""

    model_config = ConfigDict(extra="forbid")

    config: SimConfig = Field(default_factory=SimConfig)
    title: Annotated[str, Field(max_length=200)] = ""
    unlisted: bool = Field(default=False, description="Only the run's link finds it (not lists).")


class RunSubmitted(BaseModel):
    """Answer to `POST /api/runs`: keep `delete_token`, it is shown once."""

    id: str
    url: str = Field(description="The share link, a path: /runs/{id}.")
    status: RunStatus
    delete_token: str
    reused_from: str | None = Field(
        default=None, description="Set when a finished run with the same config hash and engine answered it."
    )
    progress: float | None = None
    error: str | None = None
    result: SimResult | None = Field(default=None, description="With `?wait=true`, once done.")


def _field(name: str) -> tuple[Any, Any]:
    column = Run.__table__.c[name]
    kind: Any = (
        column.type.impl.python_type if isinstance(column.type, UTCDateTime) else column.type.python_type
    )
    kind = RunStatus if name == "status" else kind
    return (kind | None if column.nullable else kind), ...


# One row of a run list: the list columns as `app.models.Run` declares them, and the share link.
RunSummary = create_model(  # type: ignore[call-overload]
    "RunSummary",
    __config__=ConfigDict(from_attributes=True),
    __doc__="One row of a run list: the summary columns, no config or result.",
    url=(str, Field(description="The share link, a path: /runs/{id}.")),
    **{name: _field(name) for name in LIST_COLUMNS},
)


class RunRead(RunSummary):  # type: ignore[misc,valid-type]
    """`GET /api/runs/{id}`: the summary plus the config and (once done) the result."""

    config: SimConfig
    result: SimResult | None


class RunList(BaseModel):
    runs: list[RunSummary]  # type: ignore[valid-type]
    total: int = Field(description="Runs matching the filters (all pages).")
    limit: int
    offset: int


class PlatformCreate(BaseModel):
    """Body of `POST /api/platforms`: a custom C-state table on a built-in platform's cost model.

    POLL is added as state 0 when `states` does not start with it. Exit latencies and target
    residencies must not decrease.
    """

    model_config = ConfigDict(extra="forbid")

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
        default="skx", description="Built-in platform whose topology, costs and power it uses."
    )
    states: Annotated[list[CState], Field(min_length=1, max_length=32)]


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


class PlatformList(BaseModel):
    platforms: list[PlatformRead]


class ComparedRun(BaseModel):
    id: str
    url: str
    title: str
    status: RunStatus
    platform: str
    governor: str
    mechanism: str
    cpus: int
    duration_ms: float


class ComparedMetric(BaseModel):
    """One metric across the compared runs; `deltas[i]` is run i against run 0, in `delta_unit`:
    percentage points for shares (a share's percent change means nothing: 0.01% -> 19% is not
    "+194,243%"), percent for everything else."""

    key: str = Field(description="Stable id, e.g. `residency.C6`, `latency.wake.p99_ns`.")
    group: str
    label: str
    unit: str
    better: Literal["lower", "higher"] | None = Field(
        default=None, description="Which way is better; null when the metric describes the workload."
    )
    values: list[float | None]
    delta_unit: Literal["%", "pp"]
    deltas: list[float | None]
    deltas_pct: list[float | None] = Field(
        description="Relative change in percent for every metric, shares included (kept for scripts "
        "that read it; `deltas` in `delta_unit` is the one to read)."
    )


class ComparedMeasurement(BaseModel):
    id: str
    url: str
    title: str
    kind: Literal["wult", "turbostat"]


class MeasuredMetric(BaseModel):
    """A figure both runs and measurements have; `deltas_pct[i]` is run i against the measurement."""

    key: str = Field(description="e.g. `latency.wake.p99_ns`, `turbostat.CPU%c6`.")
    label: str
    unit: str
    simulated: list[float | None] = Field(description="Per compared run.")
    measured: list[float | None] = Field(description="Per compared measurement.")
    deltas_pct: list[float | None]


class Comparison(BaseModel):
    runs: list[ComparedRun]
    complete: bool = Field(description="False while any compared run is not done (its values are null).")
    metrics: list[ComparedMetric]
    measurements: list[ComparedMeasurement] = Field(
        default_factory=list, description="Measurements among the ids (wult, turbostat), in their order."
    )
    measured: list[MeasuredMetric] = Field(
        default_factory=list, description="What the runs and the measurements both have, aligned."
    )
