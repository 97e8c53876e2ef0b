"""Built-in scenarios: the source documents' experiments, as configs and the comparisons they make.

A `Scenario` is a list of roles, each a `SimConfig` (so the app can run them like any other run),
plus what the runs are compared on:

- `metrics`: the numbers a page tabulates for every role, entries of the metric registry
  (`engine.metrics`) stated as the source documents state them (`stated`: shares in percent);
- `key_table`: the one table the source document would print (the RFC's 2x2 of sender cycles);
- `checks`: claims with an acceptance interval. Checks with `published=True` are the source
  documents' headline figures: `/validation` lists them. Each has a kind (framework.Check):
  `calibrated` (a parameter was fitted to it: reproducing it proves only that the fit holds),
  `predicted` (nothing was fitted to it and it does not follow from an estimate alone), or
  `consistency` (it holds for the labelled estimates the model uses; its sensitivity table
  says over which range of each), or `direction` (the sign of a documented change between two
  kernels, `kernel_releases`).

One module per source: `irq_enable_2021`, `mwait_rfc_2012`, and `package_cstates` (the
hardware beneath the OS view), `kernel_releases` (menu from one commit to the next),
`teo_releases` (teo's); the framework is in `framework`.

    from engine.scenarios import SCENARIOS, evaluate
    from engine import simulate
    sc = SCENARIOS["mwait-ipi-westmere"]
    results = {role: simulate(cfg) for role, cfg in sc.configs()}
    for outcome in evaluate(sc, results):
        print(outcome.check.metric, outcome.simulated, outcome.ok)
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.scenarios import irq_enable_2021, kernel_releases, mwait_rfc_2012, package_cstates, teo_releases
from engine.scenarios.framework import (
    Check,
    KeyTable,
    Outcome,
    Role,
    Scenario,
    evaluate,
    read_path,
    stated,
    stated_unit,
)

# ------------------------------------------------------------------------------------------ registry


def _build() -> dict[str, Scenario]:
    items = [
        *irq_enable_2021.scenarios(), *mwait_rfc_2012.scenarios(), *package_cstates.scenarios(),
        *kernel_releases.scenarios(), *teo_releases.scenarios(),
    ]
    return {s.name: s for s in items}


SCENARIOS: dict[str, Scenario] = _build()

#: Scenarios whose runs `/validation` needs (those with published figures), in table order.
VALIDATION_SCENARIOS: tuple[str, ...] = ("mwait-ipi-westmere", "irq-enable-c1-icx", "irq-enable-c1-skx")


def get_scenario(name: str) -> Scenario:
    """The scenario by name; `KeyError` if there is none."""
    return SCENARIOS[name]


def scenario_names() -> list[str]:
    return list(SCENARIOS)


def validation_checks() -> list[tuple[Scenario, Check]]:
    """The published figures, in the order `/validation` lists them."""
    return [(SCENARIOS[n], c) for n in VALIDATION_SCENARIOS for c in SCENARIOS[n].published_checks()]


__all__: Sequence[str] = (
    "SCENARIOS",
    "VALIDATION_SCENARIOS",
    "Check",
    "KeyTable",
    "Outcome",
    "Role",
    "Scenario",
    "evaluate",
    "get_scenario",
    "read_path",
    "scenario_names",
    "stated",
    "stated_unit",
    "validation_checks",
)
