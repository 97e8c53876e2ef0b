"""A machine's cpuidle counters, measured or simulated, and the figures a twin is fitted to.

The counters are sysfs's, per CPU and per state, as `cpuidle_enter_state()` keeps them
(drivers/cpuidle/cpuidle.c): `usage` entries; `time` in us from entry to return; `above` when
the stay was shorter than the state's target residency and a shallower state is enabled; `below`
when the stay minus the state's exit latency reached the target residency of the first enabled
deeper state. So POLL's `above` and the deepest enabled state's `below` are always 0.

Figures per state: the entry share, the idle-time share, the above and below ratios, the mean
stay (`time / usage`); per machine the entries per CPU per idle second (`sum usage / sum time`,
always known) and per elapsed second (known only with an elapsed time: two snapshots, or one with
the uptime). CPU classes come from clustering the per-CPU figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

USAGE, TIME, ABOVE, BELOW = range(4)
CLASS_SPLIT_GAIN = 0.5  # one class more must halve the within-class spread (see cpu_classes)
COUNTER_NAMES = ("usage", "time", "above", "below")


class CounterError(ValueError):
    """Counters that cannot be fitted: none at all, or not what one boot of one machine counts.

    `loc` is the field path of what is wrong (a counter's is `("values", counter, "cpu<N>",
    state)`), `reason` the sentence that says why; `str()` is the message, led by the field."""

    def __init__(self, message: str, *, loc: Sequence[str | int] | None = None) -> None:
        super().__init__(message)
        field, _, rest = message.partition(": ")
        self.loc: tuple[str | int, ...] = tuple(loc) if loc is not None else (field,)
        self.reason = rest or message


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MachineCounters(_Model):
    """Per-CPU, per-state counters of one machine over one window (since boot, or an interval).

    `values[k][i][s]` is counter k (usage, time in us, above, below) of the i-th CPU (`cpus[i]`)
    in state s. `package` and `core` are each CPU's package (socket) and core ids where known.
    """

    states: list[str]
    exit_latency_us: list[float]
    target_residency_us: list[float]
    disabled: list[bool]
    cpus: list[int]
    values: list[list[list[int]]]
    package: list[int] | None = None
    core: list[int] | None = None
    elapsed_s: float | None = Field(default=None, description="The window's length, when known.")
    since_boot: bool | None = Field(
        default=None, description="True: one snapshot, counted since boot; False: two snapshots' difference."
    )

    def _loc(self, counter: str, i: int, s: int) -> tuple[str, ...]:
        return ("values", counter, f"cpu{self.cpus[i]}", self.states[s])

    def array(self) -> np.ndarray:
        """The counters as float64, shape (4, cpus, states)."""
        return np.asarray(self.values, dtype=np.float64)

    def check(self) -> MachineCounters:
        """Raise CounterError naming why these counters cannot come from one boot; else self."""
        n_states = len(self.states)
        if not self.cpus:
            raise CounterError("counters: no CPU has cpuidle counters")
        if n_states == 0:
            raise CounterError("counters: no cpuidle states")
        for name, column in (
            ("exit_latency_us", self.exit_latency_us),
            ("target_residency_us", self.target_residency_us),
            ("disabled", self.disabled),
        ):
            if len(column) != n_states:
                raise CounterError(f"{name}: {len(column)} values for {n_states} states")
        a = np.asarray(self.values, dtype=np.int64)
        if a.shape != (4, len(self.cpus), n_states):
            raise CounterError(
                f"values: shape {a.shape}, expected (4 counters, {len(self.cpus)} CPUs, {n_states} states)"
            )
        for k, name in enumerate(COUNTER_NAMES):
            bad = np.argwhere(a[k] < 0)
            if len(bad):
                i, s = bad[0]
                raise CounterError(
                    f"{name}: CPU {self.cpus[i]} {self.states[s]} is negative ({a[k, i, s]})",
                    loc=self._loc(name, i, s),
                )
        bad = np.argwhere(a[ABOVE] + a[BELOW] > a[USAGE])
        if len(bad):
            i, s = bad[0]
            raise CounterError(
                f"above + below: CPU {self.cpus[i]} {self.states[s]} has above {a[ABOVE, i, s]} + below "
                f"{a[BELOW, i, s]} > usage {a[USAGE, i, s]}: not the counters of one boot",
                loc=self._loc("above", i, s),
            )
        bad = np.argwhere((a[USAGE] == 0) & (a[TIME] > 0))
        if len(bad):
            i, s = bad[0]
            raise CounterError(
                f"time: CPU {self.cpus[i]} {self.states[s]} has time {a[TIME, i, s]} us and usage 0",
                loc=self._loc("time", i, s),
            )
        if a[USAGE].sum() == 0:
            raise CounterError("usage: every count is 0: these CPUs never idled in a cpuidle state")
        if self.elapsed_s is not None and not self.elapsed_s > 0:
            raise CounterError(f"elapsed_s: must be positive, got {self.elapsed_s:g}")
        for name, ids in (("package", self.package), ("core", self.core)):
            if ids is not None and len(ids) != len(self.cpus):
                raise CounterError(f"{name}: {len(ids)} ids for {len(self.cpus)} CPUs")
        return self

    @classmethod
    def interval(cls, before: MachineCounters, after: MachineCounters) -> MachineCounters:
        """The counters between two snapshots of one boot (after - before), with the elapsed time
        when both snapshots have it (their uptimes: `elapsed_s` since boot)."""
        if before.states != after.states:
            raise CounterError(f"states: the snapshots differ ({before.states} then {after.states})")
        if before.cpus != after.cpus:
            gone = sorted(set(before.cpus) ^ set(after.cpus))
            which = f"CPU {gone[0]} is in one snapshot only" if gone else "the CPUs are listed differently"
            raise CounterError(f"cpus: {which}: CPUs changed between the snapshots")
        a, b = np.asarray(before.values, dtype=np.int64), np.asarray(after.values, dtype=np.int64)
        diff = b - a
        for k, name in enumerate(COUNTER_NAMES):
            bad = np.argwhere(diff[k] < 0)
            if len(bad):
                i, s = bad[0]
                raise CounterError(
                    f"{name}: CPU {before.cpus[i]} {before.states[s]} went back from {a[k, i, s]} to "
                    f"{b[k, i, s]}: the snapshots are not of one boot",
                    loc=before._loc(name, i, s),
                )
        elapsed = None
        if before.elapsed_s is not None and after.elapsed_s is not None:
            elapsed = after.elapsed_s - before.elapsed_s
            if not elapsed > 0:
                raise CounterError(
                    f"elapsed_s: the second snapshot's uptime ({after.elapsed_s:g} s) is not after "
                    f"the first's ({before.elapsed_s:g} s)"
                )
        update = {"values": diff.tolist(), "elapsed_s": elapsed, "since_boot": False}
        return after.model_copy(update=update).check()

    @classmethod
    def from_dump(cls, dump: DumpLike) -> MachineCounters:
        """From a parsed sysfs dump (`app.platforms.sysfs.SysfsDump` or anything of its shape).

        CPUs without counters (offline) are left out; `elapsed_s` is the window of a dump of two
        snapshots, else the dump's uptime (since-boot counters) when it has one."""
        names = [s.name for s in dump.states]
        cpus, rows, package, core = [], [], [], []
        for rec in dump.cpus:
            if not rec.counters or all(c is None for c in rec.counters):
                continue
            row = []
            for s, c in enumerate(rec.counters):
                if c is None:
                    raise CounterError(f"counters: CPU {rec.cpu} has no counters for {names[s]}")
                vals = (c.usage, c.time_us, c.above, c.below)
                if any(v is None for v in vals):
                    missing = COUNTER_NAMES[[v is None for v in vals].index(True)]
                    raise CounterError(f"{missing}: CPU {rec.cpu} {names[s]} is missing")
                row.append([int(v) for v in vals if v is not None])
            cpus.append(rec.cpu)
            rows.append(row)
            package.append(rec.package_id if rec.package_id is not None else rec.die_id)
            core.append(rec.core_id)
        values = np.transpose(np.array(rows, dtype=np.int64).reshape(len(cpus), len(names), 4), (2, 0, 1))
        return cls(
            states=names,
            exit_latency_us=[float(s.latency_us or 0) for s in dump.states],
            target_residency_us=[float(s.residency_us or 0) for s in dump.states],
            disabled=[bool(s.disabled) for s in dump.states],
            cpus=cpus,
            values=values.tolist() if cpus else [[], [], [], []],
            package=None if any(p is None for p in package) else [int(p) for p in package if p is not None],
            core=None if any(c is None for c in core) else [int(c) for c in core if c is not None],
            elapsed_s=dump.window_s if dump.window_s is not None else dump.uptime_s,
            since_boot=dump.window_s is None,
        ).check()

    def subset(self, idx: Sequence[int]) -> MachineCounters:
        """The CPUs at positions `idx` (not CPU numbers)."""
        a = np.asarray(self.values, dtype=np.int64)[:, list(idx), :]
        pick = list(idx)
        return self.model_copy(
            update={
                "cpus": [self.cpus[i] for i in pick],
                "values": a.tolist(),
                "package": None if self.package is None else [self.package[i] for i in pick],
                "core": None if self.core is None else [self.core[i] for i in pick],
            }
        )

    def core_keys(self) -> list[int]:
        """Each CPU's core id, or where the dump has none, its place among its package's CPUs by
        number (SMT siblings numbered thread by thread are a core count apart: with an even core
        count they share the parity the cross-validation splits on)."""
        if self.core is not None:
            return list(self.core)
        package = self.package or [0] * len(self.cpus)
        keys = [0] * len(self.cpus)
        for p in sorted(set(package)):
            mine = sorted((c, i) for i, (c, q) in enumerate(zip(self.cpus, package, strict=True)) if q == p)
            for place, (_, i) in enumerate(mine):
                keys[i] = place
        return keys


# -------------------------------------------------------------------------------------- figures


class StateFigures(_Model):
    entry_share: float
    time_share: float
    above_ratio: float | None  # None: the state was never entered
    below_ratio: float | None
    mean_stay_us: float | None


class Figures(_Model):
    """What a twin must match, as DESIGN 7's fit contract names it."""

    states: dict[str, StateFigures]
    entries_per_idle_s: float
    entries_per_s: float | None = None  # per CPU per elapsed second, when the window is known


def figures(counters: np.ndarray, names: Sequence[str], elapsed_s: float | None = None) -> Figures:
    """The figures of counters (4, cpus, states; time in us) summed over their CPUs."""
    total = counters.sum(axis=1)
    usage, time_us, above, below = total
    n_cpus = counters.shape[1]
    all_usage, all_time = float(usage.sum()), float(time_us.sum())
    states = {}
    for s, name in enumerate(names):
        u = float(usage[s])
        states[name] = StateFigures(
            entry_share=u / all_usage if all_usage else 0.0,
            time_share=float(time_us[s]) / all_time if all_time else 0.0,
            above_ratio=float(above[s]) / u if u else None,
            below_ratio=float(below[s]) / u if u else None,
            mean_stay_us=float(time_us[s]) / u if u else None,
        )
    per_idle = all_usage / (all_time / 1e6) if all_time else 0.0
    per_s = all_usage / n_cpus / elapsed_s if elapsed_s else None
    return Figures(states=states, entries_per_idle_s=per_idle, entries_per_s=per_s)


def structural_ratios(disabled: Sequence[bool]) -> tuple[list[bool], list[bool]]:
    """Per state, whether its above ratio and its below ratio are 0 by construction: above needs an
    enabled shallower state, below an enabled deeper one (cpuidle_enter_state())."""
    enabled = [not d for d in disabled]
    above_fixed = [not any(enabled[:s]) for s in range(len(enabled))]
    below_fixed = [not any(enabled[s + 1 :]) for s in range(len(enabled))]
    return above_fixed, below_fixed


# -------------------------------------------------------------------------------------- classes


def cpu_vectors(counters: np.ndarray) -> np.ndarray:
    """One row per CPU, centred on the machine's mean CPU: the log of its entries per idle second,
    each state's entry share, and the above ratio of the states with at least 5% of the machine's
    entries. Shares and ratios stay on their own 0..1 scale (standardising would blow up a state
    with 0.1% of the entries into a main feature)."""
    usage, time_us, above, _ = counters
    u_cpu = usage.sum(axis=1)
    rate = np.log(np.maximum(u_cpu, 1) / np.maximum(time_us.sum(axis=1) / 1e6, 1e-9))
    share = usage / np.maximum(u_cpu, 1)[:, None]
    main = usage.sum(axis=0) >= 0.05 * max(usage.sum(), 1)
    above_ratio = (above / np.maximum(usage, 1))[:, main]
    x = np.column_stack([rate, share, above_ratio])
    return np.asarray(x - x.mean(axis=0), dtype=np.float64)


def cpu_classes(counters: np.ndarray, seed: int, max_classes: int = 3) -> np.ndarray:
    """Each CPU's class (0..k-1, class 0 the largest), k of 1..max_classes, by k-means on
    `cpu_vectors` (scipy's kmeans2, k-means++ seeded with `seed`).

    A class needs at least 2 CPUs and must cut the within-class spread by CLASS_SPLIT_GAIN over
    one class fewer; otherwise the smaller k is kept. k-means cuts the spread of CPUs that differ
    by noise alone by about a third (a Gaussian's two halves keep 1 - 2/pi of it), so a quarter
    split homogeneous CPUs; every class costs the search four parameters.
    """
    from scipy.cluster.vq import kmeans2

    x = cpu_vectors(counters)
    n = x.shape[0]
    best = np.zeros(n, dtype=np.int64)
    if n < 4 or not (x**2).sum() > 0:
        return best
    spread = float((x**2).sum())
    for k in range(2, max_classes + 1):
        _, labels = kmeans2(x, k, minit="++", seed=np.random.default_rng(seed), iter=50)
        counts = np.bincount(labels, minlength=k)
        if counts.min() < 2:
            break
        within = float(sum(((x[labels == j] - x[labels == j].mean(axis=0)) ** 2).sum() for j in range(k)))
        if within > (1.0 - CLASS_SPLIT_GAIN) * spread:
            break
        order = np.argsort(-counts, kind="stable")
        best = np.asarray(np.argsort(order)[labels], dtype=np.int64)
        spread = within
    return best


def most_different_cpu(counters: np.ndarray) -> int:
    """The position of the CPU farthest from the machine's mean CPU (in `cpu_vectors` space)."""
    return int(np.argmax((cpu_vectors(counters) ** 2).sum(axis=1)))


class _StateLike(Protocol):
    name: str
    latency_us: int | None
    residency_us: int | None
    disabled: bool


class _CountersLike(Protocol):
    usage: int | None
    time_us: int | None
    above: int | None
    below: int | None


class _CpuLike(Protocol):
    cpu: int
    package_id: int | None
    die_id: int | None
    core_id: int | None

    @property
    def counters(self) -> Sequence[_CountersLike | None]: ...


class DumpLike(Protocol):
    """What `MachineCounters.from_dump` reads of a parsed dump."""

    @property
    def states(self) -> Sequence[_StateLike]: ...

    @property
    def cpus(self) -> Sequence[_CpuLike]: ...

    uptime_s: float | None
    window_s: float | None


def log_ratio(a: float, b: float) -> float:
    """log(a / b), with both floored at a tiny positive value."""
    return math.log(max(a, 1e-12) / max(b, 1e-12))
