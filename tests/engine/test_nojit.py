"""The kernel runs as plain Python with NUMBA_DISABLE_JIT=1 and gives the compiled run's bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import engine
from engine import SimConfig, simulate

from .conftest import make_config

REPO = Path(engine.__file__).resolve().parent.parent

# Reads a JSON list of configs, prints a JSON list of result JSON strings: one interpreter start
# for all the configs.
SCRIPT = """
import json, sys
from engine import SimConfig, simulate
configs = [SimConfig.model_validate(c) for c in json.loads(sys.stdin.read())]
sys.stdout.write(json.dumps([simulate(c).model_dump_json() for c in configs]))
"""

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
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    out = subprocess.run(
        # -W error: the pure-Python run must not lean on numpy overflow warnings either.
        [sys.executable, "-W", "error", "-c", SCRIPT],
        input=json.dumps([c.model_dump(mode="json") for c in configs]),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    pure = json.loads(out.stdout)
    for i, (a, b) in enumerate(zip(pure, compiled, strict=True)):
        assert a == b, f"config {i} differs without the JIT"
