"""A run against a wult measurement per requested C-state: each state on both sides its own rows,
few samples marked as wult's page marks them, the overall rows marked as mixing each side's own
proportions, and the text and Markdown exports showing the per-state rows."""

from __future__ import annotations

from typing import Any

import pytest

from tests.app.factories import done_run
from tests.app.measurements.test_wult import INFO, ROWS, csv

# Two states enabled on skx, a timer whose distances reach both (C1E disabled, POLL kept).
RUN = {
    "duration_ms": 300,
    "topology": {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1},
    "states": {"disabled": ["C1E"]},
    "wakeups": {
        "timers": [{"cpus": [1], "work_us": 5.0, "interval": {"distribution": "uniform", "min_us": 1.0,
                                                              "max_us": 2000.0, "rearm_after_us": 50.0}}],
        "interrupts": {"rate_hz": 0.0}, "ipis": {"rate_hz": 0.0}, "sched_wakeups": {"rate_hz": 0.0},
    },
}  # fmt: skip


@pytest.fixture
def compared(app_client: Any) -> tuple[Any, str, str, dict[str, Any]]:
    run_id, _ = done_run(app_client.app, RUN)
    files = [("files", ("datapoints.csv", csv(*ROWS))), ("files", ("info.yml", INFO.encode()))]
    wult = app_client.post("/api/measurements", files=files).json()["id"]
    r = app_client.get(f"/api/compare?ids={run_id},{wult}")
    assert r.status_code == 200, r.text
    return app_client, run_id, wult, r.json()


def test_each_requested_state_on_both_sides_gets_its_own_rows(compared: Any) -> None:
    client, run_id, wult, body = compared
    states = body["measured_states"]
    result = client.get(f"/api/runs/{run_id}").json()["result"]
    woke = {s["name"]: s for s in result["states"] if s.get("wake_latency")}
    assert {"C1", "C6"} <= set(woke), "the run's distances reach C1 and C6"
    assert states["measurements"] == [wult]
    assert [s for s in states["states"] if s in ("C1", "C6")] == ["C1", "C6"]
    rows = {(r["state"], r["metric"]): r for r in states["rows"]}
    c6 = rows[("C6", "WakeLatency")]
    # ROWS' three C6 wake-ups (100.5, 60.25 and 3.0 us), against the run's wake-ups out of C6.
    assert c6["measured"][0]["count"] == 3 and c6["measured"][0]["p50_ns"] == pytest.approx(60250.0)
    assert c6["measured"][0]["few_samples"] == ["p90", "p99", "p99.9"], "3 samples: each is the largest"
    sim = c6["simulated"][0]
    assert sim["count"] == woke["C6"]["wake_latency"]["count"]
    assert sim["p99_ns"] == woke["C6"]["wake_latency"]["p99_ns"]
    assert c6["deltas_pct"][0]["p50_ns"] == pytest.approx((sim["p50_ns"] - 60250.0) / 60250.0 * 100)
    assert c6["measured_share"] == [pytest.approx(3 / 5)]
    assert c6["simulated_share"][0] == pytest.approx(sim["count"] / result["latency"]["wake"]["count"])
    assert ("C6", "IntrLatency") in rows, "both have IntrLatency"
    # The overall rows stay, marked as mixing the states in each side's own proportions.
    overall = rows[("all", "WakeLatency")]
    assert overall["mixed"] is True and overall["measured"][0]["count"] == 5
    assert states["measured_proportions"][0] == {
        "POLL": pytest.approx(0.2), "C1": pytest.approx(0.2), "C6": pytest.approx(0.6)
    }  # fmt: skip
    assert sum(states["simulated_proportions"][0].values()) == pytest.approx(1.0)
    assert "own proportions" in states["note"]
    # The overall rows of the aligned figures say so too.
    p99 = next(m for m in body["measured"] if m["key"] == "latency.wake.p99_ns")
    assert p99["label"].endswith("(all states, mixed in each side's own proportions)")


def test_the_page_and_the_exports_show_the_per_state_rows(compared: Any) -> None:
    client, run_id, wult, _ = compared
    page = client.get(f"/compare?ids={run_id},{wult}").text
    assert 'id="measured-states"' in page
    assert 'data-state="C6" data-metric="WakeLatency"' in page
    assert "too few samples for p90, p99, p99.9" in page
    assert "own proportions" in page
    text = client.get(f"/api/compare?ids={run_id},{wult}&format=text").text
    assert "per requested C-state" in text
    c6 = next(line for line in text.splitlines() if line.startswith("C6") and "WakeLatency" in line)
    assert "M1" in text and "60.25" in text and "C6" in c6
    assert "all states, mixed" in text and "M1 POLL 20.0%, C1 20.0%, C6 60.0%" in text
    markdown = client.get(f"/api/compare?ids={run_id},{wult}&format=markdown").text
    assert "| C6 | WakeLatency |" in markdown and "few samples" in markdown


def test_a_run_made_before_per_state_figures_shows_its_means_only() -> None:
    from app.compare.measured_states import state_comparison

    view = {"kind": "wult", "count": 1, "requested": [{"req_cstate": "C6", "count": 1,
            "stats": {"WakeLatency": {"count": 1, "mean_ns": 50.0, "p50_ns": 50.0, "p90_ns": 50.0,
                                      "p99_ns": 50.0, "p999_ns": 50.0}}}], "overall": {}}  # fmt: skip
    old = {"states": [{"name": "C6", "wake_latency_mean_ns": 60.0, "intr_latency_mean_ns": None}],
           "latency": {"wake": {"count": 4}}}  # fmt: skip
    got = state_comparison([("m", view)], [old])
    assert got is not None
    (row,) = got.rows
    assert row.simulated[0] is not None and row.simulated[0].mean_ns == 60.0
    assert row.simulated[0].count is None and row.simulated[0].p50_ns is None
    assert row.deltas_pct[0] == {"mean_ns": pytest.approx(20.0), "p50_ns": None, "p90_ns": None,
                                 "p99_ns": None, "p999_ns": None}  # fmt: skip
    assert got.simulated_proportions == [None]
