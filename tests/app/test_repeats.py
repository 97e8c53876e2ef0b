"""Repeats through a real server: each repeat its own seed and task, the run done when all are,
its summary columns the means, reuse keyed by (config hash, repeats), the caps refused with 422."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import httpx
import pytest

from app.jobs.runner import Held
from app.jobs.worker import RepeatAnswer
from app.runs.lifecycle import summary_stats
from engine.repeats import repeat_seeds
from tests.app.factories import small_config, submit, wait_finished


@pytest.fixture(scope="module")
def client(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=120.0) as c:
        yield c


def test_a_repeated_run_keeps_repeat_0_and_every_repeat_summary(client: httpx.Client) -> None:
    config = small_config(seed=4242, duration_ms=20)
    run = wait_finished(client, submit(client, config, repeats=4)["id"])
    assert run["status"] == "done", run["error"]
    assert run["repeat_count"] == 4 and run["progress"] == 1.0
    assert [r["seed"] for r in run["repeats"]] == repeat_seeds(4242, 4)
    wakeups = [r["summary"]["wakeups"] for r in run["repeats"]]
    assert len(set(wakeups)) > 1, "different seeds give different figures"
    stats = run["summary_stats"]["wakeups"]
    assert stats["n"] == 4
    assert stats["mean"] == pytest.approx(statistics.fmean(wakeups))
    assert stats["stddev"] == pytest.approx(statistics.stdev(wakeups))
    # The list's summary column is the mean (lists sort by it); the result is repeat 0's.
    assert run["wakeups"] == int(stats["mean"])
    assert run["result"]["wakeups"] == wakeups[0]

    single = wait_finished(client, submit(client, config)["id"])
    assert single["reused_from"] is None, "a single run is not answered by a repeated one"
    assert single["result"]["wakeups"] == wakeups[0], "repeat 0 is the config's own seed"
    assert single["repeats"] == [{"seed": 4242, "summary": single["repeats"][0]["summary"]}]
    assert single["summary_stats"]["wakeups"]["stddev"] is None

    again = submit(client, config, repeats=4)
    assert again["reused_from"] == run["id"] and again["status"] == "done"
    copied = client.get(f"/api/runs/{again['id']}").json()
    assert copied["repeats"] == run["repeats"]


@pytest.mark.parametrize("repeats", [0, 51, "many"])
def test_repeats_out_of_range_is_a_422_naming_the_field(client: httpx.Client, repeats: object) -> None:
    r = client.post("/api/runs", json={"config": small_config(), "repeats": repeats})
    assert r.status_code == 422
    assert [e["loc"] for e in r.json()["detail"]] == [["body", "repeats"]]


def test_a_sweep_caps_points_times_repeats(client: httpx.Client) -> None:
    before = client.get("/api/sweeps").json()["total"]
    body = {
        "base": small_config(),
        "axes": [{"path": "seed", "values": list(range(1, 101))}],
        "repeats": 11,
    }
    r = client.post("/api/sweeps", json=body)
    assert r.status_code == 422
    (error,) = r.json()["detail"]
    assert error["loc"] == ["body", "repeats"] and "1100 simulations" in error["msg"]
    assert client.get("/api/sweeps").json()["total"] == before, "nothing stored"


def test_a_sweep_repeats_each_point(client: httpx.Client) -> None:
    body = {
        "base": small_config(duration_ms=10),
        "axes": [{"path": "governor.name", "values": ["menu", "teo"]}],
        "repeats": 3,
    }
    made = client.post("/api/sweeps", json=body)
    assert made.status_code == 202, made.text
    sweep_id = made.json()["id"]
    for point in client.get(f"/api/sweeps/{sweep_id}").json()["points"]:
        run = wait_finished(client, point["run_id"])
        assert run["status"] == "done" and len(run["repeats"]) == 3
    # Error bars: each point's mean (the summary column) and its spread over the repeats.
    points = client.get(f"/api/sweeps/{sweep_id}").json()["points"]
    for point in points:
        run = client.get(f"/api/runs/{point['run_id']}").json()
        assert point["repeats"] == 3
        assert point["stddev"]["wakeups"] == pytest.approx(run["summary_stats"]["wakeups"]["stddev"])
    page = client.get(f"/sweeps/{sweep_id}").text
    assert '"error_y"' in page and "3 repeats" in page
    csv_head = client.get(f"/api/sweeps/{sweep_id}/points.csv").text.splitlines()[0].split(",")
    assert "repeats" in csv_head and "wakeups_stddev" in csv_head


def test_progress_counts_repeats() -> None:
    held = Held("claim", [1, 2, 3, 4])
    assert held.fraction() == 0.0 and held.pending == 4
    held.progress[0] = 0.5
    held.answers[1] = RepeatAnswer(None, {}, "v", 0.1, 0.0)
    held.progress[1] = 0.3  # a finished repeat counts whole, whatever it last reported
    assert held.fraction() == pytest.approx((1 + 0.5) / 4)
    assert held.pending == 3


def test_summary_stats_by_hand() -> None:
    repeats = [
        {"seed": 1, "summary": {"wakeups": 10.0, "latency.wake.p99_ns": 5.0}},
        {"seed": 2, "summary": {"wakeups": 14.0}},  # no latency samples in this repeat
        {"seed": 3, "summary": {"wakeups": 12.0, "latency.wake.p99_ns": 7.0}},
    ]
    stats = summary_stats(repeats)
    assert stats["wakeups"] == {"n": 3, "mean": 12.0, "stddev": 2.0}  # deviations -2, 2, 0: sqrt(8 / 2)
    assert stats["latency.wake.p99_ns"] == {"n": 2, "mean": 6.0, "stddev": pytest.approx(2**0.5)}
    assert summary_stats(repeats[:1])["wakeups"]["stddev"] is None
