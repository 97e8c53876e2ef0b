"""The runs API's models, one family: RunCreate / RunSubmitted / RunRead / RunSummary / RunList.

`SimConfig` and `SimResult` come from the engine unchanged, so `/docs` shows the real schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidatorFunctionWrapHandler, create_model, field_validator

from app.core.inputs import no_nul_strings
from app.core.models import LIST_COLUMNS, RUN_STATUSES, Run, UTCDateTime
from engine import SimConfig, SimResult
from engine.config import CUSTOM_PLATFORM_LATER
from engine.repeats import MAX_REPEATS, MIN_REPEATS

RunStatus = Literal[RUN_STATUSES]  # type: ignore[valid-type]


class RunCreate(BaseModel):
    """Body of `POST /api/runs`. `{"config": {}}` (or `{}`) is the default run."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)

    config: SimConfig = Field(
        default_factory=SimConfig,
        description="`platform` may name a custom table too (`POST /api/platforms`).",
    )
    title: Annotated[str, Field(max_length=200)] = ""
    unlisted: bool = Field(default=False, description="Only the run's link finds it (not lists).")
    repeats: Annotated[int, Field(ge=MIN_REPEATS, le=MAX_REPEATS)] = Field(
        default=1,
        description="Simulate the config this many times, each with its own seed (repeat 0 the config's, "
        "the others derived from it: `engine.repeats`); the run keeps repeat 0's full result and every "
        "repeat's summary figures. Comparisons give verdicts from 3 repeats on.",
    )

    @field_validator("config", mode="wrap")
    @classmethod
    def _custom_platform_later(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> SimConfig:
        """A custom platform's id is resolved (and the config checked against its table) by the
        service, once, before the run is queued."""
        if isinstance(value, dict):
            return SimConfig.model_validate(value, context={CUSTOM_PLATFORM_LATER: True})
        return handler(value)  # type: ignore[no-any-return]


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


class RepeatSummary(BaseModel):
    seed: int
    summary: dict[str, float] = Field(description="Metric key -> value (the registry's keys).")


class MetricStats(BaseModel):
    n: int
    mean: float
    stddev: float | None = Field(description="Sample standard deviation (ddof 1); null with one repeat.")


class NoteStamp(BaseModel):
    """A note as `GET /api/runs/{id}` puts it beside the run."""

    text: str
    version: int = Field(description="Counts the note's edits (the run's ETag covers it).")
    updated_at: str


class NoteRead(NoteStamp):
    """`GET /api/{runs|sweeps|measurements}/{id}/note`."""

    html: str = Field(description="The text as safe HTML: URLs, commit ids and <Message-ID>s linked.")


class RunRead(RunSummary):  # type: ignore[misc,valid-type]
    """`GET /api/runs/{id}`: the summary plus the config and (once done) the result, every repeat's
    seed and summary figures and the statistics over them (the summary columns are their means),
    and the run's note (null without one)."""

    config: SimConfig
    result: SimResult | None
    repeats: list[RepeatSummary] | None = Field(default=None, description="Once done; repeat 0 first.")
    summary_stats: dict[str, MetricStats] | None = None
    note: NoteStamp | None = None


class RunList(BaseModel):
    runs: list[RunSummary]  # type: ignore[valid-type]
    total: int = Field(description="Runs matching the filters (all pages).")
    limit: int
    offset: int
