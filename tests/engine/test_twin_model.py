"""The fit's load map with two polling works, and the states whose stays the governor foresaw
(what gives a machine its second polling work)."""

from __future__ import annotations

import math

import pytest

from engine import SimConfig
from engine.load_config import LoadClass
from engine.twin.counters import Figures, StateFigures
from engine.twin.model import LoadMap, foreseen_stays_us


def _state(share: float, above: float, below: float, stay_us: float) -> StateFigures:
    return StateFigures(
        entry_share=share, time_share=0.0, above_ratio=above, below_ratio=below, mean_stay_us=stay_us
    )


def test_a_second_polling_work_follows_the_map_as_it_was() -> None:
    one = LoadMap(2, [40.0, 20.0])
    two = LoadMap(2, [40.0, 20.0], poll_sleeps_us=(None, (500.0, 2_000.0)))
    assert two.params[: len(one.params)] == one.params
    extra = two.params[len(one.params) :]
    assert [p.name for p in extra] == [
        "polls2.sleep_us",
        "polls2.sleeps_mean",
        "class0.polls2.share",
        "class1.polls2.share",
    ]
    assert (extra[0].low, extra[0].high) == (math.log10(500.0), math.log10(2_000.0))
    assert LoadMap(2, [40.0, 20.0], poll_sleeps_us=()).params == one.params[: -2 - 2]  # no polls
    with pytest.raises(ValueError, match="at most 2"):
        LoadMap(1, poll_sleeps_us=(None, None, None))


def test_the_second_polling_work_is_a_class_more_on_the_same_cpus_within_the_rate() -> None:
    load_map = LoadMap(2, [40.0, 20.0], poll_sleeps_us=(None, (500.0, 2_000.0)))
    v = {p.name: (p.low + p.high) / 2 for p in load_map.params}
    v["class0.rate_ratio"] = v["class1.rate_ratio"] = 0.0  # log10: the measured rate
    v["follow_ups.probability"] = 0.0
    v["class0.polls.share"] = v["class1.polls.share"] = 0.3
    v["class0.polls2.share"] = v["class1.polls2.share"] = 0.2
    v["polls2.sleep_us"] = 3.0  # 1 ms
    v["hrtimer.period_us"] = 6.0  # 1 s
    loads = load_map.load([v[p.name] for p in load_map.params], [0, 1, 0, 1])
    assert [c["cpus"] for c in loads] == [[0, 2], [1, 3], [0, 2], [1, 3]]
    assert set(loads[2]) == {"cpus", "polls"} and loads[2]["polls"]["sleep_us"] == pytest.approx(1_000.0)
    classes = [LoadClass.model_validate(c) for c in loads]
    for k, measured in enumerate((40.0, 20.0)):
        assert classes[k + 2].expected_rate_hz() == pytest.approx(0.2 * measured, rel=1e-6)
        assert classes[k].polls is not None
        assert classes[k].polls.expected_rate_hz() == pytest.approx(0.3 * measured, rel=1e-6)
        # The rest: the two timers and invisible wake-ups at half the measured rate.
        assert classes[k].expected_rate_hz() + classes[k + 2].expected_rate_hz() == pytest.approx(measured)


def test_foreseen_stays_are_those_of_states_with_few_above_and_below() -> None:
    table = SimConfig(platform="skx").resolve_platform()  # POLL, C1, C1E, C6
    figures = Figures(
        states={
            "POLL": _state(0.2, 0.0, 0.0, 30.0),  # POLL is never one
            "C1": _state(0.10, 0.01, 0.05, 25.0),
            "C1E": _state(0.30, 0.05, 0.08, 180.0),
            "C6": _state(0.40, 0.01, 0.0, 900.0),  # the deepest enabled: never one
        },
        entries_per_idle_s=100.0,
    )
    assert foreseen_stays_us(figures, table, [False] * 4) == ((90.0, 360.0), (12.5, 50.0))
    assert foreseen_stays_us(figures, table, [False, False, False, True]) == ((12.5, 50.0),)  # C1E deepest
    shorter = figures.model_copy(update={"states": {**figures.states, "C1": _state(0.10, 0.2, 0.05, 25.0)}})
    assert foreseen_stays_us(shorter, table, [False] * 4) == ((90.0, 360.0),)  # C1's above 0.2
    rare = figures.model_copy(update={"states": {**figures.states, "C1E": _state(0.04, 0.05, 0.08, 180.0)}})
    assert foreseen_stays_us(rare, table, [False] * 4) == ((12.5, 50.0),)
    deep = figures.model_copy(update={"states": {**figures.states, "C1E": _state(0.3, 0.05, 0.3, 180.0)}})
    assert foreseen_stays_us(deep, table, [False] * 4) == ((12.5, 50.0),)  # C1E's below 0.3
