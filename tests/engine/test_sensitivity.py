"""The consistency rows' sensitivity tables against the simulation: inside each range the row
holds, just outside it does not."""

from __future__ import annotations

from typing import Any

import pytest

from engine import SimConfig, simulate
from engine.scenarios import get_scenario
from engine.scenarios.framework import Check, Scenario

COST_OF = {"costs.exit_housekeeping_ns (h)": "exit_housekeeping_ns", "costs.irq_entry_ns (e)": "irq_entry_ns"}


def _intr_row(scenario: Scenario) -> Check:
    return next(c for c in scenario.checks if c.id.endswith("c1-intr-latency"))


def _change(scenario: Scenario, check: Check, costs: dict[str, float]) -> float | None:
    results: dict[str, Any] = {}
    for role, config in scenario.configs():
        data = config.model_dump(mode="json")
        data["costs"].update(costs)
        data["duration_ms"] = 100
        results[role] = simulate(SimConfig.model_validate(data))
    return check.simulate_value(results)


@pytest.mark.parametrize("platform", ["skx", "icx"])
def test_intr_latency_row_is_a_consistency_check_with_its_estimates_listed(platform: str) -> None:
    check = _intr_row(get_scenario(f"irq-enable-c1-{platform}"))
    assert check.kind == "consistency"
    assert [s.estimate for s in check.sensitivity] == [
        "costs.exit_housekeeping_ns (h)",
        "costs.irq_entry_ns (e)",
        "C1 median exit latency (x)",
        "interrupt delivery delay (d)",
    ]
    for s in check.sensitivity:
        lo = s.holds_from if s.holds_from is not None else float("-inf")
        hi = s.holds_to if s.holds_to is not None else float("inf")
        assert lo <= s.value <= hi, s


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["skx", "icx"])
@pytest.mark.parametrize("estimate", list(COST_OF))
def test_intr_latency_row_flips_at_the_edges_of_its_range(platform: str, estimate: str) -> None:
    scenario = get_scenario(f"irq-enable-c1-{platform}")
    check = _intr_row(scenario)
    s = next(s for s in check.sensitivity if s.estimate == estimate)
    for edge, inside in ((s.holds_from, 1.03), (s.holds_to, 0.97)):
        if edge is None or edge <= 0:
            continue
        assert check.accepts(_change(scenario, check, {COST_OF[estimate]: edge * inside}))
        assert not check.accepts(_change(scenario, check, {COST_OF[estimate]: edge * (2 - inside)}))
