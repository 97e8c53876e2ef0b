"""What keeps a running tick beyond the timers: RCU callbacks waiting on a CPU (rcu_needs_cpu(),
kernel/rcu/tree.c: callbacks queued and not offloaded), unless the CPU is an `rcu_nocbs` one.
tick_nohz_next_event() then bails out and tick_nohz_get_sleep_length() reports the time to the
next tick (kernel/time/tick-sched.c)."""

from __future__ import annotations

from typing import Any

import pytest

from engine import SimConfig, simulate

from .conftest import deep_update

# Two CPUs woken by device interrupts whose handlers wake a task (300 per second each), HZ 1000.
BASE: dict[str, Any] = {
    "platform": "skx", "seed": 2, "duration_ms": 100.0,
    "topology": {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1},
    "governor": {"name": "menu"},
    "wakeups": {
        "tick": {"hz": 1000}, "timers": [], "interrupts": {"rate_hz": 300, "work_us": 20},
        "ipis": {"rate_hz": 0}, "sched_wakeups": {"rate_hz": 0},
    },
}


def _run(**tick: Any) -> dict[str, Any]:
    cfg = SimConfig.model_validate(deep_update(BASE, {"wakeups": {"tick": tick}}))
    return simulate(cfg).model_dump(mode="json")


def test_rcu_callbacks_keep_the_tick_unless_offloaded() -> None:
    off = _run()
    rcu = _run(rcu_grace_period_us=3000.0)
    nocbs = _run(rcu_grace_period_us=3000.0, rcu_nocbs=[0, 1])
    # Without RCU callbacks each interrupt's idle period stops the tick (C6, one wake-up each);
    # with callbacks waiting 3 ms after each task, the tick keeps running and wakes the CPUs too,
    # and the governor, told the time to the next tick, takes shallower states as well.
    assert off["wakeups"] == off["idle_loop"]["resched_exits"]
    assert rcu["wakeups"] > 2 * off["wakeups"]
    shallow = sum(s["usage"] for s in rcu["states"] if s["name"] in ("C1", "C1E"))
    assert shallow > 0 == sum(s["usage"] for s in off["states"] if s["name"] in ("C1", "C1E"))
    # Offloaded callbacks (rcu_nocbs) never keep the tick: the run is the one without RCU.
    assert nocbs["states"] == off["states"] and nocbs["wakeups"] == off["wakeups"]


def test_rcu_nocbs_cpus_must_exist() -> None:
    with pytest.raises(ValueError, match=r"wakeups\.tick\.rcu_nocbs: CPU 5 does not exist"):
        SimConfig.model_validate(deep_update(BASE, {"wakeups": {"tick": {"rcu_nocbs": [5]}}}))


def test_rcu_callbacks_rearm_a_stopped_tick_a_jiffy_ahead() -> None:
    # nohz_full CPUs whose tick stays stopped throughout. With RCU callbacks waiting (not
    # offloaded), tick_nohz_next_event() takes the next event a jiffy after the last one and, the
    # tick being stopped, does not bail out: the governor is told that, and the stopped tick's
    # timer fires there, once per idle entry while the callbacks wait (kernel/time/tick-sched.c).
    full = [0, 1]
    rcu = _run(nohz_full=full, rcu_grace_period_us=3000.0)
    nocbs = _run(nohz_full=full, rcu_grace_period_us=3000.0, rcu_nocbs=full)
    off = _run(nohz_full=full)
    assert rcu["idle_loop"]["selections_tick_stopped"] == rcu["idle_loop"]["selections"]  # never restarted
    # Offloaded callbacks change nothing; waiting ones add about a wake-up per jiffy of the 3 ms
    # grace period after each task, and the governor, told at most a jiffy, goes shallower too.
    assert nocbs["states"] == off["states"] and nocbs["wakeups"] == off["wakeups"]
    assert rcu["wakeups"] > 2 * off["wakeups"]
    shallow = sum(s["usage"] for s in rcu["states"] if s["name"] in ("C1", "C1E"))
    assert shallow > 0 == sum(s["usage"] for s in off["states"] if s["name"] in ("C1", "C1E"))
