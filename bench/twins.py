"""The twin's goal on the development machines (issue 21, section 4): fit each judged dump.

Each of the six judged development dumps in app/fits/dev_machines (all but icx2s3, whose counters
mix periods with states disabled: it is reported, not judged) is imported as the app imports it
(its table recognised, its topology as the dump has it), fitted with a fixed seed and budget, and
judged as the goal says: the fitted load re-run on the whole machine with a seed the fit never
used. Prints per machine `name: value` lines (`<machine>_distance`, `<machine>_misses`,
`<machine>_fit_s`, `<machine>_verdict`), then each miss, and a summary. The dumps hold no
CONFIG_HZ: the fit uses the engine's default (HZ 1000), which the bench says.

    python bench/twins.py [--budget 1500] [--seed 1] [--workers 2] [--only sklep0,emr9] [--no-polls]

`--no-polls` fits the load without polling work (the load map before it existed), for comparison.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path[0] = str(Path(__file__).resolve().parent.parent)  # the repository, not bench/, first

from app.platforms.machine import machine_platform, recognise_dump, run_topology  # noqa: E402
from app.platforms.sysfs import SysfsDump, parse_dump  # noqa: E402
from engine import SimConfig, simulate  # noqa: E402
from engine.twin import FitResult, MachineCounters, Unfit, fit_twin, unfit_reasons  # noqa: E402

MACHINES = Path(__file__).resolve().parent.parent / "app" / "fits" / "dev_machines"
JUDGED = ("sklep0", "emr9", "srf8", "bdwep0", "adl0", "milan0")
REPORTED = ("icx2s3",)
WARM_LOAD = {"wakeups": {"load": [{"timers": [{"kind": "timer_wheel"}], "bursts": {}, "follow_ups": {}}]}}

Map = Callable[[Any, Any], Any]


def warm() -> None:
    """Load (or compile) the event loop and the load's draws in this process."""
    simulate(SimConfig.model_validate({**WARM_LOAD, "duration_ms": 50.0}))


@contextmanager
def dask_map(workers: int) -> Iterator[Map | None]:
    """A `map` over a Dask LocalCluster of `workers` processes (one thread each), warmed; None
    (the fit's serial map, in this process) for 0 workers."""
    if workers == 0:
        yield None
        return
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.run(warm)

        def map_fn(fn: Any, items: Any) -> Any:
            return client.map(fn, list(items), pure=False)

        map_fn.client = client  # type: ignore[attr-defined]  # for the workers' CPU time
        yield map_fn


def load_machine(name: str) -> tuple[SysfsDump, MachineCounters, dict[str, Any]]:
    """A development dump, its counters, and the fit's platform options as the app would pass them."""
    dump = parse_dump(gzip.open(MACHINES / f"{name}-sysfs.txt.gz").read())
    rec, match = recognise_dump(dump, run_topology(dump.topology))
    platform = machine_platform(dump, rec, match, name)
    options = {
        "platform": name,
        "platform_table": platform,
        "governor": dump.governor or "menu",
        "hz": dump.hz,
    }
    return dump, MachineCounters.from_dump(dump), options


def fit_machine(
    name: str, budget: int, seed: int, map_fn: Map | None, polls: bool = True
) -> tuple[float, FitResult, list[Unfit]]:
    _, measured, options = load_machine(name)
    t0 = time.perf_counter()
    fit = fit_twin(measured, seed=seed, budget=budget, map=map_fn, polls=polls, **options)
    return time.perf_counter() - t0, fit, unfit_reasons(measured)


def report(name: str, fit_s: float, fit: FitResult, unfit: list[Unfit], judged: bool) -> None:
    verdict = ("goal met" if fit.goal_met else "goal missed") if judged else "reported, not judged"
    print(f"{name}_distance: {fit.distance.total:.3f}")
    print(f"{name}_misses: {len(fit.misses)}")
    print(f"{name}_fit_s: {fit_s:.1f}")
    print(f"{name}_verdict: {verdict}")
    print(f"{name}_classes: {len(set(fit.classes.values()))}")
    print(f"{name}_cross_validation_test_distance: {fit.cross_validation.distance_test or 0.0:.3f}")
    for m in fit.misses:
        where = m.state or "machine"
        fitted = "none" if m.fitted is None else f"{m.fitted:.4g}"
        tol = f"{m.tolerance:g}"
        print(f"  miss {name} {where} {m.figure}: measured {m.measured:.4g}, twin {fitted}, tolerance {tol}")
    for reason in unfit:
        print(f"  unfit {name}: {reason.message}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes (0: serial)")
    parser.add_argument("--only", default="", help="comma-separated machines (default: all seven)")
    parser.add_argument("--no-polls", action="store_true", help="fit without polling work")
    args = parser.parse_args()
    names = [n for n in (*JUDGED, *REPORTED) if not args.only or n in args.only.split(",")]
    print(f"budget: {args.budget}")
    print(f"seed: {args.seed}")
    print(f"polls: {not args.no_polls}")
    print("hz: 1000 (the dumps hold no CONFIG_HZ: the engine's default)")
    met = 0
    t_all = time.perf_counter()
    with dask_map(args.workers) as map_fn:
        warm()
        for name in names:
            fit_s, fit, unfit = fit_machine(name, args.budget, args.seed, map_fn, not args.no_polls)
            report(name, fit_s, fit, unfit, name in JUDGED)
            met += int(fit.goal_met and name in JUDGED)
    judged = [n for n in names if n in JUDGED]
    print(f"judged_goal_met: {met}/{len(judged)}")
    print(f"total_s: {time.perf_counter() - t_all:.1f}")
    print(f"loadavg_1m: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
