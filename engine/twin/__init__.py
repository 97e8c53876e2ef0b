"""A machine's twin: measured cpuidle counters in, the load that reproduces them out.

`MachineCounters` holds a machine's per-CPU counters (filled from a sysfs dump or by the app),
`figures` turns counters into what a twin is judged on, `unfit_reasons` says what makes them
unfit for a twin, and `fit_twin` searches the load (`engine.twin.model`) whose simulation matches
them; `evaluate_batch` is the task a worker runs. Imports SciPy (the optimizer) when a fit runs.
"""

from engine.twin.counters import CounterError, Figures, MachineCounters, StateFigures, figures
from engine.twin.fit import FitResult, check_budget, evaluate, evaluate_batch, fit_twin
from engine.twin.objective import goal_misses
from engine.twin.unfit import Unfit, unfit_reasons

__all__ = [
    "CounterError",
    "Figures",
    "FitResult",
    "MachineCounters",
    "StateFigures",
    "Unfit",
    "check_budget",
    "evaluate",
    "evaluate_batch",
    "figures",
    "fit_twin",
    "goal_misses",
    "unfit_reasons",
]
