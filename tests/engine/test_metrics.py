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
    # Summed once: the same figure as the result's system row and the sum of its sockets' rows.
    hardware = result["hardware"]
    assert summed == pytest.approx(hardware["system"]["turbostat"]["PkgWatt"])
    assert summed == pytest.approx(sum(s["turbostat"]["PkgWatt"] for s in hardware["sockets"]))


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


def test_details_and_state_families_read_their_fields(result: dict) -> None:  # type: ignore[type-arg]
    ipi = result["ipi"]
    assert metrics.get("ipi.line_transfers_sender").value(result) == ipi["line_transfers_sender"]
    assert metrics.get("ipi.stuck_wakeups").direction == "down"
    first = ipi["requested"] - ipi["coalesced"]
    share = metrics.get("ipi.calls.sent_share")
    assert share.unit == "share" and share.value(result) == (ipi["ipis_sent"] / first if first else None)
    c1 = next(s for s in result["states"] if s["name"] == "C1")
    assert metrics.get("intr_latency_mean.C1").value(result) == c1["intr_latency_mean_ns"]
    assert metrics.get("exit_latency.C1").value(result) == c1["exit_latency_us"]
    assert metrics.get("exit_latency.C1").unit == "us"
    with pytest.raises(KeyError):
        metrics.get("intr_latency_mean")


def test_idle_thread_residency_leaves_out_the_busy_threads() -> None:
    r = {
        "per_cpu_state_names": ["POLL", "C6"],
        "per_cpu_residency": [[0.0, 0.9], [0.0, 0.5], [0.0, 0.0]],
        "hardware": {"per_cpu_busy": [0.1, 0.3, 1.0]},  # the third thread runs a CPU-bound task
    }
    assert metrics.get("idle_thread_residency.C6").value(r) == pytest.approx(0.7)
    assert metrics.get("idle_thread_residency.C1").value(r) is None


def test_details_stay_out_of_lists_summaries_and_comparisons() -> None:
    fixed = {m.key for m in metrics.FIXED}
    compared = {m.key for m in metrics.compared(["C1"])}
    for m in metrics.DETAILS:
        assert m.key not in fixed and m.key not in compared and metrics.get(m.key) is m
