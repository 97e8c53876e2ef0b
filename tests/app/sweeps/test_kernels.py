"""A sweep over `governor.kernel` read step by step: figures per kernel, each step's change, the
largest step, and each kernel linked to its tree."""

from __future__ import annotations

from typing import Any

from app.runs.kernels import kernel_link
from app.sweeps.kernels import _group
from tests.app.factories import done_run, small_config

KERNELS = ["v6.6", "db86f55bf81a", "v6.19"]


def _kernel_config(kernel: str) -> dict[str, Any]:
    return small_config(governor={"name": "menu", "kernel": kernel})


def test_a_kernel_sweep_reads_step_by_step(app_client: Any) -> None:
    for k in KERNELS:  # finished runs the sweep's points are answered from
        done_run(app_client.app, _kernel_config(k))
    axes = [{"path": "governor.kernel", "values": KERNELS}]
    body = {"base": small_config(governor={"name": "menu"}), "axes": axes}
    made = app_client.post("/api/sweeps", json=body).json()
    view = app_client.get(f"/api/sweeps/{made['id']}/kernels").json()
    assert view["axis"] == "governor.kernel" and view["other_axes"] == []
    (group,) = view["groups"]
    assert [p["kernel"]["name"] for p in group["points"]] == KERNELS
    assert all(p["status"] == "done" for p in group["points"])
    links = [p["kernel"]["link"] for p in group["points"]]
    assert links[0].endswith("/torvalds/linux.git/tag/?h=v6.6")
    assert links[1].endswith("/torvalds/linux.git/commit/?id=db86f55bf81a")
    assert "db86f55bf81a" in group["points"][1]["kernel"]["description"]
    keys = [f["key"] for f in group["figures"]]
    wanted = {"residency.C6", "usage.C6", "above_ratio.C6", "below_ratio.C6", "latency.wake.p99_ns"}
    assert wanted <= set(keys)
    assert len(group["steps"]) == 2 and [s["to"] for s in group["steps"]] == KERNELS[1:]
    scores = [s["score"] for s in group["steps"]]
    assert group["largest_step"] == scores.index(max(scores))
    page = app_client.get(f"/sweeps/{made['id']}/kernels")
    assert page.status_code == 200 and "Largest change" in page.text and "db86f55bf81a" in page.text
    # Each step lists menu's and the core's commits between its kernels, linked.
    added = [c["commit"] for c in group["steps"][0]["commits"]["added"]]
    assert "779b1a1cb13a" in added and added[-1] == "db86f55bf81a" and "4b20b07ce72f" not in added
    assert "/commit/?id=779b1a1cb13a" in page.text
    assert "What changed between kernels" in app_client.get(f"/sweeps/{made['id']}").text


def test_a_sweep_without_a_kernel_axis_has_no_kernel_steps(app_client: Any) -> None:
    body = {"base": small_config(), "axes": [{"path": "governor.name", "values": ["menu", "teo"]}]}
    made = app_client.post("/api/sweeps", json=body).json()
    r = app_client.get(f"/api/sweeps/{made['id']}/kernels")
    assert r.status_code == 404 and "governor.kernel" in r.json()["detail"]
    assert "What changed between kernels" not in app_client.get(f"/sweeps/{made['id']}").text


def _result(c6_share: float, c6_above: int) -> dict[str, Any]:
    return {"states": [{"name": "C6", "residency": c6_share, "usage": 100, "above": c6_above, "below": 0}]}


def test_the_largest_step_is_the_one_furthest_past_its_thresholds() -> None:
    points = [{"run_id": str(i), "kernel": {"name": f"k{i}", "link": None}} for i in range(3)]
    # Step 0: C6 time +1 pp (2 thresholds of 0.5 pp); step 1: above ratio +0.2 (20 pp: 40 thresholds).
    results = {"0": _result(0.50, 10), "1": _result(0.51, 10), "2": _result(0.51, 30)}
    group = _group(points, results, "menu")
    assert [s["figure"] for s in group["steps"]] == ["residency.C6", "above_ratio.C6"]
    assert group["largest_step"] == 1 and round(group["steps"][1]["change"], 6) == 20.0
    # A point not done yet: its values are None and its steps are not scored on them.
    group = _group(points, {"0": _result(0.5, 10), "2": _result(0.6, 10)}, "menu")
    assert group["steps"][0]["score"] is None and group["largest_step"] is None


def test_kernels_link_to_their_trees() -> None:
    assert kernel_link("menu", "v6.12.60").endswith("/stable/linux.git/tag/?h=v6.12.60")
    assert kernel_link("menu", "7bcc8bbeca35") is None  # posted, never merged
