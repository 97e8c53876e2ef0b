"""Comparison figures: how often an A/A comparison claims a change, and what disabling C1E costs
in energy, each through the compare's own code (`app.compare.sides`, `app.compare.stats`) on
repeats simulated here in one process (the server's workers would compute the same bytes).
Prints `name: value` lines.

- `aa_metrics_judged`, `aa_metrics_claimed`: one small config (one socket of 4 cores, 20 ms),
  seeds 11 and 12 (disjoint seed lists), 10 repeats each: metrics with a verdict, and those whose
  verdict claims a change (better, worse, higher, lower).
- `c1e_energy_change_pct`, `c1e_energy_ci95_low_pct`, `c1e_energy_ci95_high_pct`,
  `c1e_energy_verdict`: the default config (two skx sockets, 96 CPUs, 1000 ms, HZ 1000) against
  the same with C1E disabled, 5 repeats each on the same seed list (a paired test).

    .venv/bin/python bench/compare.py [--c1e-duration-ms 1000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path[0] = str(Path(__file__).resolve().parent.parent)  # the repository, not bench/, first

from app.compare import sides as like  # noqa: E402
from app.compare.stats import PairComparison, compare_sides  # noqa: E402
from engine import SimConfig, metrics, simulate  # noqa: E402
from engine.repeats import repeat_seeds, summary_figures  # noqa: E402

SMALL = {"duration_ms": 20, "topology": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1}}
CLAIMS = ("better", "worse", "higher", "lower")


def repeated(label: str, config: dict[str, Any], repeats: int) -> like.RunFacts:
    """A run of `repeats` seeds as the runner stores it (repeat 0's result, every repeat's summary)."""
    summaries, first = [], None
    for seed in repeat_seeds(config.get("seed", 1), repeats):
        result = simulate(SimConfig.model_validate({**config, "seed": seed})).model_dump(mode="json")
        first = first or result
        summaries.append({"seed": seed, "summary": summary_figures(result)})
    assert first is not None
    return like.run_facts(label, label, config, first, first["engine_version"], summaries)


def compare(a: like.RunFacts, b: like.RunFacts) -> PairComparison:
    compared = metrics.compared(s["name"] for s in a.result["states"])
    normalised = like.normalisation([a, b])
    sides = [like.side(f, compared, normalised) for f in (a, b)]
    return compare_sides([like.spec(m) for m in compared], sides)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--c1e-duration-ms", type=float, default=1000.0)
    args = parser.parse_args()

    aa = compare(repeated("A", {**SMALL, "seed": 11}, 10), repeated("B", {**SMALL, "seed": 12}, 10))
    judged = [m for m in aa.metrics if m.verdict is not None]
    print(f"aa_metrics_judged: {len(judged)}")
    print(f"aa_metrics_claimed: {sum(m.verdict in CLAIMS for m in judged)}")

    base = {"duration_ms": args.c1e_duration_ms}
    c1e = compare(repeated("A", base, 5), repeated("B", {**base, "states": {"disabled": ["C1E"]}}, 5))
    energy = c1e.metric("energy.joules")
    assert energy.change is not None and energy.ci95 is not None
    print(f"c1e_energy_change_pct: {energy.change:.2f}")
    print(f"c1e_energy_ci95_low_pct: {energy.ci95[0]:.2f}")
    print(f"c1e_energy_ci95_high_pct: {energy.ci95[1]:.2f}")
    print(f"c1e_energy_verdict: {energy.verdict}")


if __name__ == "__main__":
    main()
