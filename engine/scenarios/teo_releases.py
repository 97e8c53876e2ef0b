"""teo from one kernel to the next: the ChromeOS report of November 2025, reproduced in direction.

"Regression in TEO cpuidle governor between 6.6 and 6.12" (linux-pm,
<CAEmPcwsNMNnNXuxgvHTQ93Mx-q3Oz9U57THQsU_qdcCx1m4w5g@mail.gmail.com>): on a MediaTek MT8196
ChromeOS device (psci_idle: WFI 1/1, cpuoff 349/6710 and clusteroff 434/6710 us, HZ 100), almost
idle, the time in WFI went from 6% (6.6) to 99.9% (6.6 with teo's commits up to 6.12), bisected to
4b20b07ce72f ("cpuidle: teo: Don't count non-existent intercepts"), and 57% in mainline (then
6.18-rc4). The maintainers' reading: once the intercepts pick state 0 the tick keeps running;
before 4b20b07ce72f the sleep length stayed KTIME_MAX there, so a tick wake-up counted past the
deepest state (`tick_hits`) and the deepest state came back; after it the sleep length is read,
and where the tick cannot be stopped that is the time to the next tick, so tick wake-ups count as
hits in shallow bins and state 0 stays.
"""

from __future__ import annotations

from typing import Any

from engine import metrics
from engine.platforms import CState, Param, custom_platform, load_platform
from engine.scenarios.framework import Scenario, direction_check, kernel_roles

SOURCE_4B20 = (
    "linux-pm, November 2025: \"Regression in TEO cpuidle governor between 6.6 and 6.12\" (Reka Norman, "
    "MediaTek MT8196 ChromeOS device): WFI 6.02% of idle time on 6.6, 99.94% with teo's commits up to "
    "6.12, 56.84% in mainline; bisected to 4b20b07ce72f (cpuidle: teo: Don't count non-existent "
    "intercepts)"
)

M_WFI_TIME = metrics.get("residency.WFI")
M_CLUSTEROFF_TIME = metrics.get("residency.clusteroff")
M_WFI_USAGE = metrics.get("usage.WFI")


def psci_mt8196_table() -> dict[str, Any]:
    """A table shaped like the device's psci_idle one (its sysfs dump in the report: WFI 1/1,
    cpuoff 349/6710, clusteroff 434/6710 us; no POLL), its s2idle-only state left out. Power,
    costs and exit distributions are skx's model terms and generic defaults (estimates: idlelab
    has no Arm hardware model); the firmware's refusals of clusteroff (`rejected`) are not
    modelled."""
    skx = load_platform("skx")
    states = [
        CState(name="WFI", desc="ARM WFI", core_cstate="CC1", exit_latency_us=1, target_residency_us=1),
        CState(name="cpuoff", desc="cpuoff-l", core_cstate="CC6", exit_latency_us=349,
               target_residency_us=6710,
               exit_latency_median_us=Param(value=349.0, kind="estimate", source="the table's worst case")),
        CState(name="clusteroff", desc="clusteroff-l", core_cstate="CC7", exit_latency_us=434,
               target_residency_us=6710,
               exit_latency_median_us=Param(value=434.0, kind="estimate", source="the table's worst case")),
    ]
    table = custom_platform("psci-mt8196-shape", states, based_on=skx,
                            title="psci_idle table shaped like MT8196's, on skx's model terms")
    # custom_platform() puts POLL first, as cpuidle does for intel_idle; psci_idle registers none.
    table = table.model_copy(update={"states": table.states[1:], "family_modelled": False,
                                     "modelled_on": "skx"})
    return table.model_dump(mode="json")


def _teo_4b20() -> Scenario:
    before, after = "449914398083", "4b20b07ce72f"
    # CPUs almost idle at HZ 100: device interrupts and task wake-ups, each task queueing an RCU
    # callback that keeps the tick running for a grace period (30 ms, three jiffies: a guess; what
    # keeps the device's tick is not determined). 32 CPUs (the device has 8) give a 300 ms run
    # enough idle periods.
    base: dict[str, Any] = {
        "platform": "psci-mt8196-shape",
        "platform_table": psci_mt8196_table(),
        "seed": 1,
        "duration_ms": 300,
        "topology": {"sockets": 1, "cores_per_socket": 32, "threads_per_core": 1},
        "governor": {"name": "teo"},
        "wakeups": {
            "tick": {"hz": 100, "rcu_grace_period_us": 30000.0},
            "timers": [],
            "interrupts": {"rate_hz": 100, "work_us": 20},
            "ipis": {"rate_hz": 0},
            "sched_wakeups": {"rate_hz": 20, "work_us": 50},
        },
    }
    roles = kernel_roles(base, before, after)
    checks = (
        direction_check(
            id="teo-4b20-wfi-up", source=SOURCE_4B20, metric="WFI share of idle time, after minus before",
            metric_ref=M_WFI_TIME, mode="diff", baseline="before", role="after", accept=(5.0, None),
            tolerance="at least 5 pp higher", published_text="WFI 6% -> 99.9% of idle time",
            note="Direction only: the model's rise is 15 points, the device's was 94 (see the notes).",
        ),
        direction_check(
            id="teo-4b20-clusteroff-down", source=SOURCE_4B20,
            metric="clusteroff share of idle time, after minus before", metric_ref=M_CLUSTEROFF_TIME,
            mode="diff", baseline="before", role="after", accept=(None, -5.0),
            tolerance="at least 5 pp lower",
            published_text="clusteroff 83% -> 0.05% of idle time",
        ),
    )
    return Scenario(
        name="teo-4b20b07ce72f-psci",
        title="teo 4b20b07ce72f: more time in WFI on a psci table without POLL (HZ 100, almost idle)",
        description="After 4b20b07ce72f teo reads the sleep length when the intercepts pick state 0; "
        "where RCU callbacks keep the tick, that is the time to the next tick, and the tick wake-ups "
        "that follow count as hits in WFI's bin instead of past the deepest state. The table is shaped "
        "like the device's (WFI as state 0, no POLL, two states of one residency).",
        source=SOURCE_4B20, roles=roles, metrics=(M_WFI_TIME, M_CLUSTEROFF_TIME, M_WFI_USAGE), checks=checks,
        charts=("residency",),
        notes=(
            "Size not reproduced: in the model WFI's share rises by 15 points (45% -> 60% here; +14.7 to "
            "+15.7 pp over seeds 1-3), on the device from 6% to 99.9%. What keeps the device's tick "
            "and wakes it is not known in enough detail (here RCU callbacks after each task, a 30 ms "
            "grace period: guesses), and the governor's own time is not modelled.",
            "The base is the tree the bisection compared, 449914398083, not the v6.6 tag: mainline v6.6's "
            "NR_RECENT ring underflows (why 449914398083 removed it) and keeps teo shallower in the model "
            "(WFI 59% here); whether the device's 6.6 carried 449914398083 is not determined.",
            "Later trees: v6.18 and v6.19 (with 083654ded547, the fix posted for this report) stay at "
            "4b20b07ce72f's figure here, v7.0-rc1 above it (70%), where the device's WFI share fell "
            "to about 4.5% with 083654ded547: not reproduced.",
        ),
    )


def scenarios() -> list[Scenario]:
    return [_teo_4b20()]
