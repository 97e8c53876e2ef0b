"""Fit a twin: the load whose simulated counters match a machine's measured ones.

    from engine.twin import MachineCounters, fit_twin
    fit = fit_twin(MachineCounters.from_dump(dump), platform="skx", seed=1, budget=3000)

The search is SciPy's differential evolution (`updating="deferred"`, no polish, seeded), each
generation's population evaluated through the caller's `map` in batches of at least ~0.15 s of
simulation (the app passes Dask's; a serial `map` is the default). Every simulation of a fit goes
through `map`, the timing one and the final runs included, so the caller only orchestrates (in a
web process, no compiled loop holds its GIL). Every evaluation simulates the
CPU sample with the fit's own seed (common random numbers), so the objective is deterministic and
the fit gives the same config and distance whatever the number of workers. Afterwards the fitted
load is run on the CPUs the fit never saw (cross-validation by even and odd core ids) and, with a
seed the fit never used, on the whole machine: that last run is what `fitted`, `distance` and
`misses` report.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.config import MAX_EXPECTED_EVENTS, SimConfig, TickConfig
from engine.load_config import LoadClass
from engine.platforms import Platform
from engine.simulate import idle_counters
from engine.twin.counters import (
    TIME,
    CounterError,
    Figures,
    MachineCounters,
    cpu_classes,
    figures,
    most_different_cpu,
)
from engine.twin.model import LoadMap, foreseen_stays_us, quiet_wakeups
from engine.twin.objective import (
    MISSING_ERROR,
    SHARE_MIN_ENTRIES,
    TOLERANCE,
    WEIGHTS,
    Miss,
    Term,
    distance_of,
    goal_misses,
    objective_terms,
    term_error,
    term_key,
)

MIN_BUDGET, MAX_BUDGET, DEFAULT_BUDGET = 100, 20_000, 3_000
DEFAULT_SAMPLE = 16
# Simulated time follows the measured entry rate, so every evaluation sees about as many idle
# entries whatever the machine: the figures' sampling noise (bursts make it several times the
# Poisson one) stays below the goal's tolerances, and the objective is as smooth as common random
# numbers make it.
EVAL_ENTRIES = 30_000  # the CPU sample's idle entries per evaluation (~2,000 per CPU)
CHECK_ENTRIES = 300_000  # the final check's and the cross-validation's
MAX_RUN_MS = 60_000.0  # SimConfig's longest run; longer is made of copies or repeats
MIN_RUN_MS = 1_000.0
MAX_SAMPLE_CPUS = 256  # a sample's copies side by side stop here
TASK_SECONDS = 0.15  # a map task runs at least this much simulation (batched evaluations)
MIN_TASKS_PER_GENERATION = 8
TASK_MULTIPLE = 4  # tasks per generation: balanced on one, two or four workers

RATE_SPAN = 5.0  # loads this far off the measured entry rate are refused without a simulation
OFF_RATE_DISTANCE = MISSING_ERROR**2 + 1.0

Map = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]
Progress = Callable[[dict[str, Any]], bool | None]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Distance(_Model):
    total: float
    per_figure: dict[str, float]


class CrossValidation(_Model):
    fit_cpus: list[int]
    test_cpus: list[int]
    distance_fit: float
    distance_test: float | None


class HistoryPoint(_Model):
    generation: int
    evaluations: int
    best_distance: float


class FitResult(_Model):
    """A finished fit, shaped like DESIGN 7's `GET /api/fits/{id}` fields (JSON-serialisable)."""

    platform: str
    seed: int
    budget: int
    evaluations: int
    cpus: list[int]  # the CPU sample the search simulated
    classes: dict[str, int]  # each measured CPU's class
    optimizer: dict[str, str]
    objective: dict[str, Any]
    measured: Figures
    fitted: Figures
    distance: Distance
    misses: list[Miss]
    cross_validation: CrossValidation
    history: list[HistoryPoint]
    parameters: dict[str, float]
    unseparated: list[str]  # parameters the counters leave undetermined
    config: dict[str, Any]  # the fitted SimConfig on the whole machine (an ordinary run config)
    check_seed: int
    goal_met: bool


# ------------------------------------------------------------------------------ the evaluation


class Problem(NamedTuple):
    """Everything an evaluation needs, small and picklable (sent to the workers)."""

    base: dict[str, Any]  # SimConfig fields without the load (topology of the simulated CPUs)
    classes: tuple[int, ...]  # the class of each simulated CPU
    n_classes: int
    state_names: tuple[str, ...]
    class_terms: tuple[tuple[Term, ...], ...]  # per class
    class_weights: tuple[float, ...]  # per class: its share of the machine's CPUs
    machine_terms: tuple[Term, ...] = ()  # the CPUs' figures all together
    class_rates_hz: tuple[float, ...] = ()  # per class, the whole machine's entries per idle second
    polls: bool = True  # the load map has polling work
    holds: bool = False  # the load map has latency holds
    poll_sleeps_us: tuple[tuple[float, float] | None, ...] | None = None  # per polling work

    def load_map(self) -> LoadMap:
        return LoadMap(
            self.n_classes, self.class_rates_hz or None, self.polls, self.holds, self.poll_sleeps_us
        )


def config_for(problem: Problem, x: Sequence[float]) -> SimConfig:
    """The SimConfig of parameter vector x on the problem's CPUs."""
    data = dict(problem.base)
    wakeups = dict(data["wakeups"])
    wakeups["load"] = problem.load_map().load(x, problem.classes)
    data["wakeups"] = wakeups
    return SimConfig.model_validate(data)


def simulated_counters(config: SimConfig) -> np.ndarray:
    """Per-CPU counters of a run, time in us as sysfs has it."""
    a = idle_counters(config).astype(np.float64)
    a[TIME] /= 1000.0
    return a


def class_distance(problem: Problem, counters: np.ndarray) -> float:
    """The objective: per class, the distance of its simulated figures, weighted by class size;
    averaged with the distance of the machine's figures (the classes' counters mixed in the
    machine's proportions), which is what the goal judges."""
    cls = np.asarray(problem.classes)
    total = weight = 0.0
    mixed = np.zeros((counters.shape[0], 1, counters.shape[2]))
    for k, terms in enumerate(problem.class_terms):
        mine = counters[:, cls == k, :]
        if mine.shape[1] == 0 or not terms:
            continue
        total += problem.class_weights[k] * distance_of(figures(mine, problem.state_names), terms)
        weight += problem.class_weights[k]
        mixed[:, 0, :] += problem.class_weights[k] * mine.mean(axis=1)
    if not weight:
        return MISSING_ERROR
    if not problem.machine_terms:
        return total / weight
    return 0.5 * total / weight + 0.5 * distance_of(
        figures(mixed, problem.state_names), problem.machine_terms
    )


def off_rate_distance(problem: Problem, x: Sequence[float]) -> float | None:
    """The distance of a load whose mean wake-up rate is more than RATE_SPAN times off a class's
    measured entries per idle second, without simulating it (nor validating it: it may be past the
    run's event limit): above any simulated distance, growing with how far off it is (so the search
    moves back, and a wild corner of the box costs no time). None for a load within the span."""
    worst = 0.0
    present = sorted(set(problem.classes))  # classes without CPUs have no load
    loads = problem.load_map().load(x, problem.classes)
    # After the classes' own loads: the second polling work's, on the same CPUs as one of them.
    expected = [LoadClass.model_validate(load).expected_rate_hz() for load in loads]
    for j in range(len(present), len(loads)):
        expected[next(i for i in range(len(present)) if loads[i]["cpus"] == loads[j]["cpus"])] += expected[j]
    for k, hz in zip(present, expected, strict=False):
        rate = next((t.measured for t in problem.class_terms[k] if t.figure == "entries_per_idle_s"), None)
        if rate is None:
            continue
        worst = max(worst, abs(math.log(max(hz, 1e-9) / max(rate, 1e-9))))
    return OFF_RATE_DISTANCE + worst if worst > math.log(RATE_SPAN) else None


def evaluate(problem: Problem, x: Sequence[float]) -> float:
    """The evaluation function: config from parameters, simulate, counters, objective (a load
    far off the measured rate is not simulated: `off_rate_distance`)."""
    refused = off_rate_distance(problem, x)
    if refused is not None:
        return refused
    return class_distance(problem, simulated_counters(config_for(problem, x)))


def timed_simulation(problem: Problem, x: Sequence[float]) -> float:
    """The wall seconds one simulation of x takes (a `map` task: it sizes the batches, and
    changes no result)."""
    t0 = time.perf_counter()
    simulated_counters(config_for(problem, x))
    return time.perf_counter() - t0


def evaluate_batch(problem: Problem, xs: Sequence[Sequence[float]]) -> list[float]:
    """`evaluate` on each parameter vector: one task of a worker (module-level and picklable, so a
    Dask worker runs it importing only `engine`)."""
    return [float(evaluate(problem, x)) for x in xs]


class _BatchedMap:
    """scipy's `workers`: the population cut into batches, each batch one `evaluate_batch` task
    of `map`. The task is `evaluate_batch` on the problem itself, not scipy's wrapper of the
    objective, so a worker unpickles engine objects only.

    A generation waits for its slowest worker, so its tasks are made even: the loads refused for
    their rate (`off_rate_distance`, no simulation) are answered here and never sent, and the
    simulations are cut into a multiple of TASK_MULTIPLE tasks of sizes differing by one at most
    (one, two or four workers each get the same share; a worker slowed by other load leaves more
    of the queue to the others). Which evaluation runs where changes no result."""

    def __init__(self, map_fn: Map, batch: int, problem: Problem) -> None:
        self.map_fn, self.batch, self.problem = map_fn, batch, problem
        self.task = functools.partial(evaluate_batch, problem)

    def __call__(self, func: Callable[[Any], float], xs: Iterable[Any]) -> list[float]:
        items: list[Any] = [np.asarray(x, dtype=np.float64) for x in xs]
        refused = [off_rate_distance(self.problem, x) for x in items]
        out = [OFF_RATE_DISTANCE if v is None else v for v in refused]
        todo = [i for i, v in enumerate(refused) if v is None]
        if todo:
            n_tasks = task_count(len(todo), self.batch)
            chunks = [c.tolist() for c in np.array_split(np.asarray(todo), n_tasks)]
            results = run_tasks(self.map_fn, self.task, [[items[i] for i in c] for c in chunks])
            for chunk, values in zip(chunks, results, strict=True):
                for i, v in zip(chunk, values, strict=True):
                    out[i] = float(v)
        return out


def task_count(n: int, batch: int) -> int:
    """Tasks for n evaluations of about `batch` each: a multiple of TASK_MULTIPLE where there are
    that many evaluations, else one each."""
    tasks = max(math.ceil(n / max(batch, 1)), 1)
    tasks = math.ceil(tasks / TASK_MULTIPLE) * TASK_MULTIPLE
    return min(tasks, n)


def run_tasks(map_fn: Map, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """`map_fn(fn, items)` as a list of values (Dask futures are waited for)."""
    return [r.result() if hasattr(r, "result") else r for r in map_fn(fn, items)]


# ------------------------------------------------------------------------------------ the fit


def check_budget(budget: int) -> int:
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise ValueError(f"budget: must be {MIN_BUDGET}..{MAX_BUDGET} evaluations, got {budget}")
    return budget


def fit_twin(
    measured: MachineCounters,
    *,
    platform: str = "skx",
    platform_table: Platform | None = None,
    governor: str = "menu",
    hz: int | None = None,
    seed: int = 1,
    budget: int = DEFAULT_BUDGET,
    cpus: int = DEFAULT_SAMPLE,
    max_classes: int = 3,
    polls: bool = True,
    map: Map | None = None,  # noqa: A002 - the caller's map, as builtins.map takes its arguments
    progress: Progress | None = None,
) -> FitResult:
    """Fit the load of `measured` (see the module docstring).

    `map(fn, items)` runs fn on each item and returns the results in order (builtins.map,
    `Executor.map`, or Dask's `client.map`, whose futures are waited for). `progress` gets a dict
    per generation (generation, evaluations, budget, best_distance, fraction); returning True
    stops the search there (the fit still finishes with what it has). `hz` is the machine's
    CONFIG_HZ (None: the engine's default, `TickConfig.hz`). `polls` False fits the load without
    polling work (`LoadMap`), as before it existed. Raises CounterError for
    counters that cannot be fitted and ValueError for options out of range.
    """
    from scipy import __version__ as scipy_version
    from scipy.optimize import differential_evolution

    check_budget(budget)
    hz = TickConfig().hz if hz is None else hz
    if not 2 <= cpus <= 512:
        raise ValueError(f"cpus: the sample must be 2..512 CPUs, got {cpus}")
    measured.check()
    counters = measured.array()
    names = tuple(measured.states)
    if len(names) < 2 or sum(not d for d in measured.disabled) < 2:
        raise CounterError("states: a twin needs at least two enabled states (nothing to choose from)")
    base_table = platform_table or SimConfig(platform=platform).resolve_platform()
    if [s.name for s in base_table.states] != list(names):
        raise CounterError(
            f"states: the counters have {', '.join(names)} but {base_table.name} has "
            f"{', '.join(s.name for s in base_table.states)}"
        )
    n_machine = len(measured.cpus)
    classes_all = cpu_classes(counters, seed, max_classes)
    n_classes = int(classes_all.max()) + 1
    odd = np.array(measured.core_keys()) % 2 == 1
    different = most_different_cpu(counters)
    fit_pos = [i for i in range(n_machine) if not odd[i] or i == different]
    test_pos = [i for i in range(n_machine) if i not in set(fit_pos)]
    sample = _sample(fit_pos, classes_all, different, cpus, seed)
    disabled = list(measured.disabled)
    disabled_names = [n for n, d in zip(names, disabled, strict=True) if d]
    weights = tuple(float(np.mean(classes_all == k)) for k in range(n_classes))

    def class_terms(pos: Sequence[int]) -> tuple[tuple[Term, ...], ...]:
        out = []
        for k in range(n_classes):
            mine = [i for i in pos if classes_all[i] == k]
            sub = counters[:, mine, :]
            out.append(tuple(objective_terms(figures(sub, names), disabled)) if mine else ())
        return tuple(out)

    whole_figures = figures(counters, names)
    rate = whole_figures.entries_per_idle_s
    # Latency holds only where the objective sees POLL (from 1% of entries, as every state): a
    # latency limit is what makes menu choose POLL and time out of it (LatencyHolds).
    holds = (
        base_table.states[0].is_poll
        and not disabled[0]
        and whole_figures.states[names[0]].entry_share >= SHARE_MIN_ENTRIES
    )
    # One polling work over the whole sleep range, and a second one in the range of a second state
    # whose stays the governor foresaw, where the counters show one (foreseen_stays_us).
    poll_sleeps = (None, *foreseen_stays_us(whole_figures, base_table, disabled)[1:])
    class_rates = tuple(
        figures(counters[:, classes_all == k], names).entries_per_idle_s for k in range(n_classes)
    )
    fastest = max(class_rates)
    # A run's CPU-seconds within SimConfig's event limit, for any load evaluate() simulates (the
    # limit counts every tick and up to RATE_SPAN times the fastest class's measured rate).
    max_cpu_s = 0.9 * MAX_EXPECTED_EVENTS / (3.0 * (hz + RATE_SPAN * fastest))

    def problem_for(
        pos: Sequence[int], run_seed: int, entries: int, whole: bool, judged: Sequence[int] | None = None
    ) -> tuple[Problem, int]:
        """The problem of simulating the CPUs at `pos` for about `entries` idle entries, and how
        many runs of it that takes: a sample is simulated as copies of its CPUs side by side (each
        copy its own streams), the whole machine as several runs with consecutive seeds. The
        measured figures are those of the CPUs at `judged` (default `pos`): a class's load is
        the same on each of its CPUs, so a sample is judged against every CPU of its classes the
        fit may see, not against its own few (the most different CPU would bias them)."""
        judged = list(pos) if judged is None else list(judged)
        cpu_s = entries / max(rate, 1e-9)  # CPU-seconds of idle the entries take
        fill = math.ceil(cpu_s / len(pos) / (MAX_RUN_MS / 1000.0))
        copies = 1 if whole else max(min(fill, MAX_SAMPLE_CPUS // len(pos)), 1)
        n_run = len(pos) * copies
        duration = min(1000.0 * cpu_s / n_run, MAX_RUN_MS, 1000.0 * max_cpu_s / n_run)
        repeats = max(math.ceil(cpu_s / (n_run * duration / 1000.0)), 1) if whole else 1
        order = (_engine_order(measured, pos) if whole else list(pos)) * copies
        base: dict[str, Any] = {
            "platform": platform,
            "platform_table": None if platform_table is None else platform_table.model_dump(mode="json"),
            "seed": run_seed,
            "duration_ms": max(duration, MIN_RUN_MS),
            "governor": {"name": governor},
            "states": {"disabled": disabled_names},
            "topology": _topology(measured, len(order), base_table, whole),
            "wakeups": quiet_wakeups(hz),
            "output": {"timeline_cpus": 0},
        }
        problem = Problem(
            base=base,
            classes=tuple(int(classes_all[i]) for i in order),
            n_classes=n_classes,
            state_names=names,
            class_terms=class_terms(judged),
            class_weights=weights,
            machine_terms=tuple(objective_terms(figures(counters[:, judged, :], names), disabled)),
            class_rates_hz=class_rates,
            polls=polls,
            holds=holds,
            poll_sleeps_us=poll_sleeps,
        )
        return problem, repeats

    problem, _ = problem_for(sample, seed, EVAL_ENTRIES, whole=False, judged=fit_pos)
    load_map = problem.load_map()
    n_params = len(load_map.params)
    population = int(min(max(round(math.sqrt(budget) * 1.1), 20), 15 * n_params))
    popsize = max(1, math.ceil(population / n_params))
    per_generation = popsize * n_params
    maxiter = max((budget - 1) // per_generation - 1, 0)  # the budget counts the timing evaluation too

    # One simulation, timed on a worker, sets the batch size (it changes no result): tasks of at
    # least TASK_SECONDS, and at least MIN_TASKS_PER_GENERATION of them, so that the workers share
    # each generation evenly (evaluations refused for their rate take no time at all).
    map_fn = map if map is not None else builtins_map
    middle = [(lo + hi) / 2 for lo, hi in load_map.bounds]
    (seconds,) = run_tasks(map_fn, functools.partial(timed_simulation, problem), [middle])
    per_eval = max(float(seconds), 1e-4)
    most = max(math.ceil(per_generation / MIN_TASKS_PER_GENERATION), 1)
    batch = int(min(max(math.ceil(TASK_SECONDS / per_eval), 1), most))
    history: list[HistoryPoint] = []

    def on_generation(intermediate_result: Any) -> bool:
        generation = len(history) + 1
        evaluations = per_generation * (generation + 1)
        history.append(
            HistoryPoint(
                generation=generation, evaluations=evaluations, best_distance=float(intermediate_result.fun)
            )
        )
        if progress is None:
            return False
        stop = progress(
            {
                "generation": generation,
                "evaluations": evaluations,
                "budget": budget,
                "best_distance": float(intermediate_result.fun),
                "fraction": min(evaluations / (per_generation * (maxiter + 1)), 1.0),
            }
        )
        return bool(stop)

    workers = _BatchedMap(map_fn, batch, problem)
    res = differential_evolution(
        functools.partial(evaluate, problem),
        load_map.bounds,
        maxiter=maxiter,
        popsize=popsize,
        tol=0.0,
        atol=0.0,
        polish=False,
        updating="deferred",
        workers=workers,
        rng=seed,
        init="latinhypercube",
        callback=on_generation if maxiter > 0 else None,
    )
    x_best = [float(v) for v in res.x]

    # The cross-validation and the whole machine's runs: one map, so they run side by side.
    check_seed = _unused_seed(seed)
    whole, runs = problem_for(list(range(n_machine)), check_seed, CHECK_ENTRIES, whole=True)
    whole_config = config_for(whole, x_best)
    configs = check_configs(whole_config, runs)
    if test_pos:
        test_problem, _ = problem_for(test_pos, check_seed, CHECK_ENTRIES, whole=False)
        configs.append(config_for(test_problem, x_best))
    sims = run_tasks(map_fn, simulated_counters, configs)
    distance_test = class_distance(test_problem, sims.pop()) if test_pos else None
    sim = np.concatenate(sims, axis=1)
    whole = whole._replace(classes=whole.classes * runs)  # judged as one machine of runs x its CPUs
    elapsed = runs * whole_config.duration_ms / 1000.0 if measured.elapsed_s is not None else None
    fitted = figures(sim, names, elapsed)
    measured_figures = figures(counters, names, measured.elapsed_s)
    machine_terms = objective_terms(measured_figures, disabled)
    misses = goal_misses(measured_figures, fitted, disabled)
    return FitResult(
        platform=base_table.name if platform_table is not None else platform,
        seed=seed,
        budget=budget,
        evaluations=int(res.nfev) + 1,
        cpus=[measured.cpus[i] for i in sample],
        classes={str(measured.cpus[i]): int(classes_all[i]) for i in range(n_machine)},
        optimizer={"name": "scipy.optimize.differential_evolution", "version": scipy_version},
        objective={
            "figures": sorted({t.figure for terms in whole.class_terms for t in terms}),
            "weights": WEIGHTS,
            "tolerances": TOLERANCE,
            "per": "CPU class, weighted by its share of the CPUs",
        },
        measured=measured_figures,
        fitted=fitted,
        distance=Distance(
            total=class_distance(whole, sim),
            per_figure={term_key(t): term_error(fitted, t) ** 2 for t in machine_terms},
        ),
        misses=misses,
        cross_validation=CrossValidation(
            fit_cpus=[measured.cpus[i] for i in fit_pos],
            test_cpus=[measured.cpus[i] for i in test_pos],
            distance_fit=float(res.fun),
            distance_test=distance_test,
        ),
        history=history,
        parameters=load_map.values(x_best),
        unseparated=_unseparated(load_map, res),
        config=whole_config.model_dump(mode="json"),
        check_seed=check_seed,
        goal_met=not misses,
    )


def check_configs(config: SimConfig, runs: int) -> list[SimConfig]:
    """The final check's `runs` runs of config: its seed, then the next ones (their counters go
    side by side, as one machine)."""
    return [config.model_copy(update={"seed": config.seed + r}) for r in range(runs)]


def builtins_map(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """The default `map`: serial, in this process."""
    return [fn(item) for item in items]


# ------------------------------------------------------------------------------------- helpers


def _sample(fit_pos: Sequence[int], classes: np.ndarray, different: int, size: int, seed: int) -> list[int]:
    """A seeded sample of `size` CPUs from fit_pos, stratified by class (each class its share,
    at least 2 where it has them), always with the most different CPU; sorted positions."""
    pool = list(fit_pos)
    if size >= len(pool):
        return sorted(pool)
    rng = np.random.default_rng(seed)
    chosen = {different} if different in pool else set()
    by_class = {k: [i for i in pool if classes[i] == k] for k in sorted(set(classes[pool].tolist()))}
    quota = {k: max(min(2, len(v)), round(size * len(v) / len(pool))) for k, v in by_class.items()}
    for k, members in by_class.items():
        rest = [i for i in members if i not in chosen]
        need = quota[k] - sum(1 for i in chosen if classes[i] == k)
        if need > 0:
            chosen.update(int(i) for i in rng.choice(rest, size=min(need, len(rest)), replace=False))
    return sorted(chosen)


def _topology(measured: MachineCounters, n: int, table: Platform, whole: bool) -> dict[str, int]:
    """The simulated CPUs: the whole machine as its packages and threads (the platform's threads
    per core when they divide the CPUs evenly), or a sample as one package of single-thread cores
    (a sample's CPUs are not each other's siblings)."""
    if not whole:
        return {"sockets": 1, "cores_per_socket": n, "threads_per_core": 1}
    sockets = len(set(measured.package)) if measured.package is not None else 1
    threads = table.topology.threads_per_core
    # A machine whose sockets or cores differ (cpus_per_socket): single-thread cores, as its
    # even sockets of whole cores would pair CPUs that are not siblings.
    if n % (sockets * threads) or table.topology.cpus_per_socket is not None:
        threads = 1
    if n % sockets:
        sockets = 1
    return {"sockets": sockets, "cores_per_socket": n // (sockets * threads), "threads_per_core": threads}


def _engine_order(measured: MachineCounters, pos: Sequence[int]) -> list[int]:
    """Measured CPU positions in the engine's CPU order (package by package, each package's CPUs
    by number): engine CPU j stands for measured CPU order[j]."""
    package = measured.package or [0] * len(measured.cpus)
    return sorted(pos, key=lambda i: (package[i], measured.cpus[i]))


def _unused_seed(seed: int) -> int:
    """A seed the fit never ran: derived from the fit's, so the check repeats too."""
    return int(np.random.SeedSequence([seed, 0x7417]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _unseparated(load_map: LoadMap, res: Any) -> list[str]:
    """Parameters the final population leaves spread over more than half their range among its
    members within 50% of the best distance: the counters do not pin them down."""
    pop = getattr(res, "population", None)
    energies = getattr(res, "population_energies", None)
    if pop is None or energies is None or len(pop) < 4:
        return []
    best = float(np.min(energies))
    near = pop[energies <= best * 1.5 + 1e-9]
    if len(near) < 4:
        near = pop[np.argsort(energies)[: max(4, len(pop) // 4)]]
    out = []
    for j, p in enumerate(load_map.params):
        if (near[:, j].max() - near[:, j].min()) > 0.5 * (p.high - p.low):
            out.append(p.name)
    return out
