"""Random streams: one per CPU and per source, and the arrival streams drawn from them.

Every (CPU, source) pair has its own xorshift64 generator. CPU c's seeds are the first
N_SOURCES words of child c of `numpy.random.SeedSequence(seed).spawn(...)`: a child depends
only on the seed and its index, so a CPU's streams do not depend on how many CPUs there are.
Arrivals are drawn in compiled code: a 56-CPU second has ~10^5 of them, and per-CPU numpy
generators cost more to build than to run.
"""

from __future__ import annotations

import math

import numpy as np

from engine.jit import compiled

SRC_IRQ, SRC_CALLS, SRC_SCHED, SRC_TIMERS, SRC_KERNEL = 0, 1, 2, 3, 4
N_SOURCES = 5


def stream_seeds(seed: int, n_cpus: int) -> np.ndarray:
    """The generators' starting states, shape (n_cpus, N_SOURCES); never zero (xorshift's fixed point)."""
    children = np.random.SeedSequence(seed).spawn(n_cpus)
    words = np.array([child.generate_state(N_SOURCES, np.uint64) for child in children], dtype=np.uint64)
    return (words | np.uint64(1)).reshape(n_cpus, N_SOURCES)


@compiled(inline=True)
def uniform(state: np.ndarray, i: int) -> float:
    """Generator i's next draw in [0, 1), from the top 53 bits of xorshift64 (shifts only, so the
    pure-Python run needs no overflow handling)."""
    x = state[i]
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    state[i] = x
    return float(x >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@compiled(inline=True)
def exponential(state: np.ndarray, i: int, mean: float) -> float:
    return -mean * math.log(1.0 - uniform(state, i))


# Acklam's rational approximation of the standard normal quantile (relative error < 1.2e-9):
# one uniform per draw and, for 95% of draws, no transcendental function at all.
_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
      -3.066479806614716e01, 2.506628277459239e00)
_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
      -1.328068155288572e01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
      4.374664141464968e00, 2.938163982698783e00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
_P_LOW = 0.02425


@compiled(inline=True)
def standard_normal(state: np.ndarray, i: int) -> float:
    """A standard normal draw: the quantile of a uniform in (0, 1) (inverse transform)."""
    p = uniform(state, i) + 0.5 / 9007199254740992.0
    if p < _P_LOW or p > 1.0 - _P_LOW:
        q = math.sqrt(-2.0 * math.log(min(p, 1.0 - p)))
        z = (((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]) / (
            (((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0
        )
        return z if p < _P_LOW else -z
    q = p - 0.5
    r = q * q
    return (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q / (
        ((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0
    )


@compiled()
def _fill(
    state: np.ndarray,
    rate_hz: np.ndarray,
    t_end: int,
    cap_off: np.ndarray,
    times: np.ndarray,
    dst: np.ndarray,
    count: np.ndarray,
    cores: int,
    same_share: float,
    targets: np.ndarray,
    socket_off: np.ndarray,
) -> bool:
    """Poisson arrivals per CPU into times[cap_off[c]:cap_off[c + 1]]; False when a CPU's room runs out.

    With `targets` (sorted; socket k's are targets[socket_off[k]:socket_off[k + 1]]) each arrival is
    a request and also gets a target: the sender's socket with probability same_share, never the
    sender itself, uniformly within the side chosen. Every request takes the same three draws
    whatever the topology, so a sender's request times do not depend on it.
    """
    with_targets = targets.shape[0] > 0
    for c in range(state.shape[0]):
        count[c] = 0
        if rate_hz[c] <= 0.0:
            continue
        lo = hi = me = 0
        n_same = n_other = 0
        if with_targets:
            sk = c // cores
            lo = socket_off[sk]
            hi = socket_off[sk + 1]
            me = hi
            for j in range(lo, hi):
                if targets[j] == c:
                    me = j
            n_same = hi - lo - (1 if me < hi else 0)
            n_other = targets.shape[0] - (hi - lo)
            if n_same == 0 and n_other == 0:
                continue
        mean_gap = 1e9 / rate_hz[c]
        t = exponential(state, c, mean_gap)
        while t < t_end:
            k = cap_off[c] + count[c]
            if k >= cap_off[c + 1]:
                return False
            times[k] = int(t)
            count[c] += 1
            if with_targets:
                pick_same = uniform(state, c) < same_share
                u = uniform(state, c)
                if n_other == 0:
                    pick_same = True
                elif n_same == 0:
                    pick_same = False
                if pick_same:
                    j = lo + min(int(u * n_same), n_same - 1)
                    if j >= me:
                        j += 1
                else:
                    j = min(int(u * n_other), n_other - 1)
                    if j >= lo:
                        j += hi - lo
                dst[k] = targets[j]
            t += exponential(state, c, mean_gap)
    return True


@compiled()
def _compact(
    src: np.ndarray, cap_off: np.ndarray, count: np.ndarray, out: np.ndarray, off: np.ndarray
) -> None:
    for c in range(count.shape[0]):
        for k in range(count[c]):
            out[off[c] + k] = src[cap_off[c] + k]


def offsets(sizes: np.ndarray) -> np.ndarray:
    """Start of each of `sizes` consecutive blocks, and the end of the last."""
    off = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    return off


def arrival_streams(
    seeds: np.ndarray,
    rate_hz: np.ndarray,
    t_end: int,
    cores: int = 1,
    same_share: float = 0.0,
    targets: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Poisson arrivals in [0, t_end) for every CPU (rate_hz[c], generator seeds[c]).

    Returns all CPUs' times back to back (int ns), their targets when `targets` is given (see
    `_fill`; else all -1), and each CPU's offset into both.
    """
    n = len(rate_hz)
    rate_hz = np.asarray(rate_hz, dtype=np.float64)
    tgt = np.empty(0, dtype=np.int64) if targets is None else np.unique(targets).astype(np.int64)
    socket_off = np.searchsorted(tgt // cores, np.arange(n // cores + 2)).astype(np.int64)
    expected = rate_hz * t_end / 1e9
    caps = np.where(rate_hz > 0, expected + 8.0 * np.sqrt(expected) + 32.0, 0).astype(np.int64)  # mean + 8 sd
    while True:
        cap_off = offsets(caps)
        times = np.empty(int(cap_off[-1]), dtype=np.int64)
        dst = np.full(len(times), -1, dtype=np.int64)
        count = np.zeros(n, dtype=np.int64)
        state = seeds.copy()
        if _fill(state, rate_hz, t_end, cap_off, times, dst, count, cores, same_share, tgt, socket_off):
            break
        caps *= 2
    off = offsets(count)
    out_t = np.empty(int(off[-1]), dtype=np.int64)
    out_d = np.empty(int(off[-1]), dtype=np.int64)
    _compact(times, cap_off, count, out_t, off)
    _compact(dst, cap_off, count, out_d, off)
    return out_t, out_d, off


@compiled()
def _fill_uniform(state: np.ndarray, out: np.ndarray) -> None:
    for i in range(out.shape[0]):
        for k in range(out.shape[1]):
            out[i, k] = uniform(state, i)


def first_uniforms(seeds: np.ndarray, k: int) -> np.ndarray:
    """Row i: the first k draws of generator seeds[i]."""
    out = np.empty((len(seeds), k))
    _fill_uniform(seeds.copy(), out)
    return out
