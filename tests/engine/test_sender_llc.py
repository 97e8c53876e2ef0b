"""A sender's line transfers by the target's C-state: a line whose last writer's core is in core
C3 or deeper (L1 and L2 flushed) comes from the LLC, at `costs.llc_hit_ns` instead of a
core-to-core transfer."""

from __future__ import annotations

from typing import Any

from engine import SimConfig, simulate
from engine.platforms import BUILTIN_PLATFORMS


def _ipis(**over: Any) -> dict[str, Any]:
    return simulate(
        SimConfig.model_validate({
            "platform": "skx", "duration_ms": 100, "seed": 3,
            "topology": {"sockets": 2, "cores_per_socket": 4},
            "wakeups": {"ipis": {"rate_hz": 200}},
            "ipi_wakeup": {"mechanism": "ipi"},
            **over,
        })  # fmt: skip
    ).model_dump()["ipi"]


def _line_part(ipi: dict[str, Any], loc: str) -> float:
    return ipi[loc]["idle_target_parts_cycles"]["line_transfers"]  # type: ignore[no-any-return]


def test_lines_of_a_target_in_c6_come_from_the_llc() -> None:
    deep = _ipis()
    shallow = _ipis(states={"disabled": ["C6"]})
    assert deep["line_transfers_from_llc"] > 0
    assert shallow["line_transfers_from_llc"] == 0  # C1 and C1E keep the core's caches
    total = deep["line_transfers_same_socket"] + deep["line_transfers_other_socket"]
    assert deep["line_transfers_from_llc"] <= total


def test_an_llc_hit_costs_the_sender_less_than_a_core_to_core_transfer() -> None:
    same = BUILTIN_PLATFORMS["skx"].costs.line_same_socket_ns.value
    free = _ipis(costs={"llc_hit_ns": 0.0})
    full = _ipis(costs={"llc_hit_ns": same})  # no saving: every transfer core-to-core
    for loc in ("same_socket", "other_socket"):
        assert _line_part(free, loc) < _line_part(full, loc)
    # Without C6 the figure changes nothing.
    a = _ipis(states={"disabled": ["C6"]}, costs={"llc_hit_ns": 0.0})
    b = _ipis(states={"disabled": ["C6"]}, costs={"llc_hit_ns": same})
    assert a == b


def test_the_llc_hit_is_an_estimate_from_the_tables_own_line() -> None:
    costs = BUILTIN_PLATFORMS["skx"].costs
    hit = costs.param("llc_hit_ns")
    assert hit.kind == "estimate" and hit.value == round(costs.line_same_socket_ns.value * 0.5, 1)
    assert "no published figure" in hit.source
