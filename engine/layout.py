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
        if by_socket is not None:
            raise ValueError("topology.threads_per_core_by_socket: needs cpus_per_socket")
        return
    if len(counts) != t.sockets:
        raise ValueError(f"topology.cpus_per_socket: {len(counts)} count(s) for {t.sockets} socket(s)")
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
