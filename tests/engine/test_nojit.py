"""The kernel runs as plain Python with NUMBA_DISABLE_JIT=1 and gives the compiled run's bytes."""

from __future__ import annotations

import json

from engine import SimConfig, simulate

from .conftest import make_config, simulate_uncompiled

BUSY = {
    "timers": [{"period_us": 300.0}],
    "interrupts": {"rate_hz": 3000.0},
    "ipis": {"rate_hz": 3000.0},
    "sched_wakeups": {"rate_hz": 3000.0},
}


def _configs() -> list[SimConfig]:
    small = {"duration_ms": 5.0, "topology": {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1}}
    return [
        # The default load, as the brief's reference case.
        make_config(**small),
        # Busier: every source, the RFC's idle word (with the interrupt-stall path), menu.
        make_config(**small, wakeups=BUSY, ipi_wakeup={"mechanism": "mwait_rfc"}),
        # teo and tif_polling on icx with C1 entered with interrupts off, fixed-length work.
        make_config(
            **small,
            platform="icx",
            governor={"name": "teo"},
            states={"irq_enable": {"C1": False}},
            wakeups={**BUSY, "interrupts": {"rate_hz": 3000.0, "work_distribution": "fixed"}},
        ),
        # ladder and plain IPIs on wsm, POLL time-outs included.
        make_config(
            **small,
            platform="wsm",
            governor={"name": "ladder"},
            wakeups=BUSY,
            ipi_wakeup={"mechanism": "ipi"},
        ),
        make_config(**small, governor={"name": "fixed", "fixed_state": "POLL"}),
    ]


def test_pure_python_kernel_matches_compiled() -> None:
    configs = _configs()
    compiled = [simulate(c).model_dump_json() for c in configs]
    assert json.loads(compiled[1])["events"] > 100  # the busy runs exercise the loop
    pure = simulate_uncompiled(configs)
    for i, (a, b) in enumerate(zip(pure, compiled, strict=True)):
        assert a == b, f"config {i} differs without the JIT"
