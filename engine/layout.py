"""The checks of an uneven layout (`topology.cpus_per_socket`, `threads_per_core_by_socket`):
sockets with their own CPU counts and SMT threads, the counts the config also gives agreeing."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.config import Topology


def check_uneven_layout(t: Topology) -> None:
    """An uneven layout: one count per socket, whole cores of each socket's threads, the largest
    as cores_per_socket and threads_per_core."""
    counts, by_socket = t.cpus_per_socket, t.threads_per_core_by_socket
    if counts is None:
        for name in ("threads_per_core_by_socket", "core_threads"):
            if getattr(t, name) is not None:
                raise ValueError(f"topology.{name}: needs cpus_per_socket")
        return
    if len(counts) != t.sockets:
        raise ValueError(f"topology.cpus_per_socket: {len(counts)} count(s) for {t.sockets} socket(s)")
    if t.core_threads is not None:
        _check_core_threads(t, counts)
        return
    if by_socket is None:
        if t.threads_per_core not in (None, 1):
            raise ValueError(
                f"topology.threads_per_core: cpus_per_socket needs 1, got {t.threads_per_core} (or give "
                "threads_per_core_by_socket)"
            )
        if t.cores_per_socket not in (None, max(counts)):
            raise ValueError(
                f"topology.cores_per_socket: must be the largest of cpus_per_socket ({max(counts)}) or "
                f"unset, got {t.cores_per_socket}"
            )
        return
    if len(by_socket) != len(counts):
        raise ValueError(
            f"topology.threads_per_core_by_socket: {len(by_socket)} count(s) for {len(counts)} socket(s)"
        )
    for s, (cpus, threads) in enumerate(zip(counts, by_socket, strict=True)):
        if cpus % threads:
            raise ValueError(
                f"topology.threads_per_core_by_socket: socket {s}'s {cpus} CPUs are not whole cores of "
                f"{threads} threads"
            )
    cores = max(c // n for c, n in zip(counts, by_socket, strict=True))
    if t.threads_per_core not in (None, max(by_socket)):
        raise ValueError(
            f"topology.threads_per_core: must be the largest of threads_per_core_by_socket "
            f"({max(by_socket)}) or unset, got {t.threads_per_core}"
        )
    if t.cores_per_socket not in (None, cores):
        raise ValueError(
            f"topology.cores_per_socket: must be the largest socket's cores ({cores}) or unset, "
            f"got {t.cores_per_socket}"
        )


def _check_core_threads(t: Topology, counts: list[int]) -> None:
    """Each socket's cores' threads add up to its CPUs; the largest are the counts given."""
    cores = t.core_threads
    assert cores is not None
    if t.threads_per_core_by_socket is not None:
        raise ValueError("topology.core_threads: give it or threads_per_core_by_socket, not both")
    if len(cores) != len(counts):
        raise ValueError(f"topology.core_threads: {len(cores)} socket(s) for {len(counts)} count(s)")
    for s, (threads, cpus) in enumerate(zip(cores, counts, strict=True)):
        if sum(threads) != cpus:
            raise ValueError(
                f"topology.core_threads: socket {s}'s {len(threads)} cores have {sum(threads)} threads, "
                f"but cpus_per_socket gives it {cpus}"
            )
    most = max(max(c) for c in cores)
    if t.threads_per_core not in (None, most):
        raise ValueError(
            f"topology.threads_per_core: must be the most threads of core_threads ({most}) or unset, "
            f"got {t.threads_per_core}"
        )
    widest = max(len(c) for c in cores)
    if t.cores_per_socket not in (None, widest):
        raise ValueError(
            f"topology.cores_per_socket: must be the largest socket's cores ({widest}) or unset, "
            f"got {t.cores_per_socket}"
        )
