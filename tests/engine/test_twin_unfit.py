"""What makes counters unfit for a twin: a state disabled for part of the window, CPUs whose idle
time differs, since-boot counters over a short uptime; the development dumps as real cases."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from app.platforms.sysfs import parse_dump
from engine.twin import MachineCounters, unfit_reasons
from engine.twin.unfit import LONGEST_STAY_US

MACHINES = Path(__file__).resolve().parents[2] / "app" / "fits" / "dev_machines"


def _counters(values: list[list[list[int]]], **kw: Any) -> MachineCounters:
    # POLL, C1 (1/2 us), C6 (133/600 us): C1's below threshold is 600 + 1 = 601 us.
    fields: dict[str, Any] = {
        "states": ["POLL", "C1", "C6"],
        "exit_latency_us": [0.0, 1.0, 133.0],
        "target_residency_us": [0.0, 2.0, 600.0],
        "disabled": [False, False, False],
        "cpus": [0, 1, 2],
        "values": values,
        "elapsed_s": 86_400.0,
        "since_boot": True,
    }
    return MachineCounters(**{**fields, **kw}).check()


def _machine(name: str) -> MachineCounters:
    return MachineCounters.from_dump(parse_dump(gzip.open(MACHINES / f"{name}-sysfs.txt.gz").read()))


def _healthy_c1(below: int, time_us: int) -> list[list[list[int]]]:
    # usage, time (us), above, below; CPUs 0, 1, 2 (1 and 2 alike); POLL, C1, C6. ~40,000 s of idle each.
    return [
        [[10, 1_000, 10_000], [10, 1_000, 10_000], [10, 1_000, 10_000]],
        [[100, time_us, 39_999_000_000], [100, 50_000, 39_999_900_000], [100, 50_000, 39_999_900_000]],
        [[0, 10, 5_000], [0, 10, 5_000], [0, 10, 5_000]],
        [[1, below, 0], [1, 10, 0], [1, 10, 0]],
    ]


def test_a_state_disabled_for_part_of_the_time_is_proven_by_its_counters() -> None:
    # CPU 0's C1: 1,000 stays, 2 of them `below`. The 998 others are each shorter than 601 us, so at
    # least 1,000 s - 998 x 601 us sits in 2 stays: ~500 s each, longer than any idle stay can be.
    disabled = _healthy_c1(below=2, time_us=1_000_000_000)
    disabled[0][0][1] = 1_000
    found = unfit_reasons(_counters(disabled))
    assert [(u.kind, u.state, u.cpus) for u in found] == [("disabled_part_time", "C1", [0])]
    assert "C6 (or every state deeper than C1) was disabled for part of the window" in found[0].message
    # The same time in stays of up to LONGEST_STAY_US each is possible with C6 enabled.
    possible = _healthy_c1(below=2, time_us=int(2 * LONGEST_STAY_US))
    possible[0][0][1] = 1_000
    assert unfit_reasons(_counters(possible)) == []


def test_cpus_whose_idle_time_differs_and_a_short_uptime_are_flagged() -> None:
    values = _healthy_c1(below=10, time_us=50_000)
    values[1][1][2] = 30_000_000_000  # CPU 1 idled 30,000 s where CPU 0 idled 40,000 s
    found = unfit_reasons(_counters(values))
    assert [(u.kind, u.cpus) for u in found] == [("idle_time_differs", [1])]
    short = unfit_reasons(_counters(_healthy_c1(10, 50_000), elapsed_s=600.0))
    assert [u.kind for u in short] == ["short_uptime"] and "an uptime of 600 s" in short[0].message
    # Over an interval (two snapshots) neither applies: the window is known and shared.
    values_interval = _counters(values, elapsed_s=600.0, since_boot=False)
    assert unfit_reasons(values_interval) == []


def test_the_development_dumps_say_what_makes_them_unfit() -> None:
    # icx2s3: C1 holds 86% of idle time in ~110 ms stays with below/usage 0.0001 (README there).
    icx = unfit_reasons(_machine("icx2s3"))
    assert [(u.kind, u.state) for u in icx] == [("disabled_part_time", "C1")]
    assert len(icx[0].cpus) == 32
    # sklep0: no uptime in the dump, 757 s of idle per CPU at most: a short since-boot window;
    # its CPUs idled alike (753-757 s), and no state shows a disabled deeper one.
    sk = unfit_reasons(_machine("sklep0"))
    assert [u.kind for u in sk] == ["short_uptime"] and "at least 757 s" in sk[0].message
