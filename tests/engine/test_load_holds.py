"""Latency holds in the idle load (`LoadClass.latency_holds`): a system-wide PM QoS CPU latency
request raised for stretches of time. Off by default, and then nothing else changes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine import SimConfig, simulate
from engine.load import draw_load
from tests.engine.conftest import LOAD_BESIDE as OTHER
from tests.engine.conftest import make_config, quiet, simulate_uncompiled

T_END = 20_000_000_000  # 20 s
HOLDS = {"hold_us": 10_000.0, "gap_ms": 90.0}


def _config(*classes: dict[str, Any], cores: int = 4, ms: float = 10.0) -> SimConfig:
    return make_config(
        seed=7,
        duration_ms=ms,
        topology={"sockets": 1, "cores_per_socket": cores, "threads_per_core": 1},
        wakeups=quiet(load=list(classes), tick={"hz": 1000}),
    )


def _spans(load: Any, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    h = load.holds
    i, j = h.off[c], h.off[c + 1]
    return h.start[i:j], h.end[i:j], h.limit_ns[i:j]


def test_a_class_without_holds_serialises_as_before() -> None:
    cfg = _config(OTHER)
    assert "latency_holds" not in cfg.model_dump()["wakeups"]["load"][0]
    held = SimConfig.model_validate({"wakeups": {"load": [{"latency_holds": {}}]}})
    assert held.model_dump()["wakeups"]["load"][0]["latency_holds"]["limit_us"] == 0.0


def test_holds_are_the_same_on_their_class_and_leave_every_other_arrival_as_it_was() -> None:
    plain = draw_load(_config({**OTHER, "cpus": [0, 1]}, {**OTHER, "cpus": [2, 3]}), 4, T_END)
    held = draw_load(
        _config({**OTHER, "cpus": [0, 1], "latency_holds": HOLDS}, {**OTHER, "cpus": [2, 3]}), 4, T_END
    )
    for a, b in zip(plain.timers, held.timers, strict=True):
        assert np.array_equal(a.times, b.times) and np.array_equal(a.off, b.off)
    start, end, limit = _spans(held, 0)
    assert np.array_equal(start, _spans(held, 1)[0]) and np.array_equal(end, _spans(held, 1)[1])
    assert len(_spans(held, 2)[0]) == 0 and len(_spans(held, 3)[0]) == 0
    assert np.all(limit == 0) and np.all(end > start) and np.all(start[1:] > end[:-1])
    assert (end - start).sum() / T_END == pytest.approx(10.0 / 100.0, rel=0.15)  # ~200 holds
    for c in range(4):  # the other wake-ups as they were, plus one at each start and end
        mine = held.wake_t[held.wake_off[c] : held.wake_off[c + 1]]
        before = plain.wake_t[plain.wake_off[c] : plain.wake_off[c + 1]]
        edges = np.sort(np.concatenate([start, end[end < T_END]])) if c < 2 else np.empty(0, np.int64)
        assert np.array_equal(mine, np.sort(np.concatenate([before, edges])))
        works = held.wake_work[held.wake_off[c] : held.wake_off[c + 1]]
        assert np.all(works[np.isin(mine, edges)] == 0)


def test_overlapping_holds_of_two_classes_take_the_lowest_limit() -> None:
    low = {"latency_holds": {**HOLDS, "limit_us": 0.0}}
    high = {"latency_holds": {**HOLDS, "gap_ms": 20.0, "limit_us": 5.0}}
    load = draw_load(_config(low, high), 4, T_END)
    start, end, limit = _spans(load, 0)
    assert np.all(start[1:] >= end[:-1]) and set(np.unique(limit)) == {0, 5_000}
    only_low = draw_load(_config(low), 4, T_END)
    lo_start, lo_end, _ = _spans(only_low, 0)
    zero = limit == 0
    assert (end[zero] - start[zero]).sum() == (lo_end - lo_start).sum()  # where both hold: 0 us


def test_while_held_the_cpu_polls_in_back_to_back_time_outs() -> None:
    # skx: cpuidle_poll_time() is C1E's 20 us (C1's 2 us is under 10 us and skipped); with the
    # request at 0 us menu returns POLL at once, POLL times out at the first clock check past
    # 20 us and is entered again, so every held stretch is POLL stays of that length, and
    # nothing else wakes these CPUs but a 50 ms hrtimer and the holds' own edges.
    cfg = _config(
        {"timers": [{"kind": "hrtimer", "period_us": 50_000.0}], "latency_holds": HOLDS}, cores=2, ms=2_000.0
    )
    result = simulate(cfg)
    load = draw_load(cfg, 2, int(2e9))
    poll = next(s for s in result.states if s.name == "POLL")
    held_ns = sum(int((_spans(load, c)[1] - _spans(load, c)[0]).sum()) for c in range(2))
    assert held_ns > 0.05 * 2 * 2e9
    # Held time is POLL time but for the idle loop's exit and entry between two stays.
    assert 0.9 * held_ns < poll.time_ns < held_ns
    assert poll.below == pytest.approx(poll.usage, rel=0.01)  # stays past C1's residency
    mean_ns = poll.time_ns / poll.usage  # up to one clock check (201 PAUSEs) late, and the exit
    assert 20_000 < mean_ns < 30_000
    assert poll.usage == pytest.approx(held_ns / mean_ns, rel=0.1)  # back to back


def test_the_fit_map_holds_the_share_of_time_it_is_given() -> None:
    from engine.twin.model import LoadMap

    plain, held = LoadMap(2, [40.0, 20.0]), LoadMap(2, [40.0, 20.0], holds=True)
    assert held.params[: len(plain.params)] == plain.params  # the map as before, holds last
    assert [p.name for p in held.params[len(plain.params) :]] == ["holds.time_share", "holds.hold_us"]
    x = [(p.low + p.high) / 2 for p in plain.params] + [-3.0, 3.0]  # 0.1% held, 1 ms holds
    classes = held.load(x, [0, 1, 0, 1])
    assert all("latency_holds" not in c for c in plain.load(x[: len(plain.params)], [0, 1, 0, 1]))
    for c in classes:
        h = c["latency_holds"]
        assert h["limit_us"] == 0.0 and h["hold_us"] == pytest.approx(1_000.0)
        assert h["hold_us"] / (h["hold_us"] + 1e3 * h["gap_ms"]) == pytest.approx(1e-3)


def test_holds_run_the_same_without_the_jit() -> None:
    cfg = _config({**OTHER, "latency_holds": {"hold_us": 2_000.0, "gap_ms": 20.0}}, ms=300.0)
    (uncompiled,) = simulate_uncompiled([cfg])
    compiled = simulate(cfg)
    assert next(s for s in compiled.states if s.name == "POLL").usage > 100
    assert uncompiled == compiled.model_dump_json()
