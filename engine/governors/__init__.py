"""cpuidle governors, compiled: menu, teo, ladder, haltpoll (drivers/cpuidle/governors/), oracle
and fixed, each kernel governor as its releases have it (engine.governors.releases).

- common: the constants, KTIME_MAX, the per-CPU data layout (declared once) and shared helpers.
- menu, teo, ladder, haltpoll: one module each; menu and teo have one function per behaviour
  that changed.
- cpuidle: cpuidle_select() and cpuidle_reflect(), dispatching on the governor and on one small
  integer, the release's behaviour codes.
- releases: the version table (tags, commits, stable point releases) and what each name runs.
"""

from engine.governors.common import (
    G_LAST_RES,
    G_M_INTERVALS,
    G_M_PTR,
    G_NEEDS_UPDATE,
    G_TICK_WAKEUP,
    GOV_ORACLE,
    GOVERNOR_IDS,
    INF,
    UINT_MAX,
    init_governor_state,
)
from engine.governors.cpuidle import note_rejected, poll_time_ns, reflect, select_state

# What each governor follows by default (the run's own `governor.kernel` is in its result).
GOVERNOR_KERNEL = {
    "menu": "menu.c by kernel release (governor.kernel; default v6.19)",
    "teo": "teo.c by kernel release (governor.kernel; default v6.19)",
    "ladder": "ladder.c by kernel release (the same v6.6 to v7.0-rc2; never writes stop_tick)",
    "haltpoll": "haltpoll.c by kernel release (KVM guests: POLL and halt)",
    "oracle": "not a kernel governor: knows the next wake-up",
    "fixed": "not a kernel governor: one state only",
}

__all__ = [
    "GOVERNOR_IDS", "GOVERNOR_KERNEL", "GOV_ORACLE", "G_LAST_RES", "G_M_INTERVALS", "G_M_PTR",
    "G_NEEDS_UPDATE", "G_TICK_WAKEUP", "INF", "UINT_MAX", "init_governor_state", "note_rejected",
    "poll_time_ns", "reflect", "select_state",
]
