"""Timers with drawn intervals (wult's delayed events) and the per-state latency figures: draws in
range and in distribution, one CPU alone, validation naming the field, and configs without a drawn
timer giving the same bytes as before these existed."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from engine import SimConfig, simulate
from engine.config import config_errors
from engine.drawn_timers import drawn_timer_rows
from engine.simulate import ENGINE_VERSION

from .conftest import make_config, quiet

UNIFORM = {"distribution": "uniform", "min_us": 100.0, "max_us": 2000.0, "rearm_after_us": 5.0}


def drawn(interval: dict[str, Any], cpus: Any = "all", duration_ms: float = 2000.0) -> SimConfig:
    timer = {"cpus": cpus, "work_us": 0.0, "interval": interval}
    return make_config(duration_ms=duration_ms, wakeups=quiet(timers=[timer]))


def gaps_us(config: SimConfig, cpu: int) -> np.ndarray:
    (row,) = drawn_timer_rows(config, 2, int(config.duration_ms * 1e6)).values()
    times = row.times[row.off[cpu] : row.off[cpu + 1]]
    return np.diff(times) / 1000.0


def test_uniform_distances_fill_their_range_after_the_rearm_delay() -> None:
    gaps = gaps_us(drawn(UNIFORM), 0)
    assert len(gaps) > 1500  # 2 s at a mean of 1,055 us
    assert gaps.min() >= 105.0 - 0.001 and gaps.max() <= 2005.0
    # Uniform: every decile of [105, 2005] holds about a tenth (a periodic timer fills one bin).
    counts, _ = np.histogram(gaps, bins=10, range=(105.0, 2005.0))
    assert counts.min() > 0.7 * len(gaps) / 10 and counts.max() < 1.3 * len(gaps) / 10
    assert drawn(UNIFORM).wakeups.timers[0].mean_interval_us() == pytest.approx(1055.0)


def test_quantiles_resample_an_empirical_distribution() -> None:
    # Half the distances in 100..200 us, half in 200..4000 us: its median is 200 us.
    config = drawn({"distribution": "quantiles", "quantiles_us": [100.0, 200.0, 4000.0]})
    gaps = gaps_us(config, 1)
    assert len(gaps) > 900
    # The share below each quantile is its probability (binomial sd ~0.015 at this count).
    assert np.mean(gaps < 200.0) == pytest.approx(0.5, abs=0.05)
    assert np.mean(gaps < 150.0) == pytest.approx(0.25, abs=0.05)
    assert np.mean(gaps < 2100.0) == pytest.approx(0.75, abs=0.05)
    assert gaps.min() >= 100.0 and gaps.max() <= 4000.0


def test_each_cpu_draws_its_own_stream_and_only_the_listed_cpu_has_the_timer() -> None:
    everywhere = drawn(UNIFORM)
    assert not np.array_equal(gaps_us(everywhere, 0)[:50], gaps_us(everywhere, 1)[:50])
    one = drawn(UNIFORM, cpus=[1], duration_ms=200.0)
    (row,) = drawn_timer_rows(one, 2, int(200e6)).values()
    assert row.off[1] == 0 and row.off[2] > 150, "CPU 0 has none, CPU 1 ~190"
    result = simulate(one)
    # Every drawn expiry is taken (the timer's latency has one sample each), ~1 per 1,055 us.
    assert result.latency["timer"].count == pytest.approx(int(row.off[2]), abs=1)
    assert int(row.off[2]) == pytest.approx(200_000 / 1055, rel=0.2)


def test_per_state_figures_split_the_wake_ups_by_the_state_they_left() -> None:
    result = simulate(drawn(UNIFORM, duration_ms=300.0))
    woke = [s for s in result.states if s.wake_latency is not None]
    assert len(woke) >= 2, "the drawn distances reach more than one state"
    assert sum(s.wake_latency.count for s in woke) == result.latency["wake"].count  # type: ignore[union-attr]
    for s in woke:
        assert s.wake_latency is not None
        assert s.wake_latency.mean_ns == pytest.approx(s.wake_latency_mean_ns)
        assert s.wake_latency.p50_ns <= s.wake_latency.p99_ns <= s.wake_latency.max_ns
    # One state only (the fixed governor): its figures are the run's.
    only = simulate(make_config(duration_ms=100.0, governor={"name": "fixed", "fixed_state": "C6"},
                                wakeups=quiet(timers=[{"interval": UNIFORM, "work_us": 0.0}])))  # fmt: skip
    c6 = next(s for s in only.states if s.name == "C6")
    assert c6.wake_latency is not None and c6.intr_latency is not None
    assert c6.wake_latency.count == only.latency["wake"].count
    assert c6.wake_latency.p99_ns == only.latency["wake"].p99_ns
    assert c6.intr_latency.p50_ns == only.latency["intr"].p50_ns
    # A state nothing woke from has no figures (and none in its JSON).
    c1 = next(s for s in only.states if s.name == "C1")
    assert c1.wake_latency is None and "wake_latency" not in c1.model_dump()


@pytest.mark.parametrize(
    ("interval", "loc", "words"),
    [
        ({"distribution": "uniform", "min_us": 50.0, "max_us": 10.0}, ["interval", "uniform"], "below"),
        ({"distribution": "quantiles", "quantiles_us": [5.0, 3.0]}, ["interval", "quantiles"], "decrease"),
        ({"distribution": "quantiles", "quantiles_us": [5.0]}, ["interval", "quantiles", "quantiles_us"], "2"),  # noqa: E501
        ({"distribution": "normal", "min_us": 1.0}, ["interval"], "does not match"),
        ({"distribution": "uniform", "min_us": 0.0, "max_us": 0.0}, ["interval"], "at least 0.001 us"),
    ],
)
def test_bad_intervals_name_the_field(interval: dict[str, Any], loc: list[str], words: str) -> None:
    data = {"wakeups": {"timers": [{"interval": interval}]}}
    with pytest.raises(ValidationError) as info:
        SimConfig.model_validate(data)
    (err,) = config_errors(info.value)
    assert err["loc"][:3] == ["wakeups", "timers", 0], err
    assert [p for p in err["loc"][3:] if not isinstance(p, int)][: len(loc)] == loc, err
    assert words in str(err["msg"]), err


# Recorded with engine 0.7.0 before drawn intervals, per-state figures and per-CPU counters existed
# (0.8.0 added them): the config's hash and the result's bytes less its engine version and those
# new fields. A change to the model bumps ENGINE_VERSION past 0.8, and these are recorded again then.
RECORDED_AT = ("0.7.0", "0.8.0")
GOLDEN = {
    "default-small": (
        {"duration_ms": 20, "topology": {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1}},
        "6042bcdc2adb3d026f31f733892f9dc1bb6884320bb2c9f616273dfc57b29f27",
        "8a1e55a2ba7d36cefab19484bc36f3b93aafb631f087575d84b9e67231c7ed80",
    ),
    "two-timers": (
        {
            "duration_ms": 20, "seed": 7,
            "topology": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1},
            "wakeups": {"timers": [{"period_us": 700.0, "cpus": [1, 2]},
                                   {"period_us": 2500.0, "kind": "timer_wheel"}]},
        },
        "9205ffb1f01d8920471329c3fcd923f42de87efb3fe15f5d5138ed88daa0a083",
        "4048ed9774627e6b2f4741cb5aeb0a501ad5ecc2b65f7dba4a893da2f008caee",
    ),
    "with-load": (
        {
            "duration_ms": 20, "seed": 3, "topology": {"sockets": 1, "cores_per_socket": 2,
                                                        "threads_per_core": 2},
            "wakeups": {"load": [{"cpus": "all", "timers": [{"period_us": 20000.0}],
                                  "bursts": {"quiet_rate_hz": 50, "burst_rate_hz": 2000, "quiet_mean_ms": 5,
                                             "burst_mean_us": 500}}]},
        },
        "d21f0cf05ed75cd6b48f34baab30e8b620eaa426090d4269263b6964055d2dfc",
        "646d42d8518d04dbe2b94c3ade2ff2b4874e480125db9690f01ea73c19a3c5b5",
    ),
}  # fmt: skip


@pytest.mark.skipif(ENGINE_VERSION not in RECORDED_AT, reason=f"golden bytes hold for engines {RECORDED_AT}")
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_configs_without_a_drawn_timer_give_the_same_bytes_as_before(name: str) -> None:
    data, config_hash, result_hash = GOLDEN[name]
    config = SimConfig.model_validate(data)
    assert config.config_hash() == config_hash, "the same hash: stored runs are reused"
    result = simulate(config).model_dump(mode="json")
    for added in ("engine_version", "per_cpu_usage", "per_cpu_above", "per_cpu_below"):
        result.pop(added)
    for s in result["states"]:
        s.pop("wake_latency", None)
        s.pop("intr_latency", None)
    assert hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest() == result_hash
