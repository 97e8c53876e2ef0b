"""A machine's twin: measured cpuidle counters in, the load that reproduces them out.

`MachineCounters` holds a machine's per-CPU counters (filled from a sysfs dump or by the app),
`figures` turns counters into what a twin is judged on, and `fit_twin` searches the load
(`engine.twin.model`) whose simulation matches them. Imports SciPy (the optimizer) when a fit runs.
"""

from engine.twin.counters import CounterError, Figures, MachineCounters, StateFigures, figures
from engine.twin.fit import FitResult, check_budget, evaluate, fit_twin, goal_misses

__all__ = [
    "CounterError",
    "Figures",
    "FitResult",
    "MachineCounters",
    "StateFigures",
    "check_budget",
    "evaluate",
    "figures",
    "fit_twin",
    "goal_misses",
]
