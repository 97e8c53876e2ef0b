"""Built-in scenarios: configs validate, and every comparison has the expected sign and size.

The runs go through `engine.simulate` directly (no service). Each scenario's runs are simulated
once per module; the checks' acceptance intervals are the validation tolerances.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import pytest

from engine import SimConfig, metrics, simulate
from engine.metrics import Metric
from engine.scenarios import (
    SCENARIOS,
    VALIDATION_SCENARIOS,
    Check,
    evaluate,
    get_scenario,
    read_path,
    stated,
    stated_unit,
    validation_checks,
)

NAMES = [
    "irq-enable-c1-icx",
    "irq-enable-c1-skx",
    "mwait-ipi-westmere",
    "rfc-review-read-before-cmpxchg",
    "rfc-review-irqs-off",
    "mainline-tif-polling",
    "pc6-disabled-skx",
    "smt-sibling",
    "menu-779b1a1cb13a-skx",
    "menu-db86f55bf81a-spr",
    "menu-80606f4eb8d7",
    "teo-4b20b07ce72f-psci",
]


@cache
def _results(name: str) -> dict[str, dict[str, Any]]:
    return {role: simulate(cfg).model_dump(mode="json") for role, cfg in get_scenario(name).configs()}


def _value(name: str, role: str, metric: Metric) -> float:
    v = stated(metric, _results(name)[role])
    assert v is not None, (name, role, metric.key)
    return v


def _change(name: str, base: str, role: str, metric: Metric) -> float:
    return (_value(name, role, metric) / _value(name, base, metric) - 1) * 100


# ------------------------------------------------------------------------------------ definitions


def test_the_scenarios_exist_with_these_names() -> None:
    assert sorted(SCENARIOS) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_configs_validate_and_roles_are_consistent(name: str) -> None:
    sc = SCENARIOS[name]
    configs = sc.configs()
    roles = [r for r, _ in configs]
    assert len(roles) >= 2 and len(set(roles)) == len(roles)
    for _, cfg in configs:
        assert isinstance(cfg, SimConfig)
        # The JSON form the API sends round-trips to the same config.
        assert SimConfig.model_validate_json(cfg.model_dump_json()).config_hash() == cfg.config_hash()
        assert cfg.duration_ms <= 300, "keep scenario runs short"
    assert len({cfg.config_hash() for _, cfg in configs}) == len(configs), "roles must differ"
    for check in sc.checks:
        assert set(check.roles()) <= set(roles), check.id
        assert check.mode == "value" or check.baseline is not None
    if sc.key_table is not None:
        for _, cells in sc.key_table.rows:
            assert len(cells) == len(sc.key_table.columns) == len(sc.key_table.metric_by_col)
            assert {c for c in cells if c is not None} <= set(roles)
    assert sc.name == name and sc.roles and 2 <= sc.description.count(". ") + 1 <= 4


def test_configs_are_fresh_objects() -> None:
    sc = SCENARIOS["mwait-ipi-westmere"]
    a = dict(sc.configs())["ipi-same"]
    a.wakeups.ipis.rate_hz = 1.0
    assert dict(sc.configs())["ipi-same"].wakeups.ipis.rate_hz == 2000


def test_validation_covers_the_published_figures() -> None:
    rows = validation_checks()
    ids = {c.id: c for _, c in rows}
    for needed in ("wsm-ipi-same", "wsm-ipi-other", "wsm-rfc-same", "wsm-rfc-other"):
        assert needed in ids
    assert {"icx-c1-intr-latency", "skx-c1-intr-latency", "icx-cyclictest-mean"} <= set(ids)
    kinds = {i: c.kind for i, c in ids.items()}
    assert kinds["wsm-ipi-same"] == kinds["wsm-ipi-other"] == kinds["wsm-rfc-same"] == "calibrated"
    assert kinds["wsm-rfc-other"] == "predicted"
    assert kinds["icx-cyclictest-mean"] == "calibrated"
    # The IntrLatency change is exactly h in the model: a consistency check, with its estimates listed.
    assert kinds["icx-c1-intr-latency"] == kinds["skx-c1-intr-latency"] == "consistency"
    assert kinds["skx-cyclictest-mean"] == "predicted"
    assert all(sc.name in VALIDATION_SCENARIOS for sc, _ in rows)


def test_every_scenario_figure_is_a_registry_metric() -> None:
    # Checks, tables and key tables read the one registry (engine.metrics), by its keys.
    for sc in SCENARIOS.values():
        used = [*sc.metrics, *(c.metric_ref for c in sc.checks)]
        used += list(sc.key_table.metric_by_col) if sc.key_table is not None else []
        for m in used:
            found = metrics.get(m.key)
            same = (found.label, found.unit, found.direction) == (m.label, m.unit, m.direction)
            assert same, (sc.name, m.key)


def test_shares_are_stated_in_percent_and_their_differences_in_points() -> None:
    data = {"busy_share": 0.25, "states": [{"name": "C1", "residency": 0.5}]}
    busy, c1 = metrics.get("busy_share"), metrics.get("residency.C1")
    assert (stated(busy, data), stated(c1, data), stated_unit(c1)) == (25.0, 50.0, "%")
    wake = metrics.get("latency.wake.mean_ns")
    assert stated_unit(wake) == "ns"
    assert stated(wake, {"latency": {"wake": {"count": 2, "mean_ns": 7}}}) == 7.0

    def check(metric: Metric, mode: str) -> Check:
        return Check(id="x", source="s", metric="m", metric_ref=metric, mode=mode, role="b",  # type: ignore[arg-type]
                     baseline="a", accept=(None, None), tolerance="", published_text="")

    before = {"states": [{"name": "C1", "residency": 0.25}]}
    after = {"states": [{"name": "C1", "residency": 0.5}]}
    diff = check(c1, "diff")
    assert diff.unit == "pp" and diff.simulate_value({"a": before, "b": after}) == 25.0
    assert check(c1, "change_pct").simulate_value({"a": before, "b": after}) == 100.0
    assert check(wake, "diff").unit == "ns"


def test_read_path_picks_list_items_by_name() -> None:
    data = {
        "states": [{"name": "POLL", "x": 1}, {"name": "C1", "x": 2}],
        "latency": {"ipi": {"mean_ns": 3.0}},
    }
    assert read_path(data, ("states", "C1", "x")) == 2
    assert read_path(data, ("states", 0, "x")) == 1
    assert read_path(data, ("states", "C6", "x")) is None
    assert read_path(data, ("latency", "ipi", "mean_ns")) == 3.0
    assert read_path(data, ("latency", "timer", "mean_ns")) is None


def test_check_interval_is_closed_and_none_fails() -> None:
    c = Check(
        id="x",
        source="s",
        metric="m",
        metric_ref=Metric("k", "K", "ns", lambda r: r["a"]),
        mode="value",
        role="r",
        accept=(1.0, 2.0),
        tolerance="",
        published_text="",
    )
    assert c.accepts(1.0) and c.accepts(2.0) and not c.accepts(2.0001) and not c.accepts(None)


# ------------------------------------------------------------------------- every check, simulated


@pytest.mark.parametrize(("name", "check_id"), [(n, c.id) for n in NAMES for c in SCENARIOS[n].checks])
def test_check_holds(name: str, check_id: str) -> None:
    outcomes = {o.check.id: o for o in evaluate(SCENARIOS[name], _results(name))}
    o = outcomes[check_id]
    assert o.ok, f"{check_id}: simulated {o.simulated!r} {o.check.unit} outside {o.check.accept}"


# ----------------------------------------- the source figures, stated here independently of the checks


@pytest.mark.parametrize(
    ("role", "metric", "published"),
    [
        ("ipi-same", ("ipi", "same_socket", "idle_target_mean_cycles"), 1600),
        ("ipi-other", ("ipi", "other_socket", "idle_target_mean_cycles"), 2000),
        ("rfc-same", ("ipi", "same_socket", "idle_target_mean_cycles"), 1200),
        ("rfc-other", ("ipi", "other_socket", "idle_target_mean_cycles"), 1800),
    ],
)
def test_westmere_sender_cycles_within_5_percent(role: str, metric: tuple[str, ...], published: int) -> None:
    r = _results("mwait-ipi-westmere")[role]
    assert abs(read_path(r, metric) / published - 1) <= 0.05
    assert r["mechanism"] == ("ipi" if role.startswith("ipi") else "mwait_rfc")
    # The RFC path wakes the idle target with no interrupt; the IPI path always sends one.
    idle_calls = r["ipi"]["same_socket"]["idle_target_calls"] + r["ipi"]["other_socket"]["idle_target_calls"]
    assert idle_calls > 0.5 * r["ipi"]["requested"]
    if role.startswith("rfc"):
        assert r["ipi"]["ipis_avoided"] >= 0.9 * idle_calls
    else:
        assert r["ipi"]["ipis_avoided"] == 0


@pytest.mark.parametrize("platform", ["icx", "skx"])
def test_irq_enable_c1(platform: str) -> None:
    name = f"irq-enable-c1-{platform}"
    res: Mapping[str, Any] = _results(name)
    for role, on in (("irq-off", False), ("irq-on", True)):
        c1 = read_path(res[role], ("states", "C1"))
        assert c1["irq_enable"] is on and not c1["disabled"]
        assert all(s["disabled"] for s in res[role]["states"] if s["name"] != "C1")
    intr = (
        read_path(res["irq-on"], ("states", "C1", "intr_latency_mean_ns"))
        / read_path(res["irq-off"], ("states", "C1", "intr_latency_mean_ns"))
        - 1
    ) * 100
    assert -10 <= intr <= -5
    timer_on, timer_off = (res[r]["latency"]["timer"]["mean_ns"] for r in ("irq-on", "irq-off"))
    cyc = (timer_on / timer_off - 1) * 100
    if platform == "icx":
        assert abs(cyc - -5.1) <= 1.0
    else:
        assert -9.9 <= cyc <= -1.0
    # C1 residency now includes the handler time.
    assert read_path(res["irq-on"], ("states", "C1", "residency")) > read_path(
        res["irq-off"], ("states", "C1", "residency")
    )


def test_read_before_cmpxchg_saves_transfers_and_cycles() -> None:
    from engine.scenarios.framework import M_BUSY_OTHER, M_BUSY_SAME, M_LT_SENDER

    name = "rfc-review-read-before-cmpxchg"
    res = _results(name)
    # The targets are mostly running, so most calls find RUNNING and send an IPI.
    assert res["cmpxchg"]["ipi"]["ipis_sent"] > 0.9 * res["cmpxchg"]["ipi"]["requested"]
    assert _change(name, "cmpxchg", "read-first", M_LT_SENDER) < -10
    assert _change(name, "cmpxchg", "read-first", M_BUSY_SAME) < -2
    assert _change(name, "cmpxchg", "read-first", M_BUSY_OTHER) < -2
    # Same calls in both runs: only the sender's access pattern differs.
    assert res["cmpxchg"]["ipi"]["requested"] == res["read-first"]["ipi"]["requested"]


def test_irqs_off_across_wake_removes_stuck_wakeups() -> None:
    res = _results("rfc-review-irqs-off")
    before, after = res["irqs-on"], res["irqs-off"]
    assert before["ipi"]["stuck_wakeups"] > 0 and before["ipi"]["stuck_mean_ns"] > 5_000
    assert after["ipi"]["stuck_wakeups"] == 0 and after["ipi"]["stuck_mean_ns"] is None
    assert after["latency"]["ipi"]["max_ns"] < before["latency"]["ipi"]["max_ns"]
    assert after["latency"]["ipi"]["p999_ns"] < before["latency"]["ipi"]["p999_ns"]
    # A handful of stuck wake-ups among thousands: the mean barely moves.
    assert abs(after["latency"]["ipi"]["mean_ns"] / before["latency"]["ipi"]["mean_ns"] - 1) < 0.05


def test_tif_polling_vs_rfc_vs_ipi() -> None:
    res = _results("mainline-tif-polling")
    assert res["ipi"]["ipi"]["ipis_avoided"] == 0
    for mech in ("mwait_rfc", "tif_polling"):
        assert res[mech]["ipi"]["ipis_avoided"] > 0.9 * res[mech]["ipi"]["requested"]
    for loc in ("same_socket", "other_socket"):
        cyc = {m: res[m]["ipi"][loc]["idle_target_mean_cycles"] for m in ("ipi", "mwait_rfc", "tif_polling")}
        assert cyc["tif_polling"] < cyc["mwait_rfc"] < cyc["ipi"], (loc, cyc)
    assert res["tif_polling"]["latency"]["ipi"]["mean_ns"] < res["ipi"]["latency"]["ipi"]["mean_ns"]


@pytest.mark.parametrize(
    "name", ["menu-779b1a1cb13a-skx", "menu-db86f55bf81a-spr", "menu-80606f4eb8d7", "teo-4b20b07ce72f-psci"]
)
def test_kernel_release_scenarios_change_only_the_kernel(name: str) -> None:
    # The two roles are one workload under two trees: their configs differ in governor.kernel only,
    # and every check is of kind direction.
    before, after = (cfg.model_dump() for _, cfg in SCENARIOS[name].configs())
    assert before["governor"]["kernel"] != after["governor"]["kernel"]
    before["governor"]["kernel"] = after["governor"]["kernel"]
    assert before == after
    assert {c.kind for c in SCENARIOS[name].checks} == {"direction"}
