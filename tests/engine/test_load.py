"""The idle load (engine.load): timer, burst, follow-up and run-time arrivals have the statistics
asked for, are deterministic per seed and per CPU, and reach the simulation as the kernel sees them."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from engine import SimConfig, simulate
from engine.load import draw_load
from tests.engine.conftest import make_config, quiet, simulate_uncompiled

T_END = 100_000_000_000  # 100 s


def _load_config(*classes: dict[str, Any], hz: int = 250, seed: int = 1, cores: int = 4) -> SimConfig:
    return make_config(
        seed=seed,
        topology={"sockets": 1, "cores_per_socket": cores, "threads_per_core": 1},
        wakeups=quiet(load=list(classes), tick={"hz": hz}),
    )


def _per_cpu(times: np.ndarray, off: np.ndarray, c: int) -> np.ndarray:
    return times[off[c] : off[c + 1]]


def test_an_empty_load_keeps_the_config_and_its_hash_as_they_were() -> None:
    # An empty load is left out of the dump, so a config without one hashes as it did before.
    assert SimConfig.model_validate({"wakeups": {"load": []}}).config_hash() == SimConfig().config_hash()
    assert "load" not in SimConfig().model_dump()["wakeups"]
    with_load = SimConfig.model_validate({"wakeups": {"load": [{"bursts": {}}]}})
    assert with_load.model_dump()["wakeups"]["load"][0]["bursts"]["quiet_rate_hz"] == 2.0
    assert with_load.config_hash() != SimConfig().config_hash()


def test_jittered_hrtimer_intervals_stay_within_the_jitter() -> None:
    cfg = _load_config({"timers": [{"kind": "hrtimer", "period_us": 100_000, "jitter": 0.2}]})
    load = draw_load(cfg, 4, T_END)
    (row,) = load.timers
    for c in range(4):
        gaps = np.diff(_per_cpu(row.times, row.off, c)) / 1e6  # ms
        assert gaps.min() >= 80 - 1e-6 and gaps.max() <= 120 + 1e-6
        assert gaps.mean() == pytest.approx(100, abs=1.0)  # ~1000 gaps, uniform: sd 11.5/sqrt(1000)
        assert len(gaps) == pytest.approx(999, abs=25)


def test_timer_wheel_expiries_fall_on_their_bucket_boundaries() -> None:
    # HZ=250: a 2 s timeout is 500 jiffies, level 1 of the wheel (63 <= 500 < 504): buckets of
    # 8 jiffies = 32 ms, and the bucket is the one after the exact expiry (up to one granule late).
    cfg = _load_config({"timers": [{"kind": "timer_wheel", "period_us": 2_000_000, "jitter": 0.0}]})
    (row,) = draw_load(cfg, 4, T_END).timers
    times = _per_cpu(row.times, row.off, 0)
    assert (times[1:] % 32_000_000 == 0).all()
    gaps = np.diff(times[1:])
    assert set(gaps.tolist()) == {2_016_000_000}  # 500 jiffies, rounded up to 504 (63 x 8)
    # 3 s at HZ=250 (750 jiffies): level 2, buckets of 64 jiffies = 256 ms.
    cfg = _load_config({"timers": [{"kind": "timer_wheel", "period_us": 3_000_000, "jitter": 0.3}]})
    (row,) = draw_load(cfg, 4, T_END).timers
    assert (_per_cpu(row.times, row.off, 2)[1:] % 256_000_000 == 0).all()


def test_bursts_have_the_rate_and_burst_statistics_asked_for() -> None:
    # Quiet phases of 1 s mean with no arrivals, bursts of 2 ms mean at 5,000/s: 10 arrivals per
    # burst on average. Per CPU: ~98 bursts in 100 s; a burst holds at least one arrival with
    # probability lambda m / (1 + lambda m) = 10/11 (its length is exponential), and then 11 on
    # average (geometric, one more than the burst's arrivals given at least one).
    burst = {"quiet_rate_hz": 0.0, "burst_rate_hz": 5000.0, "burst_mean_us": 2000.0, "quiet_mean_ms": 1000.0}
    cfg = _load_config({"bursts": burst}, cores=8)
    load = draw_load(cfg, 8, T_END)
    n_events = len(load.wake_t)
    mean_hz = 5000.0 * 0.002 / 1.002
    assert n_events == pytest.approx(mean_hz * 100 * 8, rel=0.08)
    clusters = 0
    sizes = []
    for c in range(8):
        times = _per_cpu(load.wake_t, load.wake_off, c)
        # Gaps inside a burst are 0.2 ms on average; quiet phases shorter than 50 ms (4.9%)
        # merge two bursts.
        cuts = np.flatnonzero(np.diff(times) > 50_000_000)
        clusters += len(cuts) + 1
        sizes.extend(np.diff(np.concatenate([[0], cuts + 1, [len(times)]])).tolist())
    nonempty_bursts = 8 * 100 / 1.002 * (10 / 11)
    assert clusters == pytest.approx(nonempty_bursts * 0.951, rel=0.1)
    assert np.mean(sizes) == pytest.approx(11 / 0.951, rel=0.12)
    # The quiet rate alone: a Poisson stream (quiet phases are nearly all the time).
    cfg = _load_config({"bursts": {"quiet_rate_hz": 20.0, "burst_rate_hz": 0.0, "quiet_mean_ms": 1000.0}})
    load = draw_load(cfg, 4, T_END)
    assert len(load.wake_t) == pytest.approx(20 * 100 * 4 * (1000 / 1002), abs=4 * math.sqrt(8000) + 50)


def test_follow_up_chains_have_their_probability_and_delays() -> None:
    # A 10 ms timer (exact) and follow-ups with p = 0.6: 1.5 follow-ups per expiry (p / (1 - p)),
    # each 50-500 us after the wake-up before it in its chain, log-uniformly (median 158 us).
    cls = {
        "timers": [{"kind": "hrtimer", "period_us": 10_000, "jitter": 0.0}],
        "follow_ups": {"probability": 0.6, "delay_min_us": 50.0, "delay_max_us": 500.0},
    }
    cfg = _load_config(cls)
    load = draw_load(cfg, 4, 10_000_000_000)
    (row,) = load.timers
    assert len(load.wake_t) == pytest.approx(1.5 * len(row.times), rel=0.05)
    for c in range(4):
        expiries = _per_cpu(row.times, row.off, c)
        follows = _per_cpu(load.wake_t, load.wake_off, c)
        # Every follow-up lies 50 us to 5 ms after the last expiry before it (chains of up to ~10).
        before = expiries[np.searchsorted(expiries, follows, side="right") - 1]
        assert ((follows - before) >= 50_000).all()
        first = np.concatenate([[True], np.diff(np.searchsorted(expiries, follows, side="right")) > 0])
        d = (follows - before)[first] / 1000.0  # the first of each chain: one delay
        assert d.max() <= 500.0 + 1e-3
        assert np.median(d) == pytest.approx(math.sqrt(50 * 500), rel=0.1)


def test_run_times_are_log_normal_with_the_median_and_shape_asked_for() -> None:
    cls = {
        "bursts": {"quiet_rate_hz": 200.0, "burst_rate_hz": 0.0},
        "run_time": {"median_us": 20.0, "sigma": 0.8},
    }
    load = draw_load(_load_config(cls), 4, 20_000_000_000)
    logs = np.log(load.wake_work / 1000.0)  # ~16,000 draws
    assert np.exp(np.median(logs)) == pytest.approx(20.0, rel=0.05)
    assert logs.std() == pytest.approx(0.8, rel=0.05)
    fixed = draw_load(_load_config({**cls, "run_time": {"median_us": 7.0, "sigma": 0.0}}), 4, 1_000_000_000)
    assert set(fixed.wake_work.tolist()) == {7000}


def test_classes_apply_to_their_cpus_only() -> None:
    busy = {"cpus": [0], "bursts": {"quiet_rate_hz": 100.0, "burst_rate_hz": 0.0}}
    rest = {"cpus": [1, 2, 3], "bursts": {"quiet_rate_hz": 10.0, "burst_rate_hz": 0.0}}
    load = draw_load(_load_config(busy, rest), 4, T_END)
    counts = np.diff(load.wake_off)
    assert counts[0] == pytest.approx(100 * 100 * 500 / 502, rel=0.1)
    assert counts[1:] == pytest.approx([10 * 100 * 500 / 502] * 3, rel=0.15)


def test_draws_are_deterministic_per_seed_and_per_cpu() -> None:
    cls = {
        "timers": [{"kind": "timer_wheel", "period_us": 1_500_000}, {"period_us": 50_000}],
        "bursts": {},
        "follow_ups": {},
    }
    a = draw_load(_load_config(cls), 4, T_END)
    b = draw_load(_load_config(cls), 4, T_END)
    assert all(
        (x == y).all() for x, y in zip(a.timers[0], b.timers[0], strict=False) if isinstance(x, np.ndarray)
    )
    assert (a.wake_t == b.wake_t).all() and (a.wake_work == b.wake_work).all()
    other = draw_load(_load_config(cls, seed=2), 4, T_END)
    assert not np.array_equal(a.wake_t, other.wake_t)
    # CPU 2's arrivals do not depend on how many CPUs there are.
    wide = draw_load(_load_config(cls, cores=16), 16, T_END)
    assert np.array_equal(_per_cpu(a.wake_t, a.wake_off, 2), _per_cpu(wide.wake_t, wide.wake_off, 2))
    assert np.array_equal(
        _per_cpu(a.timers[1].times, a.timers[1].off, 2), _per_cpu(wide.timers[1].times, wide.timers[1].off, 2)
    )


def test_the_governor_sees_load_timers_and_not_bursts() -> None:
    # One 50 ms hrtimer, nothing else: menu sees it, picks C6 every time, and every stay is long
    # enough (no `above`). Invisible follow-ups 300 us after a wake-up (p = 0.5, one per expiry
    # on average) come after the wake path and the work (~0.1 ms), so each is a wake-up of its
    # own, and they end C6 stays chosen for the timer early: `above` appears.
    timer = {"timers": [{"kind": "hrtimer", "period_us": 50_000, "jitter": 0.1}]}
    cfg = _load_config(timer).model_copy(update={"duration_ms": 2000.0})
    r = simulate(cfg)
    c6 = r.states[-1]
    assert c6.name == "C6" and c6.usage == pytest.approx(4 * 40, abs=8)
    assert c6.above == 0 and r.wakeups == pytest.approx(160, abs=8)
    chained = {**timer, "follow_ups": {"probability": 0.5, "delay_min_us": 300.0, "delay_max_us": 300.0}}
    r2 = simulate(_load_config(chained).model_copy(update={"duration_ms": 2000.0}))
    assert r2.wakeups == pytest.approx(2 * 160, rel=0.15)
    assert r2.states[-1].above > 0.3 * 160


def test_the_size_limit_counts_the_load() -> None:
    heavy = {"bursts": {"quiet_rate_hz": 10_000.0, "burst_rate_hz": 0.0}, "follow_ups": {"probability": 0.9}}
    with pytest.raises(ValueError, match="events expected"):
        SimConfig.model_validate(
            {"duration_ms": 60_000, "topology": {"sockets": 2}, "wakeups": {"load": [heavy]}}
        )
    with pytest.raises(ValueError, match=r"wakeups\.load\.0\.cpus: CPU 99 does not exist"):
        SimConfig.model_validate(
            {"topology": {"sockets": 1, "cores_per_socket": 2}, "wakeups": {"load": [{"cpus": [99]}]}}
        )


def test_the_load_runs_the_same_without_the_jit() -> None:
    # The arrivals and the kernel's hooks (drawn timer expiries, per-arrival work) as plain Python.
    cls = {
        "cpus": [0, 1],
        "timers": [{"kind": "timer_wheel", "period_us": 1_000_000}, {"period_us": 20_000, "jitter": 0.3}],
        "bursts": {"quiet_rate_hz": 50.0, "burst_rate_hz": 5000.0, "quiet_mean_ms": 20.0},
        "follow_ups": {"probability": 0.4},
    }
    cfg = _load_config(cls, {"cpus": [2, 3], "bursts": {"quiet_rate_hz": 100.0}})
    cfg = cfg.model_copy(update={"duration_ms": 300.0})
    (uncompiled,) = simulate_uncompiled([cfg])
    compiled = simulate(cfg)
    assert compiled.wakeups > 100
    assert uncompiled == compiled.model_dump_json()
