"""simulate(): config in, result out (the orchestration around the compiled kernel)."""

from __future__ import annotations

from collections.abc import Callable

from engine.config import SimConfig
from engine.result import SimResult

ENGINE_VERSION = "0.1.0"


def simulate(config: SimConfig, *, progress: Callable[[float], None] | None = None) -> SimResult:
    """Run one simulation. `progress` receives the simulated fraction done (0..1)."""
    raise NotImplementedError("the kernel is being written")
