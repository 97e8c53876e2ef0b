"""Polling work in the idle load (`LoadClass.polls`): delayed work whose reads sleep in short
hrtimers the governor sees. Off by default, and then nothing else changes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine import SimConfig, simulate
from engine.load import draw_load
from engine.load_config import PollingWork
from tests.engine.conftest import LOAD_BESIDE as OTHER
from tests.engine.conftest import make_config, quiet, simulate_uncompiled

T_END = 20_000_000_000  # 20 s
POLLS = {"period_us": 50_000.0, "jitter": 0.0, "sleep_us": 50.0, "sleeps_mean": 10.0}


def _config(*classes: dict[str, Any], hz: int = 1000, cores: int = 4, ms: float = 10.0) -> SimConfig:
    return make_config(
        seed=7,
        duration_ms=ms,
        topology={"sockets": 1, "cores_per_socket": cores, "threads_per_core": 1},
        wakeups=quiet(load=list(classes), tick={"hz": hz}),
    )


def test_a_class_without_polls_serialises_and_hashes_as_before() -> None:
    # The hash of this config before polling work existed (commit 6b69140).
    cfg = SimConfig.model_validate(
        {
            "platform": "skx",
            "seed": 7,
            "duration_ms": 500.0,
            "topology": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1},
            "wakeups": {
                "load": [
                    {**OTHER, "cpus": [0, 1]},
                    {"cpus": [2, 3], "bursts": {}, "run_time": {"median_us": 20.0}},
                ]
            },
        }
    )
    assert cfg.config_hash() == "f278a5429a75b3a79d1d5556d705a82100bac9b83ed4e3b0b7dbfae7cc0237da"
    assert "polls" not in cfg.model_dump()["wakeups"]["load"][0]
    with_polls = SimConfig.model_validate({"wakeups": {"load": [{"polls": {}}]}})
    assert with_polls.model_dump()["wakeups"]["load"][0]["polls"]["sleep_us"] == 100.0


def test_polls_add_their_rows_and_leave_every_other_arrival_as_it_was() -> None:
    plain = draw_load(_config({**OTHER, "cpus": [0, 1]}, {**OTHER, "cpus": [2, 3]}), 4, T_END)
    polled = draw_load(
        _config({**OTHER, "cpus": [0, 1], "polls": POLLS}, {**OTHER, "cpus": [2, 3]}), 4, T_END
    )
    assert len(polled.timers) == len(plain.timers) + 2
    before = plain.timers[:2] + plain.timers[2:]  # class 0's rows, then class 1's
    after = polled.timers[:2] + polled.timers[4:]  # the polls' two rows follow class 0's own
    for a, b in zip(before, after, strict=True):
        assert np.array_equal(a.times, b.times) and np.array_equal(a.off, b.off)
    for field in ("wake_t", "wake_work", "wake_off"):
        assert np.array_equal(getattr(plain, field), getattr(polled, field))
    starts, sleeps = polled.timers[2:4]
    assert starts.timer_wheel and not sleeps.timer_wheel
    assert np.diff(starts.off)[2:].sum() == 0 and np.diff(sleeps.off)[2:].sum() == 0  # class 0 only


def test_polling_episodes_have_the_sleeps_and_period_asked_for() -> None:
    load = draw_load(_config({"polls": POLLS}), 4, T_END)
    starts, sleeps = load.timers
    step = 3_000  # the handler (1 us) and the read (2 us) before each sleep
    n_episodes = n_sleeps = 0
    for c in range(4):
        s = starts.times[starts.off[c] : starts.off[c + 1]]
        z = sleeps.times[sleeps.off[c] : sleeps.off[c + 1]]
        assert np.all(s[1:] % 1_000_000 == 0)  # re-queued on the wheel: on a jiffy (HZ 1000)
        ends = s.copy()
        for i, t in enumerate(s):  # each episode's sleeps: every 53 us after its start
            mine = z[(z > t) & (z < (s[i + 1] if i + 1 < len(s) else T_END))]
            assert np.array_equal(mine, t + (step + 50_000) * np.arange(1, len(mine) + 1))
            ends[i] = mine[-1] if len(mine) else t
            n_sleeps += len(mine)
        # The next episode: 50 ms after the last read, rounded up to the wheel's bucket (level
        # 0 below 63 jiffies: the next jiffy).
        gaps = s[1:] - (ends[:-1] + step)
        assert gaps.min() >= 50_000_000 and gaps.max() <= 51_000_000
        n_episodes += len(s)
    assert n_sleeps / n_episodes == pytest.approx(10.0, rel=0.1)  # ~1,400 geometric episodes
    expected = PollingWork.model_validate(POLLS).expected_rate_hz()
    assert (n_sleeps + n_episodes) / (4 * T_END / 1e9) == pytest.approx(expected, rel=0.03)


def test_the_governor_sees_the_sleeps_and_not_the_same_intervals_in_bursts() -> None:
    # 10 sleeps of 50 us every 50 ms: menu sees each sleep's end, picks C1E (skx: target residency
    # 20 us; C6's is 600) and the stay lasts as long as it chose for. Wake-ups at the same rate in
    # bursts of the same mean length, which it cannot see, end deep stays early instead.
    polled = simulate(_config({"polls": POLLS}, ms=2_000.0))
    burst = {"quiet_rate_hz": 0.0, "burst_rate_hz": 1e6 / 53.0, "burst_mean_us": 530.0, "quiet_mean_ms": 50.0}
    hidden = simulate(_config({"bursts": burst}, ms=2_000.0))
    p, h = ({s.name: s for s in r.states} for r in (polled, hidden))
    assert p["C1E"].usage > 0.6 * sum(s.usage for s in p.values())
    assert p["C6"].above < 0.05 * p["C6"].usage
    assert h["C6"].above > 0.3 * h["C6"].usage
    assert h["C1E"].usage < 0.5 * p["C1E"].usage


def test_polls_count_in_the_rate_and_run_the_same_without_the_jit() -> None:
    cls = {**OTHER, "polls": {**POLLS, "jitter": 0.2}}
    assert SimConfig.model_validate({"wakeups": {"load": [cls]}}).wakeups.load[0].expected_rate_hz() == (
        pytest.approx(
            (50.0 + 1e6 / 3_000 + 5.0 / 0.0505) / 0.7 + PollingWork.model_validate(POLLS).expected_rate_hz()
        )
    )  # polls start no follow-ups: their rate is not divided by 1 - p
    cfg = _config(cls, ms=300.0)
    (uncompiled,) = simulate_uncompiled([cfg])
    compiled = simulate(cfg)
    assert compiled.wakeups > 100
    assert uncompiled == compiled.model_dump_json()
