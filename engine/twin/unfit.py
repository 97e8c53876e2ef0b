"""What makes counters unfit for a twin, though they could come from one boot (issue 21, section 4).

A twin fits one idle load under one configuration. Counters can be honest and still mix what a
twin cannot reproduce; `unfit_reasons` lists each such finding, for the import to show:

- `disabled_part_time`: a state whose counters prove that its first enabled deeper state was
  disabled for part of the window (icx2s3: C1 holds 86% of idle time in stays of ~110 ms with
  almost no `below`). cpuidle_enter_state() counts `below` for every stay whose length minus the
  state's exit latency reaches the deeper state's target residency, so every stay not counted is
  shorter than that threshold; what is left of `time` must be in the `below` stays, and if that
  makes them longer than any idle stay can be, they were stays with the deeper state disabled.
- `idle_time_differs`: since-boot counters of CPUs whose idle time differs from the machine's
  median: hotplugged CPUs, or CPUs that ran a task, are not under the load the others saw.
- `short_uptime`: since-boot counters over a short time: boot-time activity is part of them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.twin.counters import BELOW, TIME, USAGE, MachineCounters

# kernel/watchdog.c: the soft-lockup detector's hrtimer fires every sample_period =
# 2 * watchdog_thresh / NUM_SAMPLE_PERIODS = 2 * 10 / 5 = 4 s on every CPU it watches, so no idle
# stay of a watched CPU lasts longer. The bound leaves room (a choice, not a kernel figure).
LONGEST_STAY_US = 10_000_000.0
IDLE_TIME_SPREAD = 0.10  # a CPU's since-boot idle time this far off the median is flagged (a choice)
SHORT_UPTIME_S = 3_600.0  # since-boot counters over less than an hour are flagged (a choice)

Kind = Literal["disabled_part_time", "idle_time_differs", "short_uptime"]


class Unfit(BaseModel):
    """One reason the counters are unfit for a twin."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    message: str
    state: str | None = None
    cpus: list[int] = []


def unfit_reasons(measured: MachineCounters) -> list[Unfit]:
    """Every reason `measured` is unfit for a twin (see the module docstring); [] when none."""
    return [
        *_disabled_part_time(measured),
        *_idle_time_differs(measured),
        *_short_uptime(measured),
    ]


def _disabled_part_time(m: MachineCounters) -> list[Unfit]:
    a = m.array()
    out = []
    enabled = [not d for d in m.disabled]
    for s in range(len(m.states)):
        deeper = next((d for d in range(s + 1, len(m.states)) if enabled[d]), None)
        if not enabled[s] or deeper is None:
            continue
        threshold_us = m.target_residency_us[deeper] + m.exit_latency_us[s]
        usage, time_us, below = a[USAGE, :, s], a[TIME, :, s], a[BELOW, :, s]
        # Time the stays not counted `below` cannot hold: it is in the `below` stays.
        left_us = time_us - (usage - below) * threshold_us
        bad = (usage > 0) & (left_us > np.maximum(below, 1) * LONGEST_STAY_US)
        if not bad.any():
            continue
        cpus = [m.cpus[i] for i in np.flatnonzero(bad)]
        total_usage = float(usage.sum())
        mean_ms = float(time_us.sum()) / total_usage / 1000.0 if total_usage else 0.0
        below_ratio = float(below.sum()) / total_usage if total_usage else 0.0
        out.append(
            Unfit(
                kind="disabled_part_time",
                state=m.states[s],
                cpus=cpus,
                message=(
                    f"{m.states[s]}: stays of {mean_ms:.3g} ms on average with below/usage "
                    f"{below_ratio:.2g} on {len(cpus)} of {len(m.cpus)} CPUs: {m.states[deeper]} (or "
                    f"every state deeper than {m.states[s]}) was disabled for part of the window"
                ),
            )
        )
    return out


def _idle_time_differs(m: MachineCounters) -> list[Unfit]:
    if m.since_boot is False:
        return []  # over an interval a CPU may well idle less: it is the load, not the window
    idle_s = m.array()[TIME].sum(axis=1) / 1e6
    median = float(np.median(idle_s))
    if median <= 0:
        return []
    off = np.abs(idle_s / median - 1.0) > IDLE_TIME_SPREAD
    if not off.any():
        return []
    cpus = [m.cpus[i] for i in np.flatnonzero(off)]
    listed = ", ".join(f"CPU {m.cpus[i]} {idle_s[i]:.0f} s" for i in np.flatnonzero(off)[:5])
    more = f" and {len(cpus) - 5} more" if len(cpus) > 5 else ""
    return [
        Unfit(
            kind="idle_time_differs",
            cpus=cpus,
            message=(
                f"idle time: {len(cpus)} CPUs differ from the median CPU's {median:.0f} s of idle by "
                f"more than {IDLE_TIME_SPREAD:.0%} ({listed}{more}): hotplugged, or busy part of the "
                "time; since-boot counters mix that in"
            ),
        )
    ]


def _short_uptime(m: MachineCounters) -> list[Unfit]:
    if m.since_boot is False:
        return []
    if m.elapsed_s is not None:
        span_s, what = m.elapsed_s, f"an uptime of {m.elapsed_s:.0f} s"
    else:  # no uptime: the most idle CPU's idle time is a lower bound of it
        span_s = float(m.array()[TIME].sum(axis=1).max()) / 1e6
        what = f"at least {span_s:.0f} s (no uptime in the dump: the most idle CPU's idle time)"
    if span_s >= SHORT_UPTIME_S:
        return []
    return [
        Unfit(
            kind="short_uptime",
            message=(
                f"uptime: since-boot counters over {what}, under {SHORT_UPTIME_S:.0f} s: boot-time "
                "activity is part of them (two snapshots with `idlelab collect --interval` avoid it)"
            ),
        )
    ]
