"""Shared fixtures and factories for the engine tests.

The engine's event loop is compiled by numba on first use (tens of seconds cold, cached on disk
afterwards); the session fixture below pays that once before any test runs, so no single test
carries the compile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import engine
from engine import SimConfig, load_platform, simulate
from engine.platforms import CState, Param

# No wake-up source at all: tests add back exactly the ones they reason about.
QUIET_WAKEUPS: dict[str, Any] = {
    "timers": [],
    "interrupts": {"rate_hz": 0.0},
    "ipis": {"rate_hz": 0.0},
    "sched_wakeups": {"rate_hz": 0.0},
}


# A load class's other sources, beside the one a test looks at (timers, bursts, follow-ups).
LOAD_BESIDE: dict[str, Any] = {
    "timers": [{"kind": "timer_wheel", "period_us": 20_000.0}, {"kind": "hrtimer", "period_us": 3_000.0}],
    "bursts": {
        "quiet_rate_hz": 50.0,
        "burst_rate_hz": 5_000.0,
        "burst_mean_us": 500.0,
        "quiet_mean_ms": 50.0,
    },
    "follow_ups": {"probability": 0.3},
}


def deep_update(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`base` with `overrides` merged in, nested dicts merged key by key (lists replaced)."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_update(out[key], value)
        else:
            out[key] = value
    return out


def make_config(**overrides: Any) -> SimConfig:
    """A small run (1 socket x 2 cores, 10 ms, skx) with `overrides` merged in as nested dicts."""
    base: dict[str, Any] = {
        "platform": "skx",
        "duration_ms": 10.0,
        "topology": {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1},
    }
    return SimConfig.model_validate(deep_update(base, overrides))


def quiet(**sources: Any) -> dict[str, Any]:
    """A `wakeups` section with every source off except the ones given."""
    return deep_update(QUIET_WAKEUPS, sources)


def exact_state(name: str, exit_us: float, residency_us: float, entry_ns: float = 0.0) -> CState:
    """A custom state whose exit latency is always exactly `exit_us` (median = worst case, sigma 0)."""
    return CState(
        name=name,
        desc=f"test state {name}",
        exit_latency_us=exit_us,
        target_residency_us=residency_us,
        exit_latency_median_us=Param(value=exit_us, kind="estimate", source="test: median = worst case"),
        entry_cost_ns=Param(value=entry_ns, kind="estimate", source="test"),
    )


class Table:
    """A platform's state table as the governors take it: int64 ns arrays and an enabled mask."""

    def __init__(self, platform: str = "skx") -> None:
        states = load_platform(platform).states
        self.names = [s.name for s in states]
        self.res_ns = np.array([int(round(s.target_residency_us * 1000)) for s in states], dtype=np.int64)
        self.exit_ns = np.array([int(round(s.exit_latency_us * 1000)) for s in states], dtype=np.int64)
        self.enabled = np.ones(len(states), dtype=np.bool_)

    def without(self, *names: str) -> np.ndarray:
        """The enabled mask with `names` disabled."""
        mask = self.enabled.copy()
        for name in names:
            mask[self.names.index(name)] = False
        return mask


@pytest.fixture(scope="session", autouse=True)
def _warm_engine() -> Iterator[None]:
    """Compile (or load from numba's cache) the event loop once for the whole session."""
    simulate(make_config(duration_ms=1.0))
    yield


@pytest.fixture
def skx() -> Table:
    return Table("skx")


# Reads a JSON list of configs, prints a JSON list of result JSON strings: one interpreter start
# for all the configs.
_UNCOMPILED = """
import json, sys
from engine import SimConfig, simulate
configs = [SimConfig.model_validate(c) for c in json.loads(sys.stdin.read())]
sys.stdout.write(json.dumps([simulate(c).model_dump_json() for c in configs]))
"""


def simulate_uncompiled(configs: Sequence[SimConfig]) -> list[str]:
    """The configs' results as JSON, run with NUMBA_DISABLE_JIT=1 in a fresh interpreter (with
    `-W error`: the pure-Python run must not lean on numpy overflow warnings either)."""
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", _UNCOMPILED],
        input=json.dumps([c.model_dump(mode="json") for c in configs]),
        capture_output=True,
        text=True,
        cwd=Path(engine.__file__).resolve().parent.parent,
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return list(json.loads(out.stdout))
