"""Comparisons of repeated runs through a real server: an A/A compare rarely claims a change, a
known change (disabling C1E) is found, the compare contract's fields, like with like and the
warnings, and the reports in the robot's layout and in Markdown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engine.repeats import repeat_seeds
from tests.app.factories import small_config, submit, wait_finished

SIGNIFICANT = ("better", "worse", "higher", "lower")
# One socket of skx's 24 cores (48 CPUs) for 100 ms: large enough that disabling C1E shows in the
# energy beyond its spread, small enough for a test (about 0.3 s per repeat).
C1E_BASE = {"duration_ms": 100, "topology": {"sockets": 1}}


@pytest.fixture(scope="module")
def client(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=120.0) as c:
        yield c


def done(client: httpx.Client, config: dict[str, Any], repeats: int, **body: Any) -> dict[str, Any]:
    run = wait_finished(client, submit(client, config, repeats=repeats, **body)["id"])
    assert run["status"] == "done", run["error"]
    return run


def compare(client: httpx.Client, *runs: dict[str, Any], **params: str) -> httpx.Response:
    r = client.get("/api/compare", params={"ids": ",".join(run["id"] for run in runs), **params})
    assert r.status_code == 200, r.text
    return r


def by_key(comparison: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["key"]: m for m in comparison["metrics"]}


def test_an_a_a_compare_claims_a_change_on_at_most_5_percent_of_metrics(client: httpx.Client) -> None:
    config = small_config(duration_ms=20)
    assert not set(repeat_seeds(11, 10)) & set(repeat_seeds(12, 10)), "disjoint seed lists"
    a = done(client, {**config, "seed": 11}, 10)
    b = done(client, {**config, "seed": 12}, 10)
    cmp = compare(client, a, b).json()
    judged = [m for m in cmp["metrics"] if m["verdict"] and m["verdict"][1] is not None]
    claimed = [m["key"] for m in judged if m["verdict"][1] in SIGNIFICANT]
    assert len(judged) >= 20
    assert len(claimed) <= 0.05 * len(judged), claimed
    assert all(m["test"][1]["name"] == "welch_t" for m in judged if m["test"][1]["name"] != "exact")
    assert cmp["warnings"] == [], "the same config: nothing to warn about"


def test_disabling_c1e_is_worse_on_energy_with_5_repeats(client: httpx.Client) -> None:
    base = done(client, C1E_BASE, 5, title="C1E on")
    no_c1e = done(client, {**C1E_BASE, "states": {"disabled": ["C1E"]}}, 5, title="C1E off")
    metrics = by_key(compare(client, base, no_c1e).json())
    energy = metrics["energy.joules"]
    assert energy["verdict"] == [None, "worse"]
    assert energy["test"][1]["name"] == "paired_t_log_ratio", "the same seed list: paired"
    # Measured: +2.5% (each seed between +2.4% and +2.7%); the C1E time moves to C1, which draws more.
    assert 1.5 < energy["change"][1] < 4.0
    low, high = energy["ci95"][1]
    assert 0 < low < energy["change"][1] < high
    # The disabled state's share goes to 0: a share changes in pp, and without a better direction
    # its verdict is `lower`.
    c1e = metrics["residency.C1E"]
    assert c1e["change_unit"] == "pp" and c1e["verdict"][1] == "lower"
    assert c1e["change"][1] == pytest.approx(-100 * c1e["mean"][0])


def test_the_contract_fields_and_no_verdict_below_3_repeats(client: httpx.Client) -> None:
    a = done(client, small_config(seed=31, duration_ms=10), 2)
    b = done(client, small_config(seed=32, duration_ms=10), 3)
    metrics = by_key(compare(client, a, b).json())
    wake = metrics["latency.wake.p99_ns"]
    for field in ("n", "mean", "stddev", "stddev_pct", "change", "ci95", "test", "verdict"):
        assert len(wake[field]) == 2, field
    assert wake["n"] == [2, 3] and wake["change_unit"] == "%"
    assert wake["change"][0] is None and wake["change"][1] is not None
    assert wake["verdict"] == [None, None] and wake["ci95"][1] is None
    assert "fewer than 3 repeats" in wake["ci95_reason"][1]
    assert wake["values"] == wake["mean"]
    assert wake["mean"][0] == pytest.approx(a["summary_stats"]["latency.wake.p99_ns"]["mean"])
    assert metrics["busy_share"]["change_unit"] == "pp"


def test_different_durations_and_cpus_are_compared_per_second_and_per_cpu(client: httpx.Client) -> None:
    short = done(client, small_config(seed=41, duration_ms=10), 1)
    eight = {"sockets": 1, "cores_per_socket": 8, "threads_per_core": 1}
    wide = done(client, {**small_config(seed=41, duration_ms=20), "topology": eight}, 1)
    cmp = compare(client, short, wide).json()
    kinds = [w["kind"] for w in cmp["warnings"]]
    assert kinds[:2] == ["duration", "cpus"] and "topology" not in kinds
    assert "10 ms" in cmp["warnings"][0]["message"] and "8 CPUs" in cmp["warnings"][1]["message"]
    assert cmp["normalised"] == "per_cpu_second"
    metrics = by_key(cmp)
    wakeups = metrics["wakeups"]
    assert wakeups["normalised"] == "per_cpu_second" and wakeups["unit"] == "count/s per CPU"
    assert wakeups["values"][0] == pytest.approx(short["result"]["wakeups"] / 0.010 / 4)
    assert wakeups["values"][1] == pytest.approx(wide["result"]["wakeups"] / 0.020 / 8)
    energy = metrics["energy.joules"]
    assert energy["unit"] == "W per CPU", "energy per second is average watts"
    assert metrics["latency.wake.p99_ns"]["normalised"] is None, "a latency is no total"


def test_kernel_and_hz_differences_are_warned_about(client: httpx.Client) -> None:
    a = done(client, small_config(seed=51, duration_ms=10), 1)
    older = {"wakeups": {"tick": {"hz": 250}}, "governor": {"name": "menu", "kernel": "v6.6"}}
    b = done(client, small_config(seed=51, duration_ms=10, **older), 1)
    kinds = {w["kind"] for w in compare(client, a, b).json()["warnings"]}
    assert {"hz", "kernel"} <= kinds and "duration" not in kinds


def test_text_and_markdown_reports(client: httpx.Client) -> None:
    a = done(client, {**C1E_BASE, "seed": 61}, 3, title="base")
    b = done(client, {**C1E_BASE, "seed": 61, "states": {"disabled": ["C1E"]}}, 3, title="no C1E")
    text = compare(client, a, b, format="text")
    assert text.headers["content-type"].startswith("text/plain")
    lines = text.text.splitlines()
    assert lines[0] == "=" * 89
    assert "         %stddev     %change         %stddev" in lines
    assert "             \\          |                \\  " in lines
    assert f'  {a["id"]} ("base")' in lines and f'  {b["id"]} ("no C1E")' in lines
    rows = lines[lines.index("             \\          |                \\  ") + 1 :]
    significant = rows[: rows.index("")]
    assert any(r.endswith("  energy.joules") for r in significant)
    assert any(r.endswith("  residency.C1E%") for r in significant), "shares named as percentages"
    assert any(line.startswith("Compare: http") and a["id"] in line for line in lines)
    everything = compare(client, a, b, format="text", all="true").text
    assert len(everything.splitlines()) > len(lines)
    markdown = compare(client, a, b, format="markdown")
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert "| `energy.joules` |" in markdown.text and "worse" in markdown.text
    bad = client.get("/api/compare", params={"ids": f"{a['id']},{b['id']}", "format": "pdf"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "format"]


def test_run_again_with_repeats(client: httpx.Client) -> None:
    a = done(client, small_config(seed=71, duration_ms=10), 1)
    b = done(client, small_config(seed=72, duration_ms=10), 1)
    r = client.post("/api/compare/again", json={"ids": [a["id"], b["id"]], "repeats": 3})
    assert r.status_code == 202, r.text
    again = r.json()
    assert len(again["ids"]) == 2 and again["url"].endswith("/compare?ids=" + ",".join(again["ids"]))
    runs = [wait_finished(client, run_id) for run_id in again["ids"]]
    assert [run["repeat_count"] for run in runs] == [3, 3]
    assert [run["config"]["seed"] for run in runs] == [71, 72]
    refused = client.post("/api/compare/again", json={"ids": [a["id"], b["id"]], "repeats": 0})
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["body", "repeats"]
