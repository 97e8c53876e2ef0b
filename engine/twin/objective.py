"""A twin's objective and goal: which figures of a class are compared, each figure's error in units
of its tolerance, the distance the search minimises, and what misses the goal (issue 21,
section 4) on the whole machine's figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from engine.twin.counters import Figures, structural_ratios

# The goal (issue 21, section 4) and the objective's tolerances: each figure's error is divided
# by its tolerance, so 1 is the edge of the goal.
SHARE_MIN_FOR_RATIOS = 0.05  # states with at least 5% of entries: ratios and mean stay judged
SHARE_MIN_ENTRIES = 0.01  # entry share in the objective from 1% of entries
TIME_SHARE_MIN = 0.01
TOLERANCE = {
    "entry_share": 0.05,
    "time_share": 0.02,
    "above_ratio": 0.10,
    "below_ratio": 0.10,
    "mean_stay_us": 0.25,  # relative
    "entries_per_idle_s": 0.20,  # relative
}
WEIGHTS = {
    "entry_share": 1.0,
    "time_share": 1.0,
    "above_ratio": 1.0,
    "below_ratio": 1.0,
    "mean_stay_us": 1.0,
    "entries_per_idle_s": 2.0,
}
RELATIVE = {"mean_stay_us", "entries_per_idle_s"}
WORST_TERM_WEIGHT = 0.5
MISSING_ERROR = 10.0  # a figure the simulation has no value for (a state it never entered)


class Miss(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: str | None  # None: a figure of the whole machine
    figure: str
    measured: float
    fitted: float | None
    tolerance: float  # absolute, or relative for mean_stay_us and entries_per_idle_s


class Term(NamedTuple):
    state: str | None
    figure: str
    measured: float


def objective_terms(measured: Figures, disabled: Sequence[bool]) -> list[Term]:
    """The figures the objective compares for one class: every state's entry share from 1% of
    entries; above and below ratios (not structurally 0) and the mean stay from 5%; the time
    share from 1% of idle time; the entries per idle second."""
    above_fixed, below_fixed = structural_ratios(disabled)
    terms = []
    for s, (name, f) in enumerate(measured.states.items()):
        if f.entry_share >= SHARE_MIN_ENTRIES:
            terms.append(Term(name, "entry_share", f.entry_share))
        if f.entry_share >= SHARE_MIN_FOR_RATIOS:
            if not above_fixed[s] and f.above_ratio is not None:
                terms.append(Term(name, "above_ratio", f.above_ratio))
            if not below_fixed[s] and f.below_ratio is not None:
                terms.append(Term(name, "below_ratio", f.below_ratio))
            if f.mean_stay_us is not None:
                terms.append(Term(name, "mean_stay_us", f.mean_stay_us))
        if f.time_share >= TIME_SHARE_MIN:
            terms.append(Term(name, "time_share", f.time_share))
    terms.append(Term(None, "entries_per_idle_s", measured.entries_per_idle_s))
    return terms


def _value(f: Figures, term: Term) -> float | None:
    if term.state is None:
        return float(getattr(f, term.figure))
    value = getattr(f.states[term.state], term.figure)
    return None if value is None else float(value)


def term_error(fitted: Figures, term: Term) -> float:
    """The figure's error in units of its tolerance (relative figures on a log scale)."""
    value = _value(fitted, term)
    tol = TOLERANCE[term.figure]
    if value is None:
        return MISSING_ERROR
    if term.figure in RELATIVE:
        if value <= 0 or term.measured <= 0:
            return MISSING_ERROR
        return math.log(value / term.measured) / math.log(1.0 + tol)
    return (value - term.measured) / tol


def distance_of(fitted: Figures, terms: Sequence[Term]) -> float:
    """Weighted mean squared error over the terms (1: every figure at the edge of its tolerance),
    plus WORST_TERM_WEIGHT times the largest squared error: the goal asks every figure to be
    within its tolerance, so one figure far off must cost more than several slightly off."""
    errors = [min(abs(term_error(fitted, t)), MISSING_ERROR) ** 2 for t in terms]
    mean = sum(WEIGHTS[t.figure] * e for t, e in zip(terms, errors, strict=True)) / sum(
        WEIGHTS[t.figure] for t in terms
    )
    return mean + WORST_TERM_WEIGHT * max(errors)


def term_key(t: Term) -> str:
    return t.figure if t.state is None else f"{t.state}.{t.figure}"


def goal_misses(measured: Figures, fitted: Figures, disabled: Sequence[bool]) -> list[Miss]:
    """What misses the goal (issue 21, section 4) on whole-machine figures: for states with >= 5%
    of entries the entry share within 5 pp, above and below within 0.10 (where not structurally
    0), the mean stay within 25%; for states with >= 1% of idle time the time share within 2 pp;
    the entries per idle second within 20%."""
    above_fixed, below_fixed = structural_ratios(disabled)
    out = []

    def judge(state: str | None, figure: str, m: float | None, f: float | None) -> None:
        if m is None:
            return
        tol = TOLERANCE[figure]
        if f is None:
            ok = False
        elif figure in RELATIVE:
            ok = m > 0 and abs(f / m - 1.0) <= tol
        else:
            ok = abs(f - m) <= tol + 1e-12
        if not ok:
            out.append(Miss(state=state, figure=figure, measured=m, fitted=f, tolerance=tol))

    for s, (name, m) in enumerate(measured.states.items()):
        f = fitted.states[name]
        if m.entry_share >= SHARE_MIN_FOR_RATIOS:
            judge(name, "entry_share", m.entry_share, f.entry_share)
            if not above_fixed[s]:
                judge(name, "above_ratio", m.above_ratio, f.above_ratio)
            if not below_fixed[s]:
                judge(name, "below_ratio", m.below_ratio, f.below_ratio)
            judge(name, "mean_stay_us", m.mean_stay_us, f.mean_stay_us)
        if m.time_share >= TIME_SHARE_MIN:
            judge(name, "time_share", m.time_share, f.time_share)
    judge(None, "entries_per_idle_s", measured.entries_per_idle_s, fitted.entries_per_idle_s)
    return out
