"""Sockets with different numbers of online CPUs (`topology.cpus_per_socket`): validation, the
layout the hardware view and the wake-up targets see, and sameness with an even layout."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from engine import SimConfig, simulate
from engine.simulate import _Prepared

from .test_hardware import exact_config


def uneven(counts: list[int], **over: Any) -> SimConfig:
    return exact_config(topology={"sockets": len(counts), "cpus_per_socket": counts}, **over)


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ({"sockets": 2, "cpus_per_socket": [6]}, "topology.cpus_per_socket: 1 count(s) for 2 socket(s)"),
        (
            {"sockets": 2, "cpus_per_socket": [6, 4], "threads_per_core": 2},
            "topology.threads_per_core: cpus_per_socket needs 1, got 2",
        ),
        (
            {"sockets": 2, "cpus_per_socket": [6, 4], "cpus": 11},
            "topology.cpus: 11 CPUs given, but cpus_per_socket [6, 4] sums to 10",
        ),
        (
            {"sockets": 2, "cpus_per_socket": [6, 4], "cores_per_socket": 4},
            "topology.cores_per_socket: must be the largest of cpus_per_socket (6) or unset, got 4",
        ),
    ],
)
def test_an_uneven_layout_that_does_not_add_up_is_refused(topology: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        SimConfig.model_validate({"platform": "skx", "topology": topology})


def test_counts_say_the_cpus_and_the_sockets() -> None:
    config = SimConfig.model_validate({"platform": "skx", "topology": {"cpus_per_socket": [6, 4]}})
    # Unset, the socket count is the number of counts (not skx's 2 by chance: 3 counts, 3 sockets).
    assert (config.n_cpus(), config.topology.sockets, config.threads_per_core()) == (10, 2, 1)
    three = SimConfig.model_validate({"platform": "skx", "topology": {"cpus_per_socket": [2, 3, 1]}})
    assert (three.n_cpus(), three.topology.sockets, three.socket_cpus()) == (6, 3, [2, 3, 1])


def test_each_socket_has_its_own_cores_and_package() -> None:
    """Socket 0: CPUs 0-2, socket 1: CPU 3, busy. Socket 0's three cores sit in core C6 and its
    package in PC2 only (Xeon PC6 waits for every socket); socket 1 never leaves C0."""
    r = simulate(uneven([3, 1], wakeups={**exact_config().wakeups.model_dump(), "busy_cpus": [3]}))
    assert r.cpus == 4 and r.sockets == 2
    assert len(r.hardware.per_core) == 4 and len(r.hardware.per_cpu_busy) == 4
    s0, s1 = r.hardware.sockets
    assert s0.core["CC6"] > 0.9 and s0.package["PC2"] > 0.9 and s0.package["PC6"] == 0.0
    assert s1.core["CC0"] == 1.0 and s1.package["PC0"] == 1.0
    assert r.hardware.per_cpu_busy[3] == 1.0 and max(r.hardware.per_cpu_busy[:3]) < 0.01


def test_same_socket_wakeups_stay_within_the_senders_socket() -> None:
    # Every call from CPU 1 (socket 0 of CPUs 0-2) targets socket 0, never itself; from CPU 3,
    # alone on socket 1, the calls must leave the socket.
    wakeups = {**exact_config().wakeups.model_dump(), "ipis": {"rate_hz": 2000, "same_socket_share": 1.0}}
    run = _Prepared(uneven([3, 1], wakeups=wakeups))
    off, dst = run.snd_off, run.snd_dst
    from_1, from_3 = dst[off[1] : off[2]], dst[off[3] : off[4]]
    assert len(from_1) > 50 and set(from_1.tolist()) == {0, 2}
    assert len(from_3) > 50 and set(from_3.tolist()) == {0, 1, 2}


def test_equal_counts_run_as_the_even_layout() -> None:
    wakeups = {**exact_config().wakeups.model_dump(), "ipis": {"rate_hz": 500, "same_socket_share": 0.7}}
    layout = {"sockets": 2, "cores_per_socket": 3, "threads_per_core": 1}
    even = exact_config(topology=layout, wakeups=wakeups)
    counted = uneven([3, 3], wakeups=wakeups)
    a, b = simulate(even).model_dump(mode="json"), simulate(counted).model_dump(mode="json")
    a.pop("config_hash"), b.pop("config_hash")
    assert a == b


def test_a_platform_of_uneven_sockets_runs_them_when_the_layout_is_left_to_it() -> None:
    part = exact_config().resolve_platform()
    table = part.model_copy(
        update={"topology": part.topology.model_copy(update={"sockets": 2, "cpus_per_socket": [3, 1]})}
    )
    body = {"platform": "exact", "platform_table": table.model_dump(mode="json")}
    assert SimConfig.model_validate(body).socket_cpus() == [3, 1]
    # A layout of the run's own replaces the platform's.
    own = SimConfig.model_validate({**body, "topology": {"sockets": 2, "cores_per_socket": 2}})
    assert own.socket_cpus() == [2 * own.threads_per_core()] * 2


# ------------------------------------------------------------- SMT siblings in an uneven layout


def paired(counts: list[int], threads: list[int], **over: Any) -> SimConfig:
    topology = {"sockets": len(counts), "cpus_per_socket": counts, "threads_per_core_by_socket": threads}
    return exact_config(topology=topology, **over)


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        (
            {"sockets": 2, "cpus_per_socket": [6, 4], "threads_per_core_by_socket": [2]},
            "topology.threads_per_core_by_socket: 1 count(s) for 2 socket(s)",
        ),
        (
            {"sockets": 2, "cpus_per_socket": [6, 3], "threads_per_core_by_socket": [2, 2]},
            "topology.threads_per_core_by_socket: socket 1's 3 CPUs are not whole cores of 2 threads",
        ),
        (
            {
                "sockets": 2,
                "cpus_per_socket": [6, 4],
                "threads_per_core_by_socket": [2, 2],
                "threads_per_core": 1,
            },
            "topology.threads_per_core: must be the largest of threads_per_core_by_socket (2) or unset, "
            "got 1",
        ),
        (
            {
                "sockets": 2,
                "cpus_per_socket": [6, 4],
                "threads_per_core_by_socket": [2, 2],
                "cores_per_socket": 6,
            },
            "topology.cores_per_socket: must be the largest socket's cores (3) or unset, got 6",
        ),
        (
            {"sockets": 2, "cores_per_socket": 3, "threads_per_core_by_socket": [2, 2]},
            "topology.threads_per_core_by_socket: needs cpus_per_socket",
        ),
    ],
)
def test_siblings_that_do_not_make_whole_cores_are_refused(topology: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        SimConfig.model_validate({"platform": "skx", "topology": topology})


def test_siblings_share_a_core_in_each_socket() -> None:
    """Socket 0: 6 CPUs as 3 cores of 2 threads (CPUs k and k + 3, as the even layout numbers
    them), socket 1: 4 single-thread cores."""
    config = paired([6, 4], [2, 1])
    assert (config.socket_cores(), config.cores_per_socket(), config.threads_per_core()) == ([3, 4], 4, 2)
    hw = _Prepared(config).hw
    assert hw.core_of.tolist() == [0, 1, 2, 0, 1, 2, 3, 4, 5, 6]
    assert hw.siblings[:, 0].tolist() == [3, 4, 5, 0, 1, 2, -1, -1, -1, -1]


def test_a_core_reaches_cc6_only_when_all_its_threads_are_idle() -> None:
    """CPU 3, CPU 0's sibling, is busy: core 0 never leaves C0 while cores 1 and 2 sleep in CC6.
    Unpaired (each CPU its own core, as before), CPU 0's core sleeps too."""
    wakeups = {**exact_config().wakeups.model_dump(), "busy_cpus": [3]}
    r = simulate(paired([6, 4], [2, 1], wakeups=wakeups))
    assert len(r.hardware.per_core) == 7 and r.hardware.threads_per_core == 2
    cc0, cc6 = (r.hardware.core_states.index(n) for n in ("CC0", "CC6"))
    core0, core1 = r.hardware.per_core[0], r.hardware.per_core[1]
    assert core0[cc0] == 1.0 and core1[cc6] > 0.9
    assert r.hardware.sockets[0].package["PC0"] == 1.0  # a busy core keeps its package up
    alone = simulate(uneven([6, 4], wakeups=wakeups)).hardware
    assert len(alone.per_core) == 10 and alone.per_core[0][cc6] > 0.9


def test_equal_paired_counts_run_as_the_even_layout() -> None:
    wakeups = {**exact_config().wakeups.model_dump(), "ipis": {"rate_hz": 500, "same_socket_share": 0.7}}
    even = exact_config(
        topology={"sockets": 2, "cores_per_socket": 3, "threads_per_core": 2}, wakeups=wakeups
    )
    a = simulate(even).model_dump(mode="json")
    b = simulate(paired([6, 6], [2, 2], wakeups=wakeups)).model_dump(mode="json")
    a.pop("config_hash"), b.pop("config_hash")
    assert a == b


def cores(counts: list[int], core_threads: list[list[int]], **over: Any) -> SimConfig:
    topology = {"sockets": len(counts), "cpus_per_socket": counts, "core_threads": core_threads}
    return exact_config(topology=topology, **over)


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        (
            {"sockets": 1, "cpus_per_socket": [6], "core_threads": [[2, 2, 1]]},
            "topology.core_threads: socket 0's 3 cores have 5 threads, but cpus_per_socket gives it 6",
        ),
        (
            {"sockets": 2, "cpus_per_socket": [6, 4], "core_threads": [[2, 2, 2]]},
            "topology.core_threads: 1 socket(s) for 2 count(s)",
        ),
        (
            {
                "sockets": 1,
                "cpus_per_socket": [6],
                "core_threads": [[2, 2, 1, 1]],
                "threads_per_core_by_socket": [2],
            },
            "topology.core_threads: give it or threads_per_core_by_socket, not both",
        ),
        (
            {"sockets": 1, "cpus_per_socket": [6], "core_threads": [[2, 2, 1, 1]], "cores_per_socket": 6},
            "topology.cores_per_socket: must be the largest socket's cores (4) or unset, got 6",
        ),
        (
            {"sockets": 1, "cores_per_socket": 4, "core_threads": [[2, 2, 1, 1]]},
            "topology.core_threads: needs cpus_per_socket",
        ),
    ],
)
def test_core_threads_that_do_not_make_the_cpus_are_refused(topology: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        SimConfig.model_validate({"platform": "skx", "topology": topology})


def test_a_hybrid_socket_pairs_only_the_cores_with_two_threads() -> None:
    """Two P-cores of 2 threads and two E-cores of 1 (an Alder Lake in small): CPUs 0-3 are the
    cores' first threads, 4 and 5 the P-cores' second."""
    config = cores([6], [[2, 2, 1, 1]])
    assert (config.socket_cores(), config.threads_per_core(), config.n_cpus()) == ([4], 2, 6)
    hw = _Prepared(config).hw
    assert hw.core_of.tolist() == [0, 1, 2, 3, 0, 1]
    assert hw.siblings[:, 0].tolist() == [4, 5, -1, -1, 0, 1]
    # CPU 4 busy holds P-core 0 in C0; the E-cores sleep in CC6.
    wakeups = {**exact_config().wakeups.model_dump(), "busy_cpus": [4]}
    per_core = simulate(cores([6], [[2, 2, 1, 1]], wakeups=wakeups)).hardware
    cc0, cc6 = (per_core.core_states.index(n) for n in ("CC0", "CC6"))
    assert per_core.per_core[0][cc0] == 1.0 and min(per_core.per_core[k][cc6] for k in (1, 2, 3)) > 0.9


def test_uniform_core_threads_run_as_the_even_layout() -> None:
    wakeups = {**exact_config().wakeups.model_dump(), "ipis": {"rate_hz": 500, "same_socket_share": 0.7}}
    even = exact_config(
        topology={"sockets": 2, "cores_per_socket": 3, "threads_per_core": 2}, wakeups=wakeups
    )
    a = simulate(even).model_dump(mode="json")
    b = simulate(cores([6, 6], [[2, 2, 2], [2, 2, 2]], wakeups=wakeups)).model_dump(mode="json")
    a.pop("config_hash"), b.pop("config_hash")
    assert a == b


def test_a_twin_of_a_machine_whose_cores_differ_runs_single_thread_cores() -> None:
    """The fit's whole-machine layout: an even machine keeps its platform's threads per core; one
    whose sockets or cores differ (cpus_per_socket) gets single-thread cores, as before pairing,
    since its even sockets of whole cores would pair CPUs that are not siblings."""
    from engine.twin.counters import MachineCounters
    from engine.twin.fit import _topology

    measured = MachineCounters(
        states=["POLL"],
        exit_latency_us=[0],
        target_residency_us=[0],
        disabled=[False],
        cpus=list(range(8)),
        values=[[[0]] * 8] * 4,
        package=[0] * 4 + [1] * 4,
    )
    part = exact_config().resolve_platform()
    even = part.model_copy(update={"topology": part.topology.model_copy(update={"threads_per_core": 2})})
    assert _topology(measured, 8, even, True) == {"sockets": 2, "cores_per_socket": 2, "threads_per_core": 2}
    hybrid = even.model_copy(
        update={
            "topology": even.topology.model_copy(
                update={"cpus_per_socket": [4, 4], "core_threads": [[2, 1, 1]] * 2}
            )
        }
    )
    assert _topology(measured, 8, hybrid, True) == {
        "sockets": 2,
        "cores_per_socket": 4,
        "threads_per_core": 1,
    }
