"""Platform tables against the kernel reference, provenance, custom tables (engine/platforms.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

import engine
from engine import BUILTIN_PLATFORMS, CState, Platform, custom_platform, load_platform
from engine.platforms import Kind, Param, poll_state

from .conftest import exact_state

REPO = Path(engine.__file__).resolve().parent.parent
# A copy of the project's reference transcription of intel_idle.c's tables (each with its source).
REFERENCE = REPO / "tests" / "data" / "reference" / "cstate-tables.json"
# idlelab name -> intel_idle table (wsm uses nehalem_cstates, as WESTMERE_EP does).
KERNEL_TABLE = {"skx": "skx_cstates", "icx": "icx_cstates", "wsm": "nehalem_cstates"}
# Measured cache-line latencies (shared/reference/cacheline-latency.md), same / other socket, ns.
LINE_NS = {"wsm": (37.2, 73.7), "skx": (46.6, 134.1), "icx": (51.3, 107.8)}


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REFERENCE.read_text())
    return data


def _row(state: CState | dict[str, Any]) -> dict[str, Any]:
    d = state.model_dump() if isinstance(state, CState) else state
    return {
        k: d[k] for k in ("name", "desc", "mwait_hint", "flags", "exit_latency_us", "target_residency_us")
    }


def test_builtin_platforms_present() -> None:
    assert {"skx", "icx", "wsm"} <= set(BUILTIN_PLATFORMS)
    for name, platform in BUILTIN_PLATFORMS.items():
        assert platform.name == name
        assert load_platform(name) is platform


def test_load_platform_unknown() -> None:
    with pytest.raises(KeyError, match="unknown platform 'nope'"):
        load_platform("nope")


@pytest.mark.parametrize("name", sorted(KERNEL_TABLE))
def test_table_matches_intel_idle(reference: dict[str, Any], name: str) -> None:
    platform = load_platform(name)
    expected = [_row(s) for s in reference["poll"]["states"]] + [
        _row(s) for s in reference[KERNEL_TABLE[name]]["states"]
    ]
    assert [_row(s) for s in platform.states] == expected


@pytest.mark.parametrize("name", sorted(KERNEL_TABLE))
def test_poll_is_state_zero(name: str) -> None:
    states = load_platform(name).states
    assert states[0].name == "POLL"
    assert states[0].is_poll and states[0].irq_enable
    assert states[0].exit_latency_us == 0 and states[0].target_residency_us == 0
    assert not any(s.is_poll for s in states[1:])


def test_irq_enable_only_on_skx_and_icx_c1() -> None:
    # Snapshot A: CPUIDLE_FLAG_IRQ_ENABLE on skx_cstates C1 and icx_cstates C1 only.
    for name in KERNEL_TABLE:
        flagged = [s.name for s in load_platform(name).states if "CPUIDLE_FLAG_IRQ_ENABLE" in s.flags]
        assert flagged == (["C1"] if name in ("skx", "icx") else [])
    # And never together with IBRS or INIT_XSTATE.
    for platform in BUILTIN_PLATFORMS.values():
        for s in platform.states:
            if "CPUIDLE_FLAG_IRQ_ENABLE" in s.flags:
                assert not {"CPUIDLE_FLAG_IBRS", "CPUIDLE_FLAG_INIT_XSTATE"} & set(s.flags)


def test_icx_c6_median_is_the_published_one() -> None:
    # d484b8bfc6fa: 128 us median, 170 us 99.99th percentile (the table's value).
    c6 = load_platform("icx").states[3]
    assert c6.name == "C6" and c6.exit_latency_us == 170
    med = c6.median_exit_us()
    assert med.value == 128 and med.kind == "published"


def test_default_median_is_a_labelled_estimate() -> None:
    c1 = load_platform("skx").states[1]
    med = c1.median_exit_us()
    assert med.kind == "estimate"
    assert 0 < med.value < c1.exit_latency_us
    assert med.source


@pytest.mark.parametrize("name", sorted(LINE_NS))
def test_line_latencies_are_the_measured_ones(name: str) -> None:
    costs = load_platform(name).costs
    same, other = LINE_NS[name]
    assert costs.line_same_socket_ns.value == same and costs.line_same_socket_ns.kind == "measured"
    assert costs.line_other_socket_ns.value == other and costs.line_other_socket_ns.kind == "measured"


def _params(model: BaseModel, path: str = "") -> Iterator[tuple[str, Param]]:
    for field in type(model).model_fields:
        value = getattr(model, field)
        where = f"{path}.{field}" if path else field
        if isinstance(value, Param):
            yield where, value
        elif isinstance(value, BaseModel):
            yield from _params(value, where)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _params(item, f"{where}.{i}")


@pytest.mark.parametrize("name", sorted(BUILTIN_PLATFORMS))
def test_every_param_has_kind_and_source(name: str) -> None:
    params = list(_params(load_platform(name)))
    # Costs (12), busy power, and each state's entry cost and power at least.
    assert len(params) >= 13 + 2 * len(load_platform(name).states)
    for where, p in params:
        assert p.kind in get_args(Kind), where
        assert p.source.strip(), f"{name}: {where} has no source"


# A kernel commit as a row cites it: 12 to 40 hex digits, standing alone.
COMMIT = re.compile(r"(?<![0-9a-zA-Z])[0-9a-f]{12,40}(?![0-9a-zA-Z])")
# A shortened id (7-11 hex digits with a letter, or 8-11 digits) that readers cannot look up safely.
SHORT_ID = re.compile(r"(?<![0-9a-zA-Z.])(?:(?=[0-9]*[a-f])[0-9a-f]{7,11}|[0-9]{8,11})(?![0-9a-zA-Z])")
# "not determined" must be followed by the reason (a colon, or "because").
UNDETERMINED = re.compile(r"not determined(:| because)\s*\S")
INTEL_IDLE = sorted(n for n, p in BUILTIN_PLATFORMS.items() if p.driver == "intel_idle")


def _table_sources(platform: Platform) -> Iterator[tuple[str, str]]:
    for s in platform.states:
        if not s.is_poll:
            yield s.name, s.source
    for t in platform.socket_tables:
        yield t.table, t.source
    if platform.package is not None:
        for state, rewrite in platform.package.limited_table.items():
            yield f"{state} (package limit)", rewrite.source


@pytest.mark.parametrize("name", INTEL_IDLE)
def test_every_row_cites_its_commit_or_says_why_not(name: str) -> None:
    for where, source in _table_sources(load_platform(name)):
        assert source.strip(), f"{name} {where}: no source"
        assert not SHORT_ID.search(source), f"{name} {where}: shortened commit id in {source!r}"
        # The copy the row was read from is a commit too: the row must name the one that set it.
        cited = set(COMMIT.findall(source)) - {"244b1f05fbb6"}
        assert cited or UNDETERMINED.search(source), f"{name} {where}: cites no commit and no reason"


def test_row_provenance_check_rejects_what_it_should() -> None:
    assert SHORT_ID.search("table added by f9e71657 ('intel_idle: Add SKX support')")
    assert SHORT_ID.search("PC6-off rewrite: 64233338 (skx_idle_state_table_update())")
    assert not SHORT_ID.search("C6 becomes 92/276 after 100000 us, f9e71657c2c0")
    assert not UNDETERMINED.search("introducing commit is not determined here")
    assert UNDETERMINED.search("setting commit not determined: no patch changes them")


@pytest.mark.parametrize("name", sorted(BUILTIN_PLATFORMS))
def test_builtin_tables_are_non_decreasing(name: str) -> None:
    states = load_platform(name).states[1:]
    for a, b in zip(states, states[1:], strict=False):
        assert a.exit_latency_us <= b.exit_latency_us
        assert a.target_residency_us <= b.target_residency_us


# ---------------------------------------------------------------------------------- custom tables


def _custom(*states: CState) -> Platform:
    return custom_platform("mine", list(states), based_on=load_platform("skx"))


def test_custom_platform_adds_poll() -> None:
    p = _custom(exact_state("C1", 2, 2), exact_state("C6", 100, 400))
    assert p.state_names() == ["POLL", "C1", "C6"]
    assert p.states[0] == poll_state()
    # Topology, costs and busy power come from the base platform.
    skx = load_platform("skx")
    assert p.costs == skx.costs and p.topology == skx.topology and p.busy_watts == skx.busy_watts


def test_custom_platform_keeps_given_poll() -> None:
    p = _custom(poll_state(), exact_state("C1", 2, 2))
    assert p.state_names() == ["POLL", "C1"]


def test_custom_equal_values_allowed() -> None:
    # snb: C6 104/345 and C7 109/345 repeat a residency; equal latencies are allowed too.
    p = _custom(
        exact_state("C1", 2, 2),
        exact_state("C1E", 2, 20),
        exact_state("C6", 104, 345),
        exact_state("C7", 109, 345),
    )
    assert p.state_names() == ["POLL", "C1", "C1E", "C6", "C7"]


def test_custom_negative_latency_refused() -> None:
    with pytest.raises(ValidationError) as info:
        CState(name="C1", exit_latency_us=-1, target_residency_us=2)
    assert info.value.errors()[0]["loc"] == ("exit_latency_us",)


def _table_error(*states: CState) -> str:
    with pytest.raises(ValidationError) as info:
        _custom(*states)
    return str(info.value)


def test_custom_decreasing_latency_refused() -> None:
    msg = _table_error(exact_state("C1", 10, 20), exact_state("C6", 5, 400))
    # POLL is state 0, so the user's second row is states.2.
    assert "states.2.exit_latency_us" in msg and "must not decrease" in msg


def test_custom_decreasing_residency_refused() -> None:
    msg = _table_error(exact_state("C1", 2, 20), exact_state("C6", 100, 10))
    assert "states.2.target_residency_us" in msg and "must not decrease" in msg


def test_custom_duplicate_names_refused() -> None:
    msg = _table_error(exact_state("C1", 2, 2), exact_state("C1", 3, 3))
    assert "states.2.name" in msg and "duplicate" in msg


def test_custom_median_over_worst_case_refused() -> None:
    bad = exact_state("C6", 100, 400).model_copy(
        update={"exit_latency_median_us": Param(value=150, kind="estimate", source="test")}
    )
    msg = _table_error(exact_state("C1", 2, 2), bad)
    assert "exit_latency_median_us" in msg


def test_custom_unknown_flag_refused() -> None:
    bad = exact_state("C6", 100, 400).model_copy(update={"flags": ["CPUIDLE_FLAG_MAGIC"]})
    assert "unknown flag" in _table_error(exact_state("C1", 2, 2), bad)


def test_custom_second_polling_state_refused() -> None:
    bad = exact_state("C1", 2, 2).model_copy(update={"flags": ["CPUIDLE_FLAG_POLLING"]})
    assert "only state 0 may be a polling state" in _table_error(bad)


def test_platform_without_poll_is_a_psci_shaped_table() -> None:
    # psci_idle registers no polling state (WFI is state 0); a state 0 named POLL must poll.
    skx = load_platform("skx")
    data = skx.model_dump()
    data["states"] = data["states"][1:]
    assert Platform.model_validate(data).states[0].name == "C1"
    data = skx.model_dump()
    data["states"][0]["flags"] = []
    with pytest.raises(ValidationError, match="state 0 is POLL"):
        Platform.model_validate(data)


def test_the_builtin_platforms_are_read_only() -> None:
    from engine.platforms import BUILTIN_PLATFORMS

    with pytest.raises(TypeError):
        BUILTIN_PLATFORMS["mine"] = BUILTIN_PLATFORMS["skx"]  # type: ignore[index]
    assert "mine" not in BUILTIN_PLATFORMS


# Rows whose setting commit Xen's ports of them quote as "[Linux commit <id>]" (xen-project/xen:
# a33c2a9a7831 dnv, 37fa335a95cc knl, 4c6cd64519f9 skl with its "- updated" follow-up).
XEN_QUOTED = {
    ("dnv", "C1"): "0080d65b7719",
    ("dnv", "C1E"): "0080d65b7719",
    ("dnv", "C6"): "0080d65b7719",
    ("knl", "C1"): "281baf7a7026",
    ("knl", "C6"): "281baf7a7026",
    ("skl", "C6"): "135919a3a805",
    ("skl", "C8"): "135919a3a805",
    ("skl", "C9"): "135919a3a805",
}


@pytest.mark.parametrize(("name", "state"), sorted(XEN_QUOTED))
def test_rows_cite_the_commit_their_port_quotes(name: str, state: str) -> None:
    source = next(s.source for s in load_platform(name).states if s.name == state)
    assert XEN_QUOTED[(name, state)] in source
    assert not UNDETERMINED.search(source), source
