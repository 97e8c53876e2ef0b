"""What a C-state table and a run's overrides of its costs and power may hold: the overrides'
ranges (`CostsConfig`, `PowerConfig`, sections of `SimConfig`) and the rules a table itself must
meet (`table_errors`), which check its figures against those same ranges, so the two change
together.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from engine.platforms import Platform
from engine.text_schema import no_nul_strings


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)


# A TSC slower than 1 MHz, or an idle entry costing more than 10 ms, is a typo, not a platform.
MIN_TSC_MHZ = 1.0
MAX_ENTRY_COST_NS = 10_000_000.0


class CostsConfig(_Model):
    """Overrides of the platform's cost model (see `Platform.costs`); unset fields keep the platform's."""

    tsc_mhz: Annotated[float | None, Field(ge=MIN_TSC_MHZ, le=10_000)] = None
    line_same_socket_ns: Annotated[float | None, Field(ge=0, le=10_000)] = None
    line_other_socket_ns: Annotated[float | None, Field(ge=0, le=10_000)] = None
    call_setup_cycles: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    apic_send_same_socket_cycles: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    apic_send_other_socket_cycles: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    ipi_delivery_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    irq_entry_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    exit_housekeeping_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    entry_housekeeping_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    irq_direct_saving_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    sched_switch_ns: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    spec_ctrl_write_ns: Annotated[float | None, Field(ge=0, le=100_000)] = None
    llc_hit_ns: Annotated[float | None, Field(ge=0, le=10_000)] = Field(
        default=None, exclude_if=lambda v: v is None  # added later: configs without it keep their hash
    )


class PowerConfig(_Model):
    """Overrides of the power estimates: per core by core C-state, and per package (uncore) by
    package C-state."""

    state_watts: dict[str, Annotated[float, Field(ge=0, le=1000)]] = Field(
        default_factory=dict, description="Watts of a core in the core C-state of the named table state."
    )
    busy_watts: Annotated[float | None, Field(ge=0, le=1000)] = Field(
        default=None, description="Watts of a core in C0."
    )
    uncore_watts: dict[str, Annotated[float, Field(ge=0, le=1000)]] = Field(
        default_factory=dict, description="Watts of a package's uncore per package state (PC0, PC2, PC6...)."
    )


MAX_STATES = 32
# struct cpuidle_state's name[CPUIDLE_NAME_LEN] and desc[CPUIDLE_DESC_LEN] (include/linux/cpuidle.h,
# 16 and 32 since cpuidle began): a custom state's name and desc are bounded as the kernel's are.
CPUIDLE_NAME_LEN = 16
CPUIDLE_DESC_LEN = 32
# intel_idle_init_cstates_icpu() gives a CPUIDLE_FLAG_IBRS state intel_idle_ibrs() and an
# INIT_XSTATE one intel_idle_xstate(), both entered with interrupts off, and WARNs if such a
# state also has CPUIDLE_FLAG_IRQ_ENABLE (drivers/idle/intel_idle.c).
IRQ_OFF_FLAGS = frozenset({"CPUIDLE_FLAG_IBRS", "CPUIDLE_FLAG_INIT_XSTATE"})


def irq_enable_refusal(name: str, flags: list[str]) -> str | None:
    """Why state `name` with `flags` cannot be entered with interrupts enabled (None: it can)."""
    bad = IRQ_OFF_FLAGS & set(flags)
    if not bad:
        return None
    return (
        f"cannot enter {name} with interrupts enabled: it has {', '.join(sorted(bad))}, which intel_idle "
        "never combines with IRQ_ENABLE (the IBRS and xstate enter paths run with interrupts off)"
    )


def _bounds(model: type[BaseModel], name: str) -> tuple[float, float]:
    """The (low, high) a config override of `name` accepts: a table's own value may not go further."""
    meta = model.model_fields[name].metadata
    low = next((m.ge if m.ge is not None else m.gt for m in meta if hasattr(m, "ge")), 0.0)
    high = next(m.le for m in meta if getattr(m, "le", None) is not None)
    return float(low or 0.0), float(high)


# What a table's power figures may be: what a config's override of them takes.
POWER_RANGE = _bounds(PowerConfig, "busy_watts")


def _param_errors(value: float, low: float, high: float, loc: list[str | int]) -> list[dict[str, object]]:
    if math.isfinite(value) and low <= value <= high:
        return []
    return [{"loc": loc, "msg": f"must be {low:g}..{high:g}, got {value!r}", "type": "value_error"}]


def table_errors(table: Platform, loc: list[str | int]) -> list[dict[str, object]]:
    """Why a C-state table cannot be simulated: too many states, a name or desc longer than the
    kernel holds, a state both IRQ_ENABLE and IBRS (or INIT_XSTATE), or a parameter that is not
    a finite number within what the config's own overrides accept (a negative power, an entry
    cost of 1e300 or a 1e-300 MHz clock would fail the run or make nonsense)."""
    if len(table.states) > MAX_STATES:
        msg = f"at most {MAX_STATES} states, got {len(table.states)}"
        return [{"loc": [*loc, "states"], "msg": msg, "type": "too_long"}]
    errors = []
    for name in CostsConfig.model_fields:
        low, high = _bounds(CostsConfig, name)
        errors += _param_errors(table.costs.param(name).value, low, high, [*loc, "costs", name, "value"])
    watts = POWER_RANGE
    errors += _param_errors(table.busy_watts.value, *watts, [*loc, "busy_watts", "value"])
    for i, s in enumerate(table.states):
        at = [*loc, "states", i]
        for field, text, size in (("name", s.name, CPUIDLE_NAME_LEN), ("desc", s.desc, CPUIDLE_DESC_LEN)):
            if len(text) > size:
                msg = f"at most {size} characters (CPUIDLE_{field.upper()}_LEN), got {len(text):,}"
                errors.append({"loc": [*at, field], "msg": msg, "type": "too_long"})
        refusal = irq_enable_refusal(s.name, s.flags)
        if refusal and "CPUIDLE_FLAG_IRQ_ENABLE" in s.flags:
            errors.append({"loc": [*at, "flags"], "msg": refusal, "type": "value_error"})
        errors += _param_errors(s.power_watts.value, *watts, [*at, "power_watts", "value"])
        errors += _param_errors(s.entry_cost_ns.value, 0, MAX_ENTRY_COST_NS, [*at, "entry_cost_ns", "value"])
        if s.exit_latency_median_us is not None:
            median = s.exit_latency_median_us.value
            errors += _param_errors(median, 0, s.exit_latency_us, [*at, "exit_latency_median_us", "value"])
    return errors
