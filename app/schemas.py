"""API models, one family per resource: RunCreate / RunSubmitted / RunRead / RunSummary / RunList,
PlatformCreate / PlatformRead / PlatformList, Comparison.

`SimConfig` and `SimResult` come from the engine unchanged, so `/docs` shows the real schema.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

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
    url: str = Field(description="The share link, /runs/{id}.")
    status: RunStatus
    delete_token: str
    reused_from: str | None = Field(
        default=None, description="Set when a finished run with the same config hash and engine answered it."
    )
    progress: float | None = None
    error: str | None = None
    result: SimResult | None = Field(default=None, description="With `?wait=true`, once done.")


class RunSummary(BaseModel):
    """One row of a run list: the summary columns, no config or result."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    url: str
    title: str
    status: RunStatus
    progress: float
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    platform: str
    governor: str
    mechanism: str
    cpus: int
    duration_ms: float
    seed: int
    busy_share: float | None
    wakeups: int | None
    events: int | None
    wake_latency_mean_ns: float | None
    wake_latency_p99_ns: float | None
    intr_latency_mean_ns: float | None
    intr_latency_p99_ns: float | None
    ipis_sent: int | None
    ipis_avoided: int | None
    energy_joules: float | None
    engine_version: str
    wall_s: float | None
    compile_s: float | None
    reused_from: str | None
    error: str | None


class RunRead(RunSummary):
    """`GET /api/runs/{id}`: the summary plus the config and (once done) the result."""

    config: SimConfig
    result: SimResult | None


class RunList(BaseModel):
    runs: list[RunSummary]
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
    """One metric across the compared runs; `deltas_pct[i]` is run i against run 0."""

    key: str = Field(description="Stable id, e.g. `residency.C6`, `latency.wake.p99_ns`.")
    group: str
    label: str
    unit: str
    values: list[float | None]
    deltas_pct: list[float | None]


class Comparison(BaseModel):
    runs: list[ComparedRun]
    complete: bool = Field(description="False while any compared run is not done (its values are null).")
    metrics: list[ComparedMetric]
