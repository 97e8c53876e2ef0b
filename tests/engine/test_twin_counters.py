"""A twin's counters: figures from measured and simulated counters, bad input, CPU classes."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.platforms.sysfs import parse_dump
from engine import SimConfig, simulate
from engine.kernel import layout as K
from engine.simulate import _Prepared, idle_counters
from engine.twin.counters import CounterError, MachineCounters, cpu_classes, figures, most_different_cpu

MACHINES = Path(__file__).resolve().parents[2] / "app" / "fits" / "dev_machines"
NAMES = ["POLL", "C1", "C6"]


def _counters(values: list[list[list[int]]], **kw: Any) -> MachineCounters:
    fields: dict[str, Any] = {
        "states": NAMES,
        "exit_latency_us": [0.0, 2.0, 133.0],
        "target_residency_us": [0.0, 2.0, 600.0],
        "disabled": [False, False, False],
        "cpus": [0, 1],
        "values": values,
    }
    return MachineCounters(**{**fields, **kw})


# usage, time (us), above, below; CPU 0 then CPU 1; POLL, C1, C6.
GOOD = [
    [[0, 10, 30], [2, 20, 40]],
    [[0, 500, 3_000_000], [40, 1000, 1_998_460]],
    [[0, 1, 10], [0, 2, 20]],
    [[0, 3, 0], [1, 4, 0]],
]


def sklep0() -> MachineCounters:
    return MachineCounters.from_dump(parse_dump(gzip.open(MACHINES / "sklep0-sysfs.txt.gz").read()))


def test_figures_by_hand() -> None:
    # 102 entries in 5,000,000 us of idle: 20.4 per idle second. C1: 30 entries (29.4%), 1500 us,
    # above 3/30, below 7/30, stays of 50 us; C6: 70 entries, 4,998,460 us (99.97%), above 30/70.
    c = _counters(GOOD, elapsed_s=10.0).check()
    f = figures(c.array(), c.states, c.elapsed_s)
    assert f.entries_per_idle_s == pytest.approx(20.4)
    assert f.entries_per_s == pytest.approx(102 / 2 / 10.0)
    c1, c6 = f.states["C1"], f.states["C6"]
    assert c1.entry_share == pytest.approx(30 / 102) and c1.mean_stay_us == pytest.approx(50.0)
    assert c1.above_ratio == pytest.approx(0.1) and c1.below_ratio == pytest.approx(7 / 30)
    assert c6.time_share == pytest.approx(4_998_460 / 5_000_000) and c6.above_ratio == pytest.approx(3 / 7)
    assert f.states["POLL"].mean_stay_us == pytest.approx(20.0)
    assert figures(c.array(), c.states).entries_per_s is None  # no window: per idle second only


def test_sklep0_figures_are_the_issues() -> None:
    # Issue 21: 18.9 entries per CPU per idle second, C1 10.6% of entries, C6 99.9% of idle time
    # with above/usage 0.55.
    c = sklep0()
    assert len(c.cpus) == 104 and c.elapsed_s is None
    f = figures(c.array(), c.states)
    assert f.entries_per_idle_s == pytest.approx(18.9, abs=0.05)
    assert f.states["C1"].entry_share == pytest.approx(0.106, abs=0.0005)
    assert f.states["C6"].time_share > 0.999 and f.states["C6"].above_ratio == pytest.approx(0.55, abs=0.005)
    assert c.package is not None and sorted(set(c.package)) == [0, 1]  # die ids, no package ids
    keys = c.core_keys()
    assert sorted(keys[i] for i in range(104) if c.package[i] == 0) == list(range(52))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cpus": [], "values": [[], [], [], []]}, "counters: no CPU has cpuidle counters"),
        ({"values": [[[0, -1, 30], [2, 20, 40]], *GOOD[1:]]}, "usage: CPU 0 C1 is negative"),
        (
            {"values": [GOOD[0], GOOD[1], [[0, 8, 10], [0, 2, 20]], GOOD[3]]},
            r"above \+ below: CPU 0 C1 has above 8 \+ below 3 > usage 10",
        ),
        (
            {"values": [[[0, 10, 30], [0, 20, 40]], GOOD[1], GOOD[2], [[0, 3, 0], [0, 4, 0]]]},
            "time: CPU 1 POLL has time 40 us and usage 0",
        ),
        ({"values": [[[0] * 3] * 2] * 4}, "usage: every count is 0"),
        ({"disabled": [False]}, "disabled: 1 values for 3 states"),
    ],
)
def test_counters_that_cannot_be_fitted_say_why(change: dict[str, Any], message: str) -> None:
    with pytest.raises(CounterError, match=message):
        _counters(GOOD).model_copy(update=change).check()


def test_a_counter_error_names_the_field_path_and_the_reason() -> None:
    negative = [[[0, -1, 30], [2, 20, 40]], *GOOD[1:]]
    with pytest.raises(CounterError) as err:
        _counters(negative).check()
    assert err.value.loc == ("values", "usage", "cpu0", "C1")
    assert err.value.reason == "CPU 0 C1 is negative (-1)"
    too_many = [GOOD[0], GOOD[1], [[0, 8, 10], [0, 2, 20]], GOOD[3]]  # CPU 0 C1: 8 + 3 > 10
    with pytest.raises(CounterError) as err:
        _counters(too_many).check()
    assert err.value.loc == ("values", "above", "cpu0", "C1") and "> usage 10" in err.value.reason
    with pytest.raises(CounterError) as err:
        _counters(GOOD).model_copy(update={"disabled": [False]}).check()
    assert err.value.loc == ("disabled",)


def test_two_snapshots_give_the_interval_and_refuse_another_boot() -> None:
    before = _counters(GOOD, elapsed_s=100.0)
    later = np.array(GOOD) * 2
    after = _counters(later.tolist(), elapsed_s=130.0)
    c = MachineCounters.interval(before, after)
    assert c.values == GOOD and c.elapsed_s == pytest.approx(30.0)
    shrunk = later.copy()
    shrunk[1, 1, 2] = 5  # CPU 1's C6 time went back
    with pytest.raises(CounterError, match="time: CPU 1 C6 went back from 1998460 to 5") as err:
        MachineCounters.interval(before, _counters(shrunk.tolist(), elapsed_s=130.0))
    assert err.value.loc == ("values", "time", "cpu1", "C6")
    assert c.since_boot is False
    with pytest.raises(
        CounterError, match="cpus: CPU 1 is in one snapshot only: CPUs changed between the snapshots"
    ):
        MachineCounters.interval(before, _counters(later.tolist(), cpus=[0, 2], elapsed_s=130.0))
    with pytest.raises(CounterError, match="states: the snapshots differ"):
        MachineCounters.interval(before, _counters(later.tolist(), states=["POLL", "C1", "C6P"]))
    with pytest.raises(CounterError, match="elapsed_s: the second snapshot's uptime"):
        MachineCounters.interval(before, _counters(later.tolist(), elapsed_s=90.0))


def _stay_oracle(start: int, ret: int, s: int, res_ns: np.ndarray, exit_ns: np.ndarray, enabled: np.ndarray):  # type: ignore[no-untyped-def]
    """cpuidle_enter_state() (drivers/cpuidle/cpuidle.c), transcribed: `diff = ktime_us_delta(time_end,
    time_start)`; above when diff < target residency and any shallower state is enabled; else, when
    diff > the state's exit latency, below when diff - exit latency reaches the target residency
    of the first enabled deeper state."""
    diff = ret - start
    above = below = 0
    if diff < res_ns[s]:
        above = int(any(enabled[:s]))
    elif diff > exit_ns[s]:
        deeper = [i for i in range(s + 1, len(res_ns)) if enabled[i]]
        if deeper and diff - exit_ns[s] >= res_ns[deeper[0]]:
            below = 1
    return above, below


@pytest.mark.parametrize("disabled", [[], ["C1E"]])
def test_simulated_above_and_below_follow_cpuidle_enter_state(disabled: list[str]) -> None:
    # Every stay of every CPU is recorded (the timeline covers the run): the kernel's counters
    # must be the transcribed rule applied to each stay.
    load = [{"bursts": {"quiet_rate_hz": 300.0, "burst_rate_hz": 20_000.0}, "follow_ups": {}}]
    cfg = SimConfig.model_validate(
        {
            "duration_ms": 100.0,
            "topology": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1},
            "states": {"disabled": disabled},
            "output": {"timeline_cpus": 4, "timeline_ms": 100.0},
            "wakeups": {"load": load, "interrupts": {"rate_hz": 500.0}},
        }
    )
    run = _Prepared(cfg)
    run.step(run.t_end)
    rows = run.tl[: run.ctr[K.K_TL]]
    want = np.zeros((4, 4, len(run.res_ns)), dtype=np.int64)
    for c, start, ret, s in rows.tolist():
        above, below = _stay_oracle(start, ret, s, run.res_ns, run.exit_ns, run.enabled)
        want[:, c, s] += [1, ret - start, above, below]
    got = run.st[[K.ST_USAGE, K.ST_TIME, K.ST_ABOVE, K.ST_BELOW]]
    assert want[0].sum() > 500 and want[2].sum() > 20 and want[3].sum() > 20
    assert (got == want).all()


def test_idle_counters_are_the_results_counters_per_cpu() -> None:
    cfg = SimConfig(duration_ms=50.0, topology={"sockets": 1, "cores_per_socket": 4})  # type: ignore[arg-type]
    a = idle_counters(cfg)
    r = simulate(cfg)
    assert a.shape == (4, 8, 4)
    assert a[0].sum(axis=0).tolist() == [s.usage for s in r.states]
    assert a[1].sum(axis=0).tolist() == [s.time_ns for s in r.states]
    assert a[2].sum(axis=0).tolist() == [s.above for s in r.states]
    assert a[3].sum(axis=0).tolist() == [s.below for s in r.states]


def test_sklep0_splits_into_classes_by_its_c1_share() -> None:
    c = sklep0()
    a = c.array()
    classes = cpu_classes(a, seed=1)
    assert (classes == cpu_classes(a, seed=1)).all()  # seeded
    assert 2 <= classes.max() + 1 <= 3
    c1_share = a[0, :, 1] / a[0].sum(axis=1)
    pos = {cpu: i for i, cpu in enumerate(c.cpus)}
    # CPU 48 puts 35% of its entries in C1, CPU 67 1.2%: different classes.
    assert classes[pos[48]] != classes[pos[67]]
    # Each class's C1 shares: the classes separate them (means at least 10 points apart).
    means = sorted(float(c1_share[classes == k].mean()) for k in range(classes.max() + 1))
    assert means[-1] - means[0] > 0.10
    assert c.cpus[most_different_cpu(a)] == 0  # CPU 0: the busiest housekeeping CPU (36.8 per idle s)
