"""idlelab's simulation engine: a config in, a result out. No I/O, no web, no database.

    from engine import SimConfig, simulate
    result = simulate(SimConfig(platform="icx", duration_ms=100))
"""

from engine.config import SimConfig
from engine.platforms import BUILTIN_PLATFORMS, CState, Platform, custom_platform, load_platform
from engine.result import SimResult
from engine.simulate import ENGINE_VERSION, engine_version, simulate

__all__ = [
    "BUILTIN_PLATFORMS",
    "CState",
    "ENGINE_VERSION",
    "Platform",
    "SimConfig",
    "SimResult",
    "custom_platform",
    "engine_version",
    "load_platform",
    "simulate",
]
