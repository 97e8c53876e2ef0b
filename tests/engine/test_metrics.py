"""The metric registry: one declaration per figure, read the same way wherever it is shown."""

from __future__ import annotations

import pytest

from engine import SimConfig, metrics, simulate


@pytest.fixture(scope="module")
def result() -> dict:  # type: ignore[type-arg]
    config = SimConfig(duration_ms=20, topology={"sockets": 2, "cores_per_socket": 2})
    return simulate(config).model_dump(mode="json")


def test_keys_are_unique_and_every_metric_reads_or_says_none(result: dict) -> None:  # type: ignore[type-arg]
    keys = [m.key for m in metrics.FIXED]
    assert len(keys) == len(set(keys))
    for m in metrics.FIXED:
        v = m.value(result)
        assert v is None or isinstance(v, float), m.key


def test_directions_units_and_thresholds(result: dict) -> None:  # type: ignore[type-arg]
    wake = metrics.get("latency.wake.p99_ns")
    assert (wake.direction, wake.better, wake.unit_kind, wake.practical_threshold) == (
        "down",
        "lower",
        "%",
        1.0,
    )
    share = metrics.get("residency.C6")
    assert (share.direction, share.unit_kind, share.practical_threshold) == ("none", "pp", 0.5)
    assert metrics.get("ipi.ipis_avoided").better == "higher"
    assert metrics.get("ipi.ipis_sent").value(result) == pytest.approx(
        result["ipi"]["ipis_sent"] + result["ipi"]["sched_ipis_sent"]
    )


def test_totals_normalise_per_second_and_per_cpu(result: dict) -> None:  # type: ignore[type-arg]
    wakeups = metrics.get("wakeups")
    seconds = result["duration_ns"] / 1e9
    assert wakeups.per_second(result) == pytest.approx(result["wakeups"] / seconds)
    assert wakeups.per_cpu(result) == pytest.approx(result["wakeups"] / result["cpus"])
    latency = metrics.get("latency.wake.mean_ns")  # not a total: the same number either way
    assert latency.per_second(result) == latency.value(result) == latency.per_cpu(result)


def test_pkgwatt_per_socket_and_as_turbostat_sums_it(result: dict) -> None:  # type: ignore[type-arg]
    per_socket = metrics.get("hardware.PkgWatt").value(result)
    summed = metrics.get("turbostat.PkgWatt").value(result)
    assert per_socket is not None and summed == pytest.approx(per_socket * result["sockets"])


def test_a_measurement_reads_the_same_figure() -> None:
    view = {"overall": {"WakeLatency": {"p99_ns": 1234.0}}, "summary": {"C6%": 55.0, "Busy%": 3.0}}
    assert metrics.get("latency.wake.p99_ns").of_measurement(view) == 1234.0
    assert metrics.get("latency.timer.p99_ns").of_measurement(view) is None  # wult has no timer
    rows = {m.key for m in metrics.measured(["turbostat"], view["summary"])}
    assert {
        "turbostat.C6%",
        "turbostat.Busy%",
        "turbostat.PkgWatt",
    } <= rows and "turbostat.Busy%%" not in rows
