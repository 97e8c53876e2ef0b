"""What a measurement leads to: the run that reproduces its conditions ("simulate this"), and a
platform calibrated on it (the exit-latency distribution of each C-state wult measured).

The config follows what the measurement says, as far as it says it: the platform (one given, or
an imported one, or a built-in one, that has every requested state), the requested C-states
(one: the `fixed` governor asks for it; several: the others are disabled), and wult's launch
distance as the period of a timer on every CPU. What it cannot say (the delivery method, the
spread of LDist) goes into the run's title and the answer's notes.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from sqlalchemy.orm import Session

from app.errors import InvalidInput
from app.measurements.turbostat import TurbostatResult
from app.measurements.views import load_measurement_view, load_parsed
from app.measurements.wult import WultMeasurement
from app.platforms import store as platform_store
from app.platforms.importing import unique_name
from app.platforms.views import platform_view, platforms_view
from engine import BUILTIN_PLATFORMS, Platform
from engine.calibrate import MIN_SAMPLES, P9999_SAMPLES, apply_fit, fit_exit_latency
from engine.platforms import Param

# Built-in platforms in the order they are tried when nothing else names one.
_BUILTIN_ORDER = ("skx", "icx", "wsm")
# A simulation of a wult run: ~1000 wake-ups per CPU at its launch distance, within 50..500 ms.
_WAKEUPS_PER_CPU = 1000
_MIN_MS, _MAX_MS = 50.0, 500.0
_CORES = 4
_REACHED = re.compile(r"(CC|MC|PC)(\d+)")


def _requested(view: dict[str, Any]) -> list[str]:
    if view["kind"] == "wult":
        return [r["req_cstate"] for r in view["requested"]]
    return [name for name, _desc in view.get("cpuidle_states", [])]


def choose_platform(session: Session, wanted: list[str], given: str | None = None) -> tuple[str, str]:
    """(platform name, why): `given`, else the newest imported platform with every wanted state,
    else the first built-in one with them all, else skx."""
    if given:
        platform_view(session, given)  # NotFound for an unknown name
        return given, f"platform {given!r} as asked"
    names = set(wanted)
    imported = [p for p in platforms_view(session).platforms if p.custom and p.machine is not None]
    for p in sorted(imported, key=lambda p: p.created_at or 0, reverse=True):
        if names <= {s.name for s in p.table.states}:
            return p.name, f"imported platform {p.name!r} has every requested state"
    for name in _BUILTIN_ORDER:
        if name in BUILTIN_PLATFORMS and names <= {s.name for s in BUILTIN_PLATFORMS[name].states}:
            return name, f"built-in {name!r} has every requested state ({', '.join(wanted) or 'none named'})"
    return "skx", "no platform has every requested state: skx, with the states it lacks left out"


def simulation_config(
    session: Session, measurement_id: str, *, platform: str | None = None
) -> tuple[dict[str, Any], str, list[str]]:
    """(config, run title, notes) of the run that reproduces a measurement's conditions."""
    m = load_measurement_view(session, measurement_id)
    view = m.view
    wanted = _requested(view)
    name, why = choose_platform(session, wanted, platform)
    table = platform_view(session, name).table
    states = [s.name for s in table.states]
    notes = [why]
    config: dict[str, Any] = {"platform": name, "seed": 1}
    title = f"Simulating {m.title}"[:200]
    if view["kind"] == "wult":
        requested = [s for s in wanted if s in states]
        lost = [s for s in wanted if s not in states]
        if lost:
            notes.append(f"requested states not in {name!r}, left out: {', '.join(lost)}")
        deep = [s for s in requested if s != "POLL"]
        if len(requested) == 1 and deep:
            config["governor"] = {"name": "fixed", "fixed_state": deep[0]}
            notes.append(f"the fixed governor asks for {deep[0]}, as wult's only requested state")
        elif requested:
            config["states"] = {"disabled": [s for s in states if s not in requested]}
            notes.append(f"only the requested states stay enabled: {', '.join(requested)}")
        cond = view["conditions"]
        wakeups: dict[str, Any] = {
            "interrupts": {"rate_hz": 0.0},
            "ipis": {"rate_hz": 0.0},
            "sched_wakeups": {"rate_hz": 0.0},
        }
        if cond.get("ldist_us"):
            lo, mid, hi = cond["ldist_us"]
            period = max(float(mid), 1.0)
            wakeups["timers"] = [{"period_us": period, "work_us": 0.0}]
            config["duration_ms"] = min(_MAX_MS, max(_MIN_MS, period * _WAKEUPS_PER_CPU / 1000.0))
            notes.append(
                f"a timer every {period:g} us on every CPU (LDist median; wult's ranged {lo:g}..{hi:g} us)"
            )
        else:
            notes.append("no LDist column: the default timers")
        config["wakeups"] = wakeups
        # wult measures one CPU of an otherwise idle machine: a few idle cores around it keep the
        # package free to reach its deep states, as there, at a fraction of the whole machine's cost.
        config["topology"] = {"sockets": 1, "cores_per_socket": _CORES, "threads_per_core": 1}
        notes.append(f"one socket of {_CORES} cores, all running the same timer (wult measures one CPU)")
        delivery = view["info"].get("delivery", "unknown")
        notes.append(
            f"delivery {delivery!r} ({view['info'].get('devid') or 'no devid'}): the model's wake-up is a "
            "timer interrupt; a NIC's adds its PCIe path, which the model does not have"
        )
        title = f"Simulating {m.title} (delivery {delivery})"[:200]
    else:
        notes.append("turbostat says no load: the default mixed load on that table")
    return config, title, notes


# --- calibration -------------------------------------------------------------------------------


def _depth(reached: str) -> tuple[int, int, int]:
    found = {k: int(v) for k, v in _REACHED.findall(reached)}
    return found.get("CC", 0), found.get("MC", 0), found.get("PC", 0)


def calibrate(
    session: Session, measurement_id: str, *, platform: str | None = None, name: str | None = None
) -> tuple[Platform, list[dict[str, Any]]]:
    """A custom platform whose states wult measured enough of carry a measured exit distribution:
    median (and, with >= 10^5 samples, the hardware's 99.99th percentile `hw_exit_latency_us`),
    labelled `measured` with the measurement's id. The table figures the governor sees stay the
    kernel's. Per state, the deepest hardware state its datapoints reached with enough samples
    is fitted (wult classes rows by their own CC/PC counters). Returns (table, per-state fits)."""
    parsed = load_parsed(session, measurement_id)
    if not isinstance(parsed, WultMeasurement):
        assert isinstance(parsed, TurbostatResult)
        raise InvalidInput.one(
            ["path", "measurement_id"], "only a wult measurement has exit latencies to fit", "value_error"
        )
    view = load_measurement_view(session, measurement_id).view
    base_name, _ = choose_platform(session, list(parsed.req_names), platform)
    base_view = platform_view(session, base_name)
    base = base_view.table
    source = f"wult measurement {measurement_id}"
    fits: list[dict[str, Any]] = []
    states = list(base.states)
    for i, state in enumerate(states):
        if state.is_poll or state.name not in parsed.req_names:
            continue
        classes = [c for c in parsed.classes if c.req_cstate == state.name and c.reached != "any"]
        enough = [c for c in classes if c.count >= MIN_SAMPLES]
        if not enough:
            total = sum(c.count for c in classes)
            reason = f"{total} samples, {MIN_SAMPLES} needed"
            fits.append({"state": state.name, "fitted": False, "reason": reason})
            continue
        cls = max(enough, key=lambda c: _depth(c.reached))
        reached = None if cls.reached == "unknown" else cls.reached
        samples, what = parsed.exit_latency_ns(state.name, reached)
        samples = samples[samples > 0]
        try:
            fit = fit_exit_latency(samples)
            fitted = apply_fit(state, fit, f"{source}, class {cls.reached}")
        except ValueError as err:
            fits.append({"state": state.name, "fitted": False, "reason": str(err)})
            continue
        if fit.count >= P9999_SAMPLES:
            label = f"{source}, class {cls.reached}: 99.99th percentile of {fit.count:,} samples"
            worst = Param(value=round(fit.p9999_us, 3), kind="measured", source=label)
            fitted = fitted.model_copy(update={"hw_exit_latency_us": worst})
        states[i] = fitted
        fits.append(
            {
                "state": state.name,
                "fitted": True,
                "reached": cls.reached,
                "samples": what,
                **fit.model_dump(),
                "hw_exit_latency_us": fitted.hw_exit_latency_us.value if fitted.hw_exit_latency_us else None,
            }
        )
    if not any(f["fitted"] for f in fits):
        reasons = "; ".join(f"{f['state']}: {f['reason']}" for f in fits) or "no requested state in the table"
        raise InvalidInput.one(["path", "measurement_id"], f"nothing to calibrate ({reasons})", "value_error")
    default = re.sub(r"[^a-z0-9_\-]", "-", f"{base_name}-cal-{measurement_id.lower()}")
    name = name or unique_name(session, default)
    if name in BUILTIN_PLATFORMS or platform_store.get_platform(session, name) is not None:
        raise InvalidInput.one(["body", "name"], f"platform {name!r} already exists", "value_error")
    fitted_names = ", ".join(f["state"] for f in fits if f["fitted"])
    delivery = view["info"].get("delivery", "unknown")
    table = Platform.model_validate(
        {
            **base.model_dump(),
            "name": name,
            "title": f"{base.title}, exit latencies of {fitted_names} measured by wult"[:200],
            "states": [s.model_dump() for s in states],
            "notes": [
                *base.notes,
                f"Exit-latency distributions of {fitted_names} fitted to {source} (delivery {delivery}); "
                "the table figures the governor sees are the kernel's.",
            ],
        }
    )
    platform_store.create_platform(
        session,
        name=name,
        title=table.title,
        based_on=base_name if base_name in BUILTIN_PLATFORMS else (base_view.based_on or ""),
        states=orjson.dumps([s.model_dump(mode="json") for s in table.states]).decode(),
        table=table.model_dump_json(),
    )
    return table, fits
