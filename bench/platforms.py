"""Every built-in platform's default run, and the largest machines: wall seconds per run.

For each built-in table, `{"platform": id, "duration_ms": 100}` (the part's own topology and
package limit, the default light load); then 1,024 CPUs (8 sockets x 64 cores x 2 threads of
skx) and Xeon Phi's 272 (68 cores x 4 threads) for 100 simulated ms. Each figure is the best of
three runs after one warm-up (the first also compiles, when the numba cache is cold). Prints
`name: value` lines: `<id>_cpus`, `<id>_wall_s`, and the wake-ups per wall second of each.

    python bench/platforms.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder comes first on sys.path and its name would shadow the
# `engine` package: put the repository root there instead.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

RUNS = 3


def best(config: dict[str, Any]) -> tuple[float, int, int]:
    from engine import SimConfig, simulate

    parsed = SimConfig.model_validate(config)
    result = simulate(parsed)  # warm-up
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        result = simulate(parsed)
        times.append(time.perf_counter() - t)
    return min(times), result.cpus, result.wakeups


def main() -> None:
    from engine import BUILTIN_PLATFORMS

    cases: dict[str, dict[str, Any]] = {
        pid: {"platform": pid, "duration_ms": 100} for pid in sorted(BUILTIN_PLATFORMS)
    }
    cases["skx_1024cpus"] = {
        "platform": "skx",
        "duration_ms": 100,
        "topology": {"sockets": 8, "cores_per_socket": 64, "threads_per_core": 2},
    }
    cases["knl_4threads"] = {"platform": "knl", "duration_ms": 100}
    for name, config in cases.items():
        wall, cpus, wakeups = best(config)
        print(f"{name}_cpus: {cpus}")
        print(f"{name}_wall_s: {wall:.4f}")
        print(f"{name}_wakeups_per_s: {wakeups / wall:.0f}")


if __name__ == "__main__":
    main()
