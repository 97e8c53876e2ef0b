"""The scenario framework: roles (configs), checks with their kinds, and the registry's metrics
(`engine.metrics`) they read, stated as the source documents state them.

Pure data and arithmetic, no I/O. Results are read as JSON dicts (`SimResult.model_dump(mode=
"json")`, or the stored bytes parsed), so the same code serves the engine tests and the service.
Paths into a result name list items by their `name` field: `("states", "C1", "intr_latency_mean_ns")`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine import metrics
from engine.config import SimConfig
from engine.metrics import Metric
from engine.result import SimResult

ResultLike = Mapping[str, Any] | SimResult
Path = tuple[str | int, ...]


# --------------------------------------------------------------------------------- reading results


def as_dict(result: ResultLike) -> Mapping[str, Any]:
    """A result as a JSON-shaped mapping (SimResult models are dumped)."""
    if isinstance(result, SimResult):
        return result.model_dump(mode="json")
    return result


def read_path(result: Mapping[str, Any], path: Path) -> Any:
    """Follow `path` into a result; a string step into a list picks the item with that `name`.

    Returns None where the path ends early (a missing key, an absent state, a None on the way).
    """
    obj: Any = result
    for step in path:
        if obj is None:
            return None
        if isinstance(obj, Mapping):
            obj = obj.get(step)
        elif isinstance(obj, list):
            if isinstance(step, int):
                obj = obj[step] if -len(obj) <= step < len(obj) else None
            else:
                obj = next((x for x in obj if isinstance(x, Mapping) and x.get("name") == step), None)
        else:
            return None
    return obj


def stated_unit(metric: Metric) -> str:
    """The unit a scenario states a metric in: the registry's, shares in percent (as the source
    documents print them)."""
    return "%" if metric.unit == "share" else metric.unit


def stated(metric: Metric, result: ResultLike) -> float | None:
    """A metric of a result in its stated unit (`stated_unit`); None where the result has none."""
    value = metric.value(as_dict(result))
    return value * 100 if value is not None and metric.unit == "share" else value


# The registry's metrics the scenarios share, by short names.
M_IDLE_SAME = metrics.get("ipi.same_socket.idle_target_mean_cycles")
M_IDLE_OTHER = metrics.get("ipi.other_socket.idle_target_mean_cycles")
M_BUSY_SAME = metrics.get("ipi.same_socket.busy_target_mean_cycles")
M_BUSY_OTHER = metrics.get("ipi.other_socket.busy_target_mean_cycles")
M_LT_SENDER = metrics.get("ipi.line_transfers_sender")
M_LT_TARGET = metrics.get("ipi.line_transfers_target")
M_IPIS_SENT = metrics.get("ipi.calls.ipis_sent")
M_IPIS_AVOIDED = metrics.get("ipi.calls.ipis_avoided")
M_SHARE_SENT = metrics.get("ipi.calls.sent_share")
M_STUCK = metrics.get("ipi.stuck_wakeups")
M_STUCK_MEAN = metrics.get("ipi.stuck_mean_ns")
M_IPI_LAT_MEAN = metrics.get("latency.ipi.mean_ns")
M_IPI_LAT_P99 = metrics.get("latency.ipi.p99_ns")
M_IPI_LAT_P999 = metrics.get("latency.ipi.p999_ns")
M_IPI_LAT_MAX = metrics.get("latency.ipi.max_ns")
M_C1_INTR = metrics.get("intr_latency_mean.C1")
M_C1_WAKE = metrics.get("wake_latency_mean.C1")
M_TIMER_MEAN = metrics.get("latency.timer.mean_ns")
M_TIMER_P99 = metrics.get("latency.timer.p99_ns")
M_C1_RESIDENCY = metrics.get("residency.C1")
M_BUSY = metrics.get("busy_share")


# ------------------------------------------------------------------------------------------ checks

CheckMode = Literal["value", "change_pct", "diff"]
CheckKind = Literal["calibrated", "predicted", "consistency", "direction"]


@dataclass(frozen=True)
class Sensitivity:
    """Over which range of one labelled estimate a check still holds, the others as they are."""

    estimate: str
    value: float
    unit: str
    holds_from: float | None
    holds_to: float | None
    note: str = ""


@dataclass(frozen=True)
class Check:
    """A claim about the runs: a value of one role, or the change from `baseline` to `role`.

    `kind`: `calibrated` (a parameter was fitted to it), `predicted` (nothing was fitted to it
    and it does not follow from an estimate alone), or `consistency` (it holds for the labelled
    estimates the model uses: `sensitivity` says over which range of each), or `direction` (the
    sign of a documented change between two kernels: a benchmark's size is not the model's).

    `mode`: "value" (the metric of `role`), "change_pct" (`role` relative to `baseline`, in %),
    "diff" (`role` minus `baseline`, in the metric's unit, or percentage points for shares).
    `accept` is the closed interval the simulated figure must lie in (None: unbounded).
    """

    id: str
    source: str
    metric: str
    metric_ref: Metric
    mode: CheckMode
    role: str
    accept: tuple[float | None, float | None]
    tolerance: str
    published_text: str
    published_value: float | list[float] | None = None
    kind: CheckKind = "predicted"
    baseline: str | None = None
    published: bool = False
    note: str = ""
    sensitivity: tuple[Sensitivity, ...] = ()

    @property
    def unit(self) -> str:
        if self.mode == "change_pct":
            return "%"
        unit = stated_unit(self.metric_ref)
        return "pp" if self.mode == "diff" and unit == "%" else unit

    def roles(self) -> list[str]:
        return [r for r in (self.baseline, self.role) if r is not None]

    def simulate_value(self, results: Mapping[str, ResultLike]) -> float | None:
        """The simulated figure this check compares with the published one."""
        value = stated(self.metric_ref, results[self.role])
        if self.mode == "value" or value is None:
            return value
        assert self.baseline is not None
        base = stated(self.metric_ref, results[self.baseline])
        if base is None:
            return None
        if self.mode == "diff":
            return value - base
        return (value / base - 1.0) * 100.0 if base else None

    def accepts(self, value: float | None) -> bool:
        if value is None:
            return False
        lo, hi = self.accept
        return (lo is None or value >= lo) and (hi is None or value <= hi)


@dataclass(frozen=True)
class Outcome:
    check: Check
    simulated: float | None
    ok: bool
    baseline_value: float | None
    role_value: float | None


def evaluate(scenario: Scenario, results: Mapping[str, ResultLike]) -> list[Outcome]:
    """Every check of `scenario` on results by role (roles missing from `results` are skipped)."""
    out = []
    data = {role: as_dict(r) for role, r in results.items()}
    for check in scenario.checks:
        if any(r not in data for r in check.roles()):
            continue
        sim = check.simulate_value(data)
        out.append(
            Outcome(
                check=check,
                simulated=sim,
                ok=check.accepts(sim),
                baseline_value=stated(check.metric_ref, data[check.baseline]) if check.baseline else None,
                role_value=stated(check.metric_ref, data[check.role]),
            )
        )
    return out


def _within_pct(published: float, pct: float) -> tuple[float, float]:
    return (round(published * (1 - pct / 100), 6), round(published * (1 + pct / 100), 6))


# -------------------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Role:
    name: str
    label: str
    config: Mapping[str, Any]

    def sim_config(self) -> SimConfig:
        return SimConfig.model_validate(self.config)


@dataclass(frozen=True)
class KeyTable:
    """A table of one metric per cell: `cells[row][col]` is the role whose value goes there."""

    title: str
    metric_by_col: tuple[Metric, ...]
    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str | None, ...]], ...]
    note: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    description: str
    source: str
    roles: tuple[Role, ...]
    metrics: tuple[Metric, ...]
    checks: tuple[Check, ...]
    key_table: KeyTable | None = None
    charts: tuple[str, ...] = ("residency", "latency_cdf", "ipi_cycles")
    details: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def configs(self) -> list[tuple[str, SimConfig]]:
        """(role, validated SimConfig) for every role, in display order (fresh objects each call)."""
        return [(r.name, r.sim_config()) for r in self.roles]

    def role(self, name: str) -> Role:
        for r in self.roles:
            if r.name == name:
                return r
        raise KeyError(name)

    def role_names(self) -> list[str]:
        return [r.name for r in self.roles]

    def published_checks(self) -> list[Check]:
        return [c for c in self.checks if c.published]


def direction_check(**fields: Any) -> Check:
    """A check of kind `direction`: the sign of a documented change between two kernels, with no
    published figure."""
    return Check(published=False, published_value=None, kind="direction", **fields)


def kernel_roles(
    base: Mapping[str, Any], before: str, after: str, before_is: str | None = None
) -> tuple[Role, Role]:
    """The roles `before` and `after`: `base` under the governor at two trees (`governor.kernel`).
    `before_is` says what the earlier tree is (default: the tree before `after`)."""
    name = base["governor"]["name"]
    return (
        Role("before", f"{name} at {before} ({before_is or f'the tree before {after}'})",
             _merge(base, governor={"kernel": before})),
        Role("after", f"{name} at {after}", _merge(base, governor={"kernel": after})),
    )


def _merge(base: Mapping[str, Any], **over: Any) -> dict[str, Any]:
    """A deep copy of `base` with nested dict overrides merged in."""
    out: dict[str, Any] = {}
    for k, v in base.items():
        out[k] = _merge(v) if isinstance(v, Mapping) else (list(v) if isinstance(v, list) else v)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], **v)
        else:
            out[k] = v
    return out
