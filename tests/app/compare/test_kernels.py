"""A compare of runs that differ only in `governor.kernel`: the runs in the merged history's
order, each step's change and commits, the largest step marked, each kernel linked."""

from __future__ import annotations

from typing import Any

from tests.app.factories import done_run, small_config


def _teo(kernel: str | None, **more: Any) -> dict[str, Any]:
    governor = {"name": "teo"} if kernel is None else {"name": "teo", "kernel": kernel}
    return small_config(governor=governor, **more)


def test_runs_differing_in_the_kernel_are_read_in_history_order(app_client: Any) -> None:
    # Given out of order: v6.14, v6.13, and a commit between them.
    ids = [done_run(app_client.app, _teo(k))[0] for k in ("v6.14", "v6.13", "92ce5c07b7a1")]
    r = app_client.get("/api/compare", params={"ids": ",".join(ids)})
    assert r.status_code == 200, r.text
    axis = r.json()["kernels"]
    assert axis["governor"] == "teo"
    assert [k["name"] for k in axis["kernels"]] == ["v6.13", "92ce5c07b7a1", "v6.14"]
    assert [k["run"] for k in axis["kernels"]] == [ids[1], ids[2], ids[0]]
    assert [k["label"] for k in axis["kernels"]] == ["B", "C", "A"]
    assert axis["kernels"][1]["link"].endswith("/torvalds/linux.git/commit/?id=92ce5c07b7a1")
    assert axis["kernels"][2]["link"].endswith("/torvalds/linux.git/tag/?h=v6.14")
    first, second = axis["steps"]
    assert (first["from"], first["to"], second["to"]) == ("v6.13", "92ce5c07b7a1", "v6.14")
    assert [c["commit"] for c in first["commits"]["added"]] == ["425b75364576", "92ce5c07b7a1"]
    assert [c["changes_behaviour"] for c in first["commits"]["added"]] == [False, True]
    added = second["commits"]["added"]
    assert len(added) == 8 and added[-1]["commit"] == "16c8d7586c19" and not second["commits"]["absent"]
    assert added[0]["link"].endswith("/commit/?id=ea185406d1ed")
    keys = {f["key"] for f in axis["figures"]}
    assert {"residency.C6", "above_ratio.C6", "latency.wake.p99_ns", "energy.joules"} <= keys
    scores = [s["score"] for s in axis["steps"]]
    assert axis["largest_step"] == scores.index(max(scores))
    # The compare's own statistics stay against the first id given.
    assert [run["id"] for run in r.json()["runs"]] == ids
    page = app_client.get("/compare", params={"ids": ",".join(ids)})
    assert page.status_code == 200
    assert "Kernel by kernel (teo)" in page.text and "Largest change" in page.text
    tree = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git"
    assert f'href="{tree}/commit/?id=16c8d7586c19"' in page.text


def test_values_are_the_repeats_means_where_the_repeats_keep_them(app_client: Any) -> None:
    from app.compare.kernels import _value
    from engine import metrics

    class View:
        repeats = [{"summary": {"energy.joules": 1.0}}, {"summary": {"energy.joules": 3.0}}]

    result = {"energy": {"joules": 9.0}, "states": [{"name": "C6", "usage": 4, "above": 1, "below": 0}]}
    assert _value(View(), result, metrics.get("energy.joules")) == 2.0  # type: ignore[arg-type]
    assert _value(View(), result, metrics.get("above_ratio.C6")) == 0.25  # type: ignore[arg-type]


def test_no_kernel_axis_unless_only_the_kernel_differs(app_client: Any) -> None:
    a = done_run(app_client.app, _teo("v6.13"))[0]
    same = done_run(app_client.app, _teo("v6.13", seed=2))[0]  # the kernel alike, the seed not
    longer = done_run(app_client.app, _teo("v6.14", duration_ms=40))[0]  # the kernel and the duration
    menu = done_run(app_client.app, small_config(governor={"name": "menu", "kernel": "v6.14"}))[0]
    default = done_run(app_client.app, _teo(None))[0]  # unset: v6.19
    for ids in ([a, same], [a, longer], [a, menu]):
        r = app_client.get("/api/compare", params={"ids": ",".join(ids)})
        assert r.status_code == 200 and r.json()["kernels"] is None, ids
    assert "Kernel by kernel" not in app_client.get("/compare", params={"ids": f"{a},{same}"}).text
    axis = app_client.get("/api/compare", params={"ids": f"{default},{a}"}).json()["kernels"]
    assert [k["name"] for k in axis["kernels"]] == ["v6.13", "v6.19"]


def test_the_pasted_reports_carry_the_kernel_axis(app_client: Any) -> None:
    ids = [done_run(app_client.app, _teo(k))[0] for k in ("v6.14", "v6.13")]
    axis = app_client.get("/api/compare", params={"ids": ",".join(ids)}).json()["kernels"]
    largest = axis["steps"][axis["largest_step"]]
    text = app_client.get("/api/compare", params={"ids": ",".join(ids), "format": "text"}).text
    assert "Kernel by kernel (teo), in the merged history's order:" in text
    assert "v6.13 -> v6.14: " + largest["figure"] in text and "<- the largest change" in text
    assert "16c8d7586c19 " in text and "/torvalds/linux.git/commit/?id=16c8d7586c19" in text
    md = app_client.get("/api/compare", params={"ids": ",".join(ids), "format": "markdown"}).text
    assert "#### Kernel by kernel (teo)" in md and "**(the largest change)**" in md
    tree = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git"
    assert f"]({tree}/commit/?id=16c8d7586c19)" in md
    # Runs that differ in more than the kernel have no axis in their reports.
    other = done_run(app_client.app, _teo("v6.13", seed=99))[0]
    plain = app_client.get("/api/compare", params={"ids": f"{ids[0]},{other}", "format": "text"}).text
    assert "Kernel by kernel" not in plain
