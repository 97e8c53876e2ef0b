"""SimConfig validation, error locations and config_hash (engine/config.py)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import engine
from engine import SimConfig, custom_platform, load_platform
from engine.config import MAX_CPUS, MAX_EXPECTED_EVENTS, config_errors
from engine.platforms import BUILTIN_PLATFORMS, HASH_EXEMPT

from .conftest import exact_state

REPO = Path(engine.__file__).resolve().parent.parent


def errors_for(data: dict[str, Any]) -> list[dict[str, object]]:
    with pytest.raises(ValidationError) as info:
        SimConfig.model_validate(data)
    return config_errors(info.value)


def only_error(data: dict[str, Any]) -> dict[str, object]:
    errs = errors_for(data)
    assert len(errs) == 1, errs
    return errs[0]


# ----------------------------------------------------------------------------------------- valid


def test_default_config_is_valid() -> None:
    assert SimConfig() == SimConfig.model_validate({})
    c = SimConfig()
    assert c.platform == "skx"
    assert c.governor.name == "menu"
    # skx's typical part: 2 sockets x 24 cores x 2 threads.
    assert c.n_cpus() == 96
    assert c.expected_events() <= MAX_EXPECTED_EVENTS


def test_json_round_trip() -> None:
    c = SimConfig.model_validate({"platform": "icx", "governor": {"name": "teo"}, "seed": 7})
    again = SimConfig.model_validate_json(c.model_dump_json())
    assert again == c
    assert again.config_hash() == c.config_hash()


def test_irq_enable_allowed_where_the_kernel_allows_it() -> None:
    # icx C6 has TLB_FLUSHED only (no IBRS): entering it with interrupts on is a legal override.
    SimConfig.model_validate({"platform": "icx", "states": {"irq_enable": {"C6": True, "C1": False}}})
    # Turning IRQ_ENABLE off on skx C1, or keeping C6 off, is always fine.
    SimConfig.model_validate({"states": {"irq_enable": {"C1": False, "C6": False}}})


def test_cpu_lists_within_range_are_valid() -> None:
    SimConfig.model_validate(
        {
            "topology": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1},
            "wakeups": {"timers": [{"cpus": [0, 3]}], "ipis": {"senders": [1], "targets": [2, 3]}},
        }
    )


# ------------------------------------------------------------------------------------ bad inputs


def test_unknown_platform() -> None:
    err = only_error({"platform": "nope"})
    assert err["loc"] == ["platform"]
    # At most 10 names, the closest first, and how many there are.
    assert "nope" in str(err["msg"]) and f"{len(BUILTIN_PLATFORMS)} built-in tables" in str(err["msg"])
    assert "the closest: skx," in str(only_error({"platform": "skxx"})["msg"])


def test_unknown_governor() -> None:
    err = only_error({"governor": {"name": "powersave"}})
    assert err["loc"] == ["governor", "name"]


def test_every_state_disabled() -> None:
    err = only_error({"states": {"disabled": ["POLL", "C1", "C1E", "C6"]}})
    assert err["loc"] == ["states", "disabled"]
    assert "every state is disabled" in str(err["msg"])


@pytest.mark.parametrize(
    ("data", "loc"),
    [
        ({"states": {"disabled": ["C7"]}}, ["states", "disabled"]),
        ({"states": {"irq_enable": {"C3": True}}}, ["states", "irq_enable"]),
        ({"power": {"state_watts": {"C10": 0.1}}}, ["power", "state_watts"]),
        ({"governor": {"name": "fixed", "fixed_state": "C7"}}, ["governor", "fixed_state"]),
    ],
)
def test_unknown_state_names(data: dict[str, Any], loc: list[str]) -> None:
    err = only_error(data)
    assert err["loc"] == loc
    # The message names the bad state and lists the table's.
    assert "unknown state" in str(err["msg"]) and "POLL, C1, C1E, C6" in str(err["msg"])


def test_fixed_state_must_be_enabled() -> None:
    err = only_error({"governor": {"name": "fixed", "fixed_state": "C6"}, "states": {"disabled": ["C6"]}})
    assert err["loc"] == ["governor", "fixed_state"]


def test_irq_enable_on_skx_c6_refused_with_reason() -> None:
    # skx C6 carries CPUIDLE_FLAG_IBRS, which intel_idle never combines with IRQ_ENABLE.
    err = only_error({"states": {"irq_enable": {"C6": True}}})
    assert err["loc"] == ["states", "irq_enable", "C6"]
    assert "IBRS" in str(err["msg"])
    assert "interrupts enabled" in str(err["msg"])


def test_irq_enable_refused_on_init_xstate_state() -> None:
    table = custom_platform(
        "xs",
        [
            exact_state("C1", 1, 1),
            exact_state("C6", 290, 800).model_copy(update={"flags": ["CPUIDLE_FLAG_INIT_XSTATE"]}),
        ],
        based_on=load_platform("icx"),
    )
    with pytest.raises(ValidationError) as info:
        SimConfig(platform="xs", platform_table=table, states={"irq_enable": {"C6": True}})  # type: ignore[arg-type]
    (err,) = config_errors(info.value)
    assert err["loc"] == ["states", "irq_enable", "C6"]
    assert "INIT_XSTATE" in str(err["msg"])


def test_poll_cannot_run_with_interrupts_off() -> None:
    err = only_error({"states": {"irq_enable": {"POLL": False}}})
    assert err["loc"] == ["states", "irq_enable", "POLL"]


def test_zero_cores() -> None:
    err = only_error({"topology": {"cores_per_socket": 0, "threads_per_core": 1}})
    assert err["loc"] == ["topology", "cores_per_socket"]


def test_too_many_cpus() -> None:
    # 8 sockets x 129 cores = 1,032 > 1,024 (DESIGN 7: logical CPUs up to 1,024).
    assert MAX_CPUS == 1024
    err = only_error({"topology": {"sockets": 8, "cores_per_socket": 129, "threads_per_core": 1}})
    assert err["loc"] == ["topology"]
    assert "1032" in str(err["msg"]) and str(MAX_CPUS) in str(err["msg"])
    # 8 x 128 = 1,024 is the limit itself and allowed (with a short run, to stay under the event limit).
    SimConfig.model_validate(
        {"topology": {"sockets": 8, "cores_per_socket": 128, "threads_per_core": 1}, "duration_ms": 5}
    )


def test_four_threads_per_core_allowed_five_refused() -> None:
    config = SimConfig.model_validate(
        {"topology": {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 4}}
    )
    assert config.n_cpus() == 8
    err = only_error({"topology": {"threads_per_core": 5}})
    assert err["loc"] == ["topology", "threads_per_core"]


def test_explicit_cpu_count_must_match_the_layout() -> None:
    ok = {"sockets": 2, "cores_per_socket": 26, "threads_per_core": 2, "cpus": 104}
    assert SimConfig.model_validate({"topology": ok, "duration_ms": 10}).n_cpus() == 104
    err = only_error({"topology": {**ok, "cpus": 96}})
    assert err["loc"] == ["topology", "cpus"]
    assert "96 CPUs given" in str(err["msg"]) and "104" in str(err["msg"])


def test_too_many_expected_events() -> None:
    err = only_error({"duration_ms": 60_000, "wakeups": {"interrupts": {"rate_hz": 1_000_000}}})
    assert err["loc"] == ["duration_ms"]
    assert "events expected" in str(err["msg"])


@pytest.mark.parametrize(
    ("wakeups", "loc"),
    [
        ({"timers": [{"cpus": [0, 4]}]}, ["wakeups", "timers", 0, "cpus"]),
        ({"timers": [{"cpus": "all"}, {"cpus": [9]}]}, ["wakeups", "timers", 1, "cpus"]),
        ({"interrupts": {"cpus": [4]}}, ["wakeups", "interrupts", "cpus"]),
        ({"ipis": {"senders": [7]}}, ["wakeups", "ipis", "senders"]),
        ({"ipis": {"targets": [4]}}, ["wakeups", "ipis", "targets"]),
        ({"sched_wakeups": {"targets": [100]}}, ["wakeups", "sched_wakeups", "targets"]),
    ],
)
def test_cpu_lists_naming_absent_cpus(wakeups: dict[str, Any], loc: list[object]) -> None:
    topology = {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1}
    err = only_error({"topology": topology, "wakeups": wakeups})
    assert err["loc"] == loc
    assert "does not exist" in str(err["msg"]) and "0..3" in str(err["msg"])


def test_empty_cpu_list() -> None:
    err = only_error({"wakeups": {"ipis": {"targets": []}}})
    assert err["loc"] == ["wakeups", "ipis", "targets"]


@pytest.mark.parametrize(
    ("data", "loc"),
    [
        ({"duration_ms": 0}, ["duration_ms"]),
        ({"seed": -1}, ["seed"]),
        ({"wakeups": {"tick": {"hz": 123}}}, ["wakeups", "tick", "hz"]),
        ({"ipi_wakeup": {"mechanism": "carrier-pigeon"}}, ["ipi_wakeup", "mechanism"]),
        ({"states": {"latency_limit_us": -1}}, ["states", "latency_limit_us"]),
        ({"nonsense": 1}, ["nonsense"]),
        ({"wakeups": {"ipis": {"same_socket_share": 1.5}}}, ["wakeups", "ipis", "same_socket_share"]),
    ],
)
def test_field_errors_are_located(data: dict[str, Any], loc: list[str]) -> None:
    assert only_error(data)["loc"] == loc


def test_config_errors_keeps_plain_messages() -> None:
    # Messages carry no "Value error, " prefix and no repeated field path.
    err = only_error({"states": {"disabled": ["C7"]}})
    assert not str(err["msg"]).startswith("Value error")
    assert not str(err["msg"]).startswith("states.disabled")
    assert err["type"] == "value_error"


# ------------------------------------------------------------------------------------ config_hash


def _perturbations() -> dict[str, dict[str, Any]]:
    """One valid change to every leaf field of the default config, keyed by its dotted path."""
    skx = load_platform("skx")
    custom = custom_platform("mine", [exact_state("C1", 2, 2), exact_state("C6", 100, 400)], based_on=skx)
    special: dict[str, Any] = {
        "platform": "icx",
        "platform_table": None,  # handled below (needs the platform name too)
        "governor.name": "teo",
        "governor.fixed_state": "C1",
        "governor.kernel": "v6.6",
        "wakeups.tick.nohz_full": [1],
        "wakeups.tick.rcu_nocbs": [1],
        "wakeups.timers.0.kind": "timer_wheel",
        "states.disabled": ["C6"],
        "states.irq_enable": {"C1E": True},
        "states.latency_limit_us": 20.0,
        "wakeups.tick.hz": 250,
        "wakeups.timers": [{"period_us": 4000.0}, {"period_us": 250.0}],
        "wakeups.timers.0.cpus": [0],
        "wakeups.interrupts.work_distribution": "fixed",
        "wakeups.interrupts.cpus": [0],
        "wakeups.ipis.senders": [0],
        "wakeups.ipis.targets": [1],
        "wakeups.sched_wakeups.work_distribution": "fixed",
        "wakeups.sched_wakeups.senders": [0],
        "wakeups.sched_wakeups.targets": [1],
        "ipi_wakeup.mechanism": "ipi",
        "power.state_watts": {"C6": 0.05},
        "power.uncore_watts": {"PC6": 3.0},
        "topology.cores_per_socket": 4,
        "topology.threads_per_core": 1,
        "wakeups.busy_cpus": [3],
        "package.limit": "PC2",
    }
    base = SimConfig().model_dump(mode="json")
    out: dict[str, dict[str, Any]] = {}

    def walk(node: Any, path: list[Any]) -> None:
        dotted = ".".join(map(str, path))
        if isinstance(node, dict) and dotted not in special and dotted not in DICT_VALUED:
            for key, value in node.items():
                walk(value, [*path, key])
            return
        if isinstance(node, list) and node and isinstance(node[0], dict):
            # A list of sources: change the list itself, and each field of its first item.
            walk(node[0], [*path, 0])
        if dotted in special:
            new = special[dotted]
        elif isinstance(node, bool):
            new = not node
        elif isinstance(node, int):
            new = node + 1 if node < 2 else node - 1
        elif isinstance(node, float):
            new = node / 2
        elif node is None:
            new = 1.0  # the cost overrides (None = keep the platform's)
        else:
            raise AssertionError(f"no perturbation rule for {dotted} = {node!r}")
        data = copy.deepcopy(base)
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = new
        if dotted == "governor.fixed_state":  # only the fixed governor takes a state
            data["governor"]["name"] = "fixed"
        out[dotted] = data

    walk(base, [])
    # A custom table under its own name.
    data = copy.deepcopy(base)
    data["platform"] = "mine"
    data["platform_table"] = custom.model_dump(mode="json")
    out["platform_table"] = data
    return out


# Dict-valued fields that are values in their own right, not sections.
DICT_VALUED = {"states.irq_enable", "power.state_watts", "power.uncore_watts"}


def test_config_hash_is_stable() -> None:
    a = SimConfig()
    assert a.config_hash() == SimConfig().config_hash()
    assert len(a.config_hash()) == 64
    # Key order in the input does not matter.
    d1 = {"seed": 3, "platform": "wsm", "governor": {"name": "ladder"}}
    d2 = {"governor": {"name": "ladder"}, "platform": "wsm", "seed": 3}
    assert SimConfig.model_validate(d1).config_hash() == SimConfig.model_validate(d2).config_hash()


@pytest.mark.parametrize("name", ["skx", "icx", "wsm"])
def test_config_hash_is_of_the_canonical_json(name: str) -> None:
    # SHA-256 of the config's JSON with sorted keys and the resolved table in it (less the fields
    # that describe the table rather than feed the model), whichever way the hash is computed.
    named = SimConfig(platform=name)
    data = named.model_dump(mode="json")
    data["platform_table"] = load_platform(name).model_dump(mode="json", exclude=HASH_EXEMPT)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    assert named.config_hash() == hashlib.sha256(blob).hexdigest()
    data["platform_table"] = load_platform(name).model_dump(mode="json")
    assert SimConfig.model_validate(data).config_hash() == named.config_hash()


def test_config_hash_ignores_facts_about_the_table_but_not_its_figures() -> None:
    skx = load_platform("skx")
    base = SimConfig(platform="skx", platform_table=skx).config_hash()
    facts = skx.model_copy(update={"cpu_models": [], "kernel_table": "x", "modelled_on": "y"})
    assert SimConfig(platform="skx", platform_table=facts).config_hash() == base
    states = [s.model_copy(update={"source": "elsewhere"}) for s in skx.states]
    assert (
        SimConfig(platform="skx", platform_table=skx.model_copy(update={"states": states})).config_hash()
        == base
    )
    states[3] = states[3].model_copy(update={"target_residency_us": 601.0})
    assert (
        SimConfig(platform="skx", platform_table=skx.model_copy(update={"states": states})).config_hash()
        != base
    )


def test_config_hash_is_stable_across_processes() -> None:
    # The hash must not depend on the process (PYTHONHASHSEED, dict order): runs are looked up by it.
    code = "from engine import SimConfig; print(SimConfig().config_hash())"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, check=True
    )
    assert out.stdout.strip() == SimConfig().config_hash()


def test_config_hash_covers_the_resolved_table() -> None:
    # The built-in table's contents are part of the hash, so naming it or embedding it agree.
    skx = load_platform("skx")
    assert SimConfig(platform_table=skx).config_hash() == SimConfig().config_hash()
    # A custom table with one number changed hashes differently.
    t1 = custom_platform("mine", [exact_state("C1", 2, 2), exact_state("C6", 100, 400)], based_on=skx)
    t2 = custom_platform("mine", [exact_state("C1", 2, 2), exact_state("C6", 100, 401)], based_on=skx)
    h1 = SimConfig(platform="mine", platform_table=t1).config_hash()
    h2 = SimConfig(platform="mine", platform_table=t2).config_hash()
    assert h1 != h2


def test_config_hash_is_sensitive_to_every_field() -> None:
    variants = _perturbations()
    # Every leaf of the default config has a variant (a field of a new type fails in _perturbations).
    for path in (
        "seed",
        "wakeups.timers.0.work_us",
        "costs.tsc_mhz",
        "output.timeline_ms",
        "wakeups.tick.nohz",
    ):
        assert path in variants
    base_hash = SimConfig().config_hash()
    seen = {base_hash: "<default>"}
    for path, data in variants.items():
        try:
            cfg = SimConfig.model_validate(data)
        except ValidationError as exc:  # pragma: no cover - a rule above produced an invalid value
            raise AssertionError(f"perturbation of {path} is invalid: {config_errors(exc)}") from exc
        h = cfg.config_hash()
        assert h not in seen, f"changing {path} gives the same hash as {seen.get(h)}"
        seen[h] = path


def test_config_hash_ignores_nothing_in_json() -> None:
    # Equal hashes imply equal canonical JSON: two configs that dump differently hash differently.
    a = SimConfig.model_validate({"wakeups": {"timers": []}})
    b = SimConfig.model_validate({"wakeups": {"timers": [{"period_us": 4000.0}]}})
    assert json.loads(a.model_dump_json()) != json.loads(b.model_dump_json())
    assert a.config_hash() != b.config_hash()
