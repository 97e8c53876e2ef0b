"""The new-run form: its sections and fields, built from `SimConfig`'s own descriptions and limits
(static/js/run_new.js turns the filled form back into a config)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from app import charts
from app.core import dotted
from app.core.web import fmt_num
from app.platforms.service import COST_LABELS
from engine.config import GovernorName, Mechanism, SimConfig
from engine.governors import GOVERNOR_KERNEL, releases
from engine.platforms import CostModel


@dataclass
class FormField:
    path: str
    label: str
    type: str  # see static/js/run_new.js
    unit: str = ""
    options: Sequence[tuple[str, str]] = ()
    hint: str = ""
    cost: str = ""  # the platform cost this field overrides (the input hint shows its value)
    width: str = ""


@dataclass
class FormSection:
    title: str
    fields: list[FormField] = field(default_factory=list)
    note: str = ""
    id: str = ""
    # Folded behind a disclosure: the first screen keeps platform, governor, states and load.
    folded: bool = False


def describe(path: str) -> str:
    """The pydantic description of a SimConfig field, for the form's hint text."""
    info = dotted.field(SimConfig, path)
    return (info.description or "") if info else ""


def limits(path: str) -> str:
    info = dotted.field(SimConfig, path)
    lo = hi = None
    for meta in info.metadata if info else ():
        lo = getattr(meta, "ge", None) if getattr(meta, "ge", None) is not None else lo
        lo = getattr(meta, "gt", None) if getattr(meta, "gt", None) is not None else lo
        hi = getattr(meta, "le", None) if getattr(meta, "le", None) is not None else hi
    if lo is None and hi is None:
        return ""
    return f"{fmt_num(lo) if lo is not None else ''}..{fmt_num(hi) if hi is not None else ''}"


_CPUS_HINT = '"all", or CPU numbers and ranges: 0,2,4-7'


def form_sections(platform_names: Sequence[str]) -> list[FormSection]:
    gov_opts = [(g, f"{g}: {GOVERNOR_KERNEL.get(g, '')}") for g in get_args(GovernorName)]
    mech_opts = [(m, f"{m}: {charts.MECHANISM_NAMES.get(m, m)}") for m in get_args(Mechanism)]
    dist = [("exponential", "exponential"), ("fixed", "fixed")]
    costs = [
        FormField(f"costs.{key}", label, "float?", unit, cost=key, hint=describe(f"costs.{key}"))
        for key, (label, unit) in COST_LABELS.items()
    ]
    return [
        FormSection(
            "Run",
            [
                FormField("title", "Title", "str", hint="Shown on the run page and in lists.", width="wide"),
                FormField("platform", "Platform", "select", options=[(p, p) for p in platform_names]),
                FormField("duration_ms", "Simulated time", "float", "ms"),
                FormField("seed", "Seed", "int", hint="Same config and seed, same result."),
                FormField(
                    "repeats", "Repeats", "int",
                    hint="1 to 50 (blank: 1): seeds derived from the seed; compare gives verdicts from 3.",
                ),  # fmt: skip
                FormField("unlisted", "Unlisted (only the link finds it)", "bool"),
            ],
        ),
        FormSection(
            "Topology",
            [
                FormField("topology.sockets", "Sockets", "int"),
                FormField(
                    "topology.cores_per_socket",
                    "Cores per socket",
                    "int?",
                    hint="Blank: the platform's part.",
                ),
                FormField(
                    "topology.threads_per_core",
                    "SMT threads per core",
                    "int?",
                    hint="Blank: the platform's (2). CPU s*C*T + t*C + k is thread t of core k on socket s.",
                ),
                FormField(
                    "topology.cores_per_module",
                    "Cores per module",
                    "int?",
                    hint="Blank: the platform's. Cores sharing an L2 (Sierra Forest's module states).",
                ),
                FormField(
                    "topology.cpus",
                    "Online CPUs",
                    "int?",
                    hint="Blank: sockets x cores x threads. A machine's online CPUs, checked against it.",
                ),
                FormField(
                    "topology.cpus_per_socket",
                    "Online CPUs per socket",
                    "int-list?",
                    hint="Blank: even sockets. An uneven machine's CPUs per socket (52,42), one core each "
                    "unless the next field pairs them.",
                ),
                FormField(
                    "topology.threads_per_core_by_socket",
                    "Threads per core, by socket",
                    "int-list?",
                    hint="Blank: 1. With CPUs per socket: each socket's SMT threads per core (2,2: 26 and 21 "
                    "cores).",
                ),
                FormField(
                    "package.limit",
                    "Package C-state limit (BIOS)",
                    "select",
                    options=[(p, p) for p in ("PC6", "PC2", "PC3", "PC0")],
                    hint=describe("package.limit"),
                ),
                FormField(
                    "package.snoop_rate_hz",
                    "Traffic out of the deepest package state",
                    "float?",
                    "Hz",
                    hint=describe("package.snoop_rate_hz"),
                ),
                FormField(
                    "hardware.c1e_promotion",
                    "C1E promotion (hardware turns C1 into C1E)",
                    "bool",
                    hint=describe("hardware.c1e_promotion"),
                ),
                FormField(
                    "hardware.c1_demotion",
                    "C1 demotion (firmware keeps deep requests in core C1; estimate)",
                    "bool",
                    hint=describe("hardware.c1_demotion"),
                ),
                FormField(
                    "wakeups.busy_cpus",
                    "CPUs running a CPU-bound task",
                    "cpu-list",
                    hint="Blank: none. " + _CPUS_HINT.split(", or ")[1],
                ),
            ],
            folded=True,
        ),
        FormSection(
            "Governor",
            [
                FormField("governor.name", "cpuidle governor", "select", options=gov_opts),
                FormField("governor.fixed_state", "State for the fixed governor", "select?", options=[]),
                FormField(
                    "governor.kernel",
                    "Kernel release or commit the governor follows (blank: the newest modelled)",
                    "select?",
                    # menu and teo accept the same names (a commit names the whole tree).
                    options=[("", "")] + [(k, k) for k in releases.known_names("menu")],
                ),
            ],
        ),
        FormSection(
            "C-states",
            [FormField("states.latency_limit_us", "PM QoS CPU latency limit", "float?", "us")],
            note="Per-state switches follow the platform's table: disable a state as sysfs `disable` does, "
            "override CPUIDLE_FLAG_IRQ_ENABLE, or set the state's power (an estimate).",
            id="states",
        ),
        FormSection(
            "Scheduler tick",
            [
                FormField(
                    "wakeups.tick.hz", "HZ", "int", options=[(str(h), str(h)) for h in (100, 250, 300, 1000)]
                ),
                FormField("wakeups.tick.nohz", "NO_HZ_IDLE (governor may stop the tick)", "bool"),
                FormField(
                    "wakeups.tick.highres", "High-resolution timers (hrtimers do not keep the tick)", "bool"
                ),
                FormField("wakeups.tick.nohz_full", "nohz_full CPUs", "cpu-list", hint="Blank: none."),
                FormField(
                    "wakeups.tick.rcu_grace_period_us",
                    "RCU callbacks keep the tick for (a guess)",
                    "float?",
                    "us",
                    hint="Blank: off. A CPU that queued callbacks keeps its tick so long (rcu_needs_cpu()).",
                ),
                FormField("wakeups.tick.rcu_nocbs", "rcu_nocbs CPUs", "cpu-list", hint="Blank: none."),
                FormField("wakeups.tick.handler_us", "Tick handler time (estimate)", "float", "us"),
            ],
            folded=True,
        ),
        FormSection("Periodic timers (cyclictest-like)", [], id="timers", folded=True),
        FormSection(
            "Device interrupts (Poisson, per CPU; not visible to the governor)",
            [
                FormField("wakeups.interrupts.rate_hz", "Rate per CPU", "float", "Hz"),
                FormField("wakeups.interrupts.handler_us", "Handler time", "float", "us"),
                FormField("wakeups.interrupts.work_us", "Work after the interrupt", "float", "us"),
                FormField(
                    "wakeups.interrupts.work_distribution", "Work distribution", "select", options=dist
                ),
                FormField("wakeups.interrupts.cpus", "CPUs", "cpus", hint=_CPUS_HINT),
            ],
        ),
        FormSection(
            "IPIs: no-wait smp_call_function_single()",
            [
                FormField("wakeups.ipis.rate_hz", "Rate per sender", "float", "Hz"),
                FormField("wakeups.ipis.same_socket_share", "Share to the same socket", "float", "0..1"),
                FormField("wakeups.ipis.function_us", "Function run time", "float", "us"),
                FormField("wakeups.ipis.senders", "Senders", "cpus", hint=_CPUS_HINT),
                FormField("wakeups.ipis.targets", "Targets", "cpus", hint=_CPUS_HINT),
            ],
        ),
        FormSection(
            "Scheduler wake-ups (try_to_wake_up on another CPU)",
            [
                FormField("wakeups.sched_wakeups.rate_hz", "Rate per sender", "float", "Hz"),
                FormField(
                    "wakeups.sched_wakeups.same_socket_share", "Share to the same socket", "float", "0..1"
                ),
                FormField("wakeups.sched_wakeups.work_us", "Task run time", "float", "us"),
                FormField(
                    "wakeups.sched_wakeups.work_distribution", "Run-time distribution", "select", options=dist
                ),
                FormField("wakeups.sched_wakeups.senders", "Senders", "cpus", hint=_CPUS_HINT),
                FormField("wakeups.sched_wakeups.targets", "Targets", "cpus", hint=_CPUS_HINT),
            ],
            folded=True,
        ),
        FormSection(
            "IPI wake-up mechanism",
            [
                FormField("ipi_wakeup.mechanism", "Mechanism", "select", options=mech_opts),
                FormField("ipi_wakeup.read_before_cmpxchg", "mwait_rfc: read before cmpxchg", "bool"),
                FormField(
                    "ipi_wakeup.irqs_off_across_wake", "mwait_rfc: IRQs off from WAKING to WOKENUP", "bool"
                ),
            ],
        ),
        FormSection(
            "Cost model overrides",
            costs,
            note="Blank keeps the platform's value (shown greyed, with its kind). Values marked "
            "estimate are guesses until someone publishes better.",
            folded=True,
        ),
        FormSection(
            "Power (estimates)",
            [
                FormField("power.busy_watts", "Busy (C0) power per core", "float?", "W"),
                *(
                    FormField(f"power.uncore_watts.{p}", f"Uncore power in {p}", "float-omit", "W")
                    for p in ("PC0", "PC2", "PC3", "PC6")
                ),
            ],
            note="All power figures are labelled estimates; per-state (core) power is in the C-states table "
            "above; uncore power is per package and package C-state (blank keeps the platform's).",
            folded=True,
        ),
        FormSection(
            "Output",
            [
                FormField("output.timeline_cpus", "Timeline CPUs", "int"),
                FormField("output.timeline_ms", "Timeline length", "float", "ms"),
            ],
            folded=True,
        ),
    ]


TIMER_FIELDS = [
    FormField("wakeups.timers.#.period_us", "Period", "float", "us"),
    FormField(
        "wakeups.timers.#.kind",
        "Kind",
        "select",
        options=[("hrtimer", "hrtimer"), ("timer_wheel", "timer wheel")],
    ),
    FormField("wakeups.timers.#.cpus", "CPUs", "cpus", hint=_CPUS_HINT),
    FormField("wakeups.timers.#.handler_us", "hrtimer handler (estimate)", "float", "us"),
    FormField("wakeups.timers.#.work_us", "Thread work per expiry", "float", "us"),
]


def form_value(data: Mapping[str, Any], f: FormField) -> Any:
    value = dotted.get(data, f.path)
    if f.type == "cpus":
        return ",".join(str(c) for c in value) if isinstance(value, list) else (value or "all")
    if f.type == "cpu-list":
        return ",".join(str(c) for c in value or [])
    if f.type == "bool":
        return bool(value)
    return "" if value is None else value


def _costs_shown(costs: Mapping[str, Any]) -> dict[str, Any]:
    """The table's costs with the estimates of those it leaves unset (the LLC hit) filled in."""
    if "llc_hit_ns" in costs or "line_same_socket_ns" not in costs:
        return dict(costs)
    return {**costs, "llc_hit_ns": CostModel.model_validate(costs).llc_hit().model_dump()}


def platform_form_data(platforms: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What run_new.js needs to rebuild the per-state rows when the platform changes."""
    out = {}
    for p in platforms:
        table = p["table"]
        out[table["name"]] = {
            "title": table.get("title", ""),
            "states": [
                {
                    "name": s["name"],
                    "flags": s.get("flags", []),
                    "irq_enable": "CPUIDLE_FLAG_POLLING" in s.get("flags", [])
                    or "CPUIDLE_FLAG_IRQ_ENABLE" in s.get("flags", []),
                    "power_watts": s.get("power_watts") or {"value": 1.0, "kind": "estimate"},
                }
                for s in table["states"]
            ],
            "costs": _costs_shown(table.get("costs", {})),
            "busy_watts": table.get("busy_watts") or {"value": 5.0, "kind": "estimate"},
            "topology": table.get("topology", {}),
        }
    return out


def merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out
