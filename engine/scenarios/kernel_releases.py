"""menu from one kernel to the next: documented regressions and fixes, reproduced in direction.

Each scenario runs one workload under the tree before a commit and the tree at it
(`governor.kernel`), on the platform of the report. Their checks are of kind `direction`: the sign
of the change the report measured (its size is the benchmark's, not a figure the model can
reproduce: sched-pipe and lmbench throughput depend on far more than the idle path).
"""

from __future__ import annotations

from typing import Any

from engine import metrics
from engine.platforms import CState, Param, custom_platform, load_platform
from engine.scenarios.framework import Scenario, _merge, direction_check, kernel_roles

M_SCHED_LAT = metrics.get("latency.sched.mean_ns")
M_POLL_USAGE = metrics.get("usage.POLL")
M_C1_USAGE = metrics.get("usage.C1")

# Two CPUs waking each other's tasks at a high rate (perf bench sched pipe's pattern: short work,
# idle intervals of a few microseconds), kicked off by device interrupts.
_PIPE: dict[str, Any] = {
    "seed": 3,
    "duration_ms": 100,
    "topology": {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1},
    "governor": {"name": "menu"},
    "wakeups": {
        "tick": {"hz": 1000},
        "timers": [],
        "interrupts": {"rate_hz": 2000, "work_us": 1},
        "ipis": {"rate_hz": 0},
        "sched_wakeups": {
            "rate_hz": 200_000, "same_socket_share": 1.0, "work_us": 2, "work_distribution": "fixed"
        },
    },
}

SOURCE_779B = (
    "linux-pm: kernel test robot, perf-bench sched-pipe -12.9% on a 4-socket Cascade Lake-AP from "
    "779b1a1cb13a (cpuidle: governors: menu: Avoid selecting states with too much latency)"
)
SOURCE_DB86 = (
    "linux-pm: kernel test robot, lmbench pipe latency 11.5% lower on a Sapphire Rapids from db86f55bf81a "
    "(cpuidle: governors: menu: Select polling state in some more cases)"
)


def spr_kernel_rows() -> dict[str, Any]:
    """A custom table equal to intel_idle's spr_cstates (drivers/idle/intel_idle.c, SPR and EMR: C1
    1/1, C1E 2/4, C6 290/800 us; shared/reference/kernel-notes.md 1.2) on icx's topology, costs,
    power and package states, on which this pipe load was tuned. The exit latency medians
    are icx's where they fit under spr's worst cases (estimates)."""
    icx = load_platform("icx")
    states = [
        CState(name="C1", desc="MWAIT 0x00", mwait_hint="0x00", exit_latency_us=1, target_residency_us=1),
        CState(name="C1E", desc="MWAIT 0x01", mwait_hint="0x01", flags=["CPUIDLE_FLAG_ALWAYS_ENABLE"],
               exit_latency_us=2, target_residency_us=4),
        CState(name="C6", desc="MWAIT 0x20", mwait_hint="0x20",
               flags=["CPUIDLE_FLAG_TLB_FLUSHED", "CPUIDLE_FLAG_INIT_XSTATE"],
               exit_latency_us=290, target_residency_us=800,
               exit_latency_median_us=Param(value=170.0, kind="estimate",
                                            source="icx's C6 worst case taken as spr's median")),
    ]
    table = custom_platform("spr-kernel-rows", states, based_on=icx,
                            title="intel_idle spr_cstates on icx's model terms")
    return table.model_dump(mode="json")


def _menu_779b() -> Scenario:
    before, after = "fa3fa55de0d6", "779b1a1cb13a"
    base = _merge(_PIPE, platform="skx")
    roles = kernel_roles(base, before, after)
    checks = (
        direction_check(
            id="menu-779b-poll-gone", source=SOURCE_779B, metric="POLL entries, after vs before",
            metric_ref=M_POLL_USAGE, mode="change_pct", baseline="before", role="after", accept=(None, -50.0),
            tolerance="at least halved", published_text="C1 instead of POLL for short idle intervals",
        ),
        direction_check(
            id="menu-779b-latency-up", source=SOURCE_779B, metric="task wake-up latency, after vs before",
            metric_ref=M_SCHED_LAT, mode="change_pct", baseline="before", role="after", accept=(0.0, None),
            tolerance="higher", published_text="sched-pipe throughput -12.9% (slower wake-ups)",
        ),
    )
    return Scenario(
        name="menu-779b1a1cb13a-skx",
        title="menu 779b1a1cb13a: C1 replaces POLL for short idle intervals (skx, sched-pipe pattern)",
        description="With the latency limit no longer clamped to the prediction, the POLL rule takes C1 "
        "whenever its residency is not after the next timer, even below C1's exit latency. Short idle "
        "intervals then pay C1's exit.",
        source=SOURCE_779B, roles=roles, metrics=(M_SCHED_LAT, M_POLL_USAGE, M_C1_USAGE), checks=checks,
        charts=("residency", "latency_cdf"),
    )


def _menu_db86() -> Scenario:
    before, after = "10fad4012234", "db86f55bf81a"
    base = _merge(_PIPE, platform="spr-kernel-rows", platform_table=spr_kernel_rows())
    roles = kernel_roles(base, before, after)
    checks = (
        direction_check(
            id="menu-db86-poll-back", source=SOURCE_DB86, metric="POLL entries, after minus before",
            metric_ref=M_POLL_USAGE, mode="diff", baseline="before", role="after", accept=(10.0, None),
            tolerance="at least 10 more",
            published_text="POLL kept when C1's exit latency exceeds the prediction",
            note="The report's latency gain is not reproduced: the model's task wake-up latency rises ~3% "
            "here (see the notes).",
        ),
    )
    return Scenario(
        name="menu-db86f55bf81a-spr",
        title="menu db86f55bf81a: POLL back when the exit latency exceeds the prediction (spr table)",
        description="After 779b1a1cb13a, POLL is kept again when the candidate's exit latency exceeds "
        "the prediction. The table is spr's kernel rows as a custom table (intel_idle spr_cstates) on "
        "icx's model terms, as calibrated on this pipe load: on the built-in spr table's estimates the "
        "same load sleeps mostly in C6 (seeds 3 and 4 at 200 kHz: 30.9-38.8 us mean task wake-up "
        "latency against 13.3 us here), where the commit does not act.",
        source=SOURCE_DB86, roles=roles, metrics=(M_SCHED_LAT, M_POLL_USAGE, M_C1_USAGE), checks=checks,
        charts=("residency", "latency_cdf"),
        notes=(
            "Direction of the latency not reproduced: with these two CPUs the POLL entries db86f55bf81a "
            "brings back come with a ~3% higher mean task wake-up latency in the model (13.3 -> 13.6 us at "
            "300 kHz, 20.4 -> 21.0 us at 200 kHz), against the report's 11.5% lower pipe latency.",
        ),
    )


M_C6_RESIDENCY = metrics.get("residency.C6")
M_TIMER_LAT = metrics.get("latency.timer.mean_ns")

SOURCE_80606 = (
    "80606f4eb8d7 (cpuidle: governors: menu: Always check timers with tick stopped), linux-pm "
    "<5959091.DvuYhMxLoT@rafael.j.wysocki>: with the tick stopped and a short typical interval, "
    "menu skipped the timer and took KTIME_MAX as the prediction"
)


def _menu_80606() -> Scenario:
    before, after = "07d815701274", "80606f4eb8d7"
    # One nohz_full CPU (its tick stays stopped), device interrupts at 100 kHz that wake no task
    # (a typical interval of a few microseconds), and a 300 us timer: due before C6's 600 us.
    base: dict[str, Any] = {
        "platform": "skx",
        "seed": 5,
        "duration_ms": 100,
        "topology": {"sockets": 1, "cores_per_socket": 1, "threads_per_core": 1},
        "governor": {"name": "menu"},
        "wakeups": {
            "tick": {"hz": 1000, "nohz_full": [0]},
            "timers": [{"period_us": 300.0, "work_us": 5}],
            "interrupts": {"rate_hz": 100_000, "work_us": 0},
            "ipis": {"rate_hz": 0},
            "sched_wakeups": {"rate_hz": 0},
        },
    }
    roles = kernel_roles(base, before, after, "v6.19's tree")
    checks = (
        direction_check(
            id="menu-80606-deepest-before", source=SOURCE_80606, metric="C6 residency before",
            metric_ref=M_C6_RESIDENCY, mode="value", role="before", accept=(20.0, None),
            tolerance="above 20%", published_text="before: the deepest state, the timer unseen",
        ),
        direction_check(
            id="menu-80606-shallower-after", source=SOURCE_80606, metric="C6 residency, after minus before",
            metric_ref=M_C6_RESIDENCY, mode="diff", baseline="before", role="after", accept=(None, -20.0),
            tolerance="at least 20 pp lower", published_text="after: a shallower state that fits the timer",
        ),
        direction_check(
            id="menu-80606-timer-latency", source=SOURCE_80606,
            metric="timer wake-up latency, after vs before",
            metric_ref=M_TIMER_LAT, mode="change_pct", baseline="before", role="after", accept=(None, -20.0),
            tolerance="at least 20% lower", published_text="the timer no longer waits for C6's exit",
        ),
    )
    return Scenario(
        name="menu-80606f4eb8d7",
        title="menu 80606f4eb8d7: the timer read whenever the tick is stopped",
        description="Before it, a short typical interval made menu skip the timer, and with the tick "
        "stopped the prediction became KTIME_MAX: the deepest state. After it the timer is read and "
        "a state that fits it is chosen.",
        source=SOURCE_80606, roles=roles, metrics=(M_C6_RESIDENCY, M_TIMER_LAT, M_POLL_USAGE), checks=checks,
        charts=("residency", "latency_cdf"),
    )


def scenarios() -> list[Scenario]:
    return [_menu_779b(), _menu_db86(), _menu_80606()]
