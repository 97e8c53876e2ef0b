"""Drawn timer intervals (`wakeups.timers[].interval`): a timer re-armed at a distance drawn per
expiry instead of a fixed period, as wult arms its delayed events.

wult's driver picks each launch distance uniformly from its configured range (`pick_ldist()` in
intel/wult `drivers/idle/wult/main.c`: `get_random_u64()` modulo the range's width, plus its
start; `--ldist`, default [0, 4 ms], `docs/wult-start.rst`), and arms the next event only after
the previous one happened and its data was sent (`armer_kthread()`, same file). So each expiry
is the previous one, plus the time until the next is armed (`rearm_after_us`), plus a drawn
distance.

`uniform` draws from [min_us, max_us]; `quantiles` from an empirical distribution given as its
quantiles at evenly spaced probabilities (0, 1/(m-1), ..., 1), linearly interpolated, so a
measured distribution that is not uniform can be resampled. Pure vocabulary: the draws are in
`engine.drawn_timers`.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_INTERVAL_US = 10_000_000.0
MAX_QUANTILES = 101
IntervalUs = Annotated[float, Field(ge=0, le=MAX_INTERVAL_US)]


class _Interval(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rearm_after_us: Annotated[float, Field(ge=0, le=1_000_000)] = Field(
        default=0.0,
        description="From an expiry until the next one is armed (the drawn distance counts from then): "
        "for wult, the wake-up and its armer thread's work. A model parameter, not a kernel fact.",
    )

    @abstractmethod
    def quantiles(self) -> list[float]:
        """The distribution as its quantile function's points (us), evenly spaced in probability."""

    def mean_us(self) -> float:
        """The mean time between expiries: the rearm delay plus the piecewise-linear mean."""
        q = self.quantiles()
        return self.rearm_after_us + sum((a + b) / 2 for a, b in zip(q, q[1:], strict=False)) / (len(q) - 1)


class UniformInterval(_Interval):
    """Each distance uniform in [min_us, max_us] (wult's `--ldist` range)."""

    distribution: Literal["uniform"]
    min_us: IntervalUs
    max_us: IntervalUs

    @model_validator(mode="after")
    def _ordered(self) -> UniformInterval:
        if self.max_us < self.min_us:
            raise ValueError(f"max_us ({self.max_us:g}) is below min_us ({self.min_us:g})")
        return self

    def quantiles(self) -> list[float]:
        return [self.min_us, self.max_us]


class QuantileInterval(_Interval):
    """Each distance drawn from the empirical distribution whose quantiles at probabilities
    0, 1/(m-1), ..., 1 are `quantiles_us` (m values, non-decreasing), interpolated linearly."""

    distribution: Literal["quantiles"]
    quantiles_us: list[IntervalUs] = Field(min_length=2, max_length=MAX_QUANTILES)

    @model_validator(mode="after")
    def _non_decreasing(self) -> QuantileInterval:
        q = self.quantiles_us
        for i in range(1, len(q)):
            if q[i] < q[i - 1]:
                raise ValueError(f"quantiles_us must not decrease: [{i}] = {q[i]:g} after {q[i - 1]:g}")
        return self

    def quantiles(self) -> list[float]:
        return list(self.quantiles_us)


TimerInterval = Annotated[UniformInterval | QuantileInterval, Field(discriminator="distribution")]
