"""Random streams: one per CPU and per source, and the arrival streams drawn from them.

Every (CPU, source) pair has its own xorshift64 generator. CPU c's seeds are the first
N_SOURCES words of child c of `numpy.random.SeedSequence(seed).spawn(...)` (computed here in
compiled code, word for word): a child depends only on the seed and its index, so a CPU's
streams do not depend on how many CPUs there are. Arrivals are drawn in compiled code too: a
56-CPU second has ~10^5 of them, and per-CPU numpy generators cost more to build than to run.
"""

from __future__ import annotations

import math

import numpy as np

from engine.jit import compiled

SRC_IRQ, SRC_CALLS, SRC_SCHED, SRC_TIMERS, SRC_KERNEL = 0, 1, 2, 3, 4
N_SOURCES = 5


def stream_seeds(seed: int, n_cpus: int, n_sources: int = N_SOURCES) -> np.ndarray:
    """The generators' starting states, shape (n_cpus, n_sources); never zero (xorshift's fixed point).

    Row c is `SeedSequence(seed).spawn(n_cpus)[c].generate_state(n_sources, np.uint64) | 1`,
    computed in compiled code (numpy's SeedSequence objects took ~0.7 ms for 56 CPUs). A state's
    words come out one after the other, so asking for more sources leaves the first ones as
    they were (engine.load takes its streams after the N_SOURCES of the kernel's sources).
    """
    words = [0] * _POOL_SIZE  # the seed as 32-bit words, low first, padded to the pool size
    for i in range(_POOL_SIZE):
        words[i] = (seed >> (32 * i)) & _MASK32
    if seed >> (32 * _POOL_SIZE):
        raise ValueError("seed must be below 2**128")
    out = np.empty((n_cpus, n_sources), dtype=np.uint64)
    _spawned_states(np.array(words + [0], dtype=np.int64), np.zeros(_POOL_SIZE, dtype=np.int64), out)
    return out | np.uint64(1)


# numpy.random.SeedSequence (numpy/random/bit_generator.pyx). Its 32-bit arithmetic is done on
# int64 and masked: the low 32 bits of a product do not depend on the wrap-around above them.
_POOL_SIZE = 4
_MASK32 = 0xFFFFFFFF
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715


@compiled(inline=True)
def _hashmix(value: int, hash_const: int) -> tuple[int, int]:
    value ^= hash_const
    hash_const = (hash_const * _MULT_A) & _MASK32
    value = (value * hash_const) & _MASK32
    return value ^ (value >> 16), hash_const


@compiled(inline=True)
def _mix(x: int, y: int) -> int:
    r = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _MASK32
    return r ^ (r >> 16)


@compiled()
def _spawned_states(entropy: np.ndarray, pool: np.ndarray, out: np.ndarray) -> None:
    """out[c] = generate_state(out.shape[1], uint64) of child c of SeedSequence(seed).

    `entropy` holds the seed's words and room for the spawn key (c,); `pool` is scratch.
    """
    for c in range(out.shape[0]):
        entropy[_POOL_SIZE] = c
        h = _INIT_A
        for i in range(_POOL_SIZE):
            pool[i], h = _hashmix(int(entropy[i]), h)
        for i_src in range(_POOL_SIZE):
            for i_dst in range(_POOL_SIZE):
                if i_src != i_dst:
                    v, h = _hashmix(int(pool[i_src]), h)
                    pool[i_dst] = _mix(int(pool[i_dst]), v)
        for i_dst in range(_POOL_SIZE):  # the entropy words beyond the pool: the spawn key
            v, h = _hashmix(int(entropy[_POOL_SIZE]), h)
            pool[i_dst] = _mix(int(pool[i_dst]), v)
        h = _INIT_B
        for k in range(out.shape[1]):  # two 32-bit words per uint64, the low one first
            low = 0
            high = 0
            for half in range(2):
                v = int(pool[(2 * k + half) % _POOL_SIZE]) ^ h
                h = (h * _MULT_B) & _MASK32
                v = (v * h) & _MASK32
                if half == 0:
                    low = v ^ (v >> 16)
                else:
                    high = v ^ (v >> 16)
            out[c, k] = (high << 32) | low


@compiled(inline=True)
def uniform(state: np.ndarray, i: int) -> float:
    """Generator i's next draw in [0, 1), from the top 53 bits of its next word."""
    return float(_next(state, i) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@compiled(inline=True)
def _next(state: np.ndarray, i: int) -> np.uint64:
    """Generator i's next 64-bit word (xorshift64, shifts only, so the pure-Python run needs no
    overflow handling)."""
    x = state[i]
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    state[i] = x
    return x


def _exponential_ziggurat() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Marsaglia and Tsang's 256-layer ziggurat for the standard exponential, on 53-bit integers
    ("The Ziggurat Method for Generating Random Variables", J. Stat. Softw. 5(8), 2000).

    Returns (k, w, f): a draw j in layer i is accepted at once when j < k[i] and is then j * w[i];
    f[i] = exp(-x_i) at the layer's right edge.
    """
    m = float(1 << 53)
    de, ve = 7.697117470131487, 3.949659822581572e-3  # the base layer's edge and every layer's area
    k, w, f = np.zeros(256), np.zeros(256), np.zeros(256)
    q = ve / math.exp(-de)
    k[0], w[0], w[255] = (de / q) * m, q / m, de / m
    f[0], f[255] = 1.0, math.exp(-de)
    te = de
    for i in range(254, 0, -1):
        de = -math.log(ve / de + math.exp(-de))
        k[i + 1] = (de / te) * m
        te = de
        f[i] = math.exp(-de)
        w[i] = de / m
    return k, w, f


ZIG_R = 7.697117470131487
ZIG_K, ZIG_W, ZIG_F = _exponential_ziggurat()


@compiled(inline=True)
def standard_exponential(state: np.ndarray, i: int) -> float:
    """A standard exponential draw by the ziggurat: one word and no logarithm for ~99% of draws.

    The word's top 8 bits pick the layer and 53 of the others are the draw within it.
    """
    while True:
        x = _next(state, i)
        layer = int(x >> np.uint64(56))
        j = float((x >> np.uint64(3)) & np.uint64((1 << 53) - 1))
        if j < ZIG_K[layer]:
            return j * ZIG_W[layer]
        if layer == 0:
            return ZIG_R - math.log(1.0 - uniform(state, i))  # the tail beyond the base layer
        v = j * ZIG_W[layer]
        if ZIG_F[layer] + uniform(state, i) * (ZIG_F[layer - 1] - ZIG_F[layer]) < math.exp(-v):
            return v


@compiled(inline=True)
def exponential(state: np.ndarray, i: int, mean: float) -> float:
    return mean * standard_exponential(state, i)


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
def normal_quantile(p: float) -> float:
    """Phi^-1(p) for p in (0, 1) (Acklam)."""
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


# A log-normal draw reads its quantile function from a table of QUANTILE_STEPS steps and
# interpolates linearly between them, except in the QUANTILE_TAIL outer steps at each end, where
# it is computed. The median (step QUANTILE_STEPS / 2) is exact, and so is everything beyond
# 1 - QUANTILE_TAIL / QUANTILE_STEPS (0.969), the 99.99th percentile included; in between, the
# interpolation is within 1e-3 sigma of the exact quantile.
QUANTILE_STEPS = 256
QUANTILE_TAIL = 8


@compiled()
def lognormal_table(median: np.ndarray, sigma: np.ndarray, out: np.ndarray) -> None:
    """out[s, k] = median[s] * exp(sigma[s] * Phi^-1(k / QUANTILE_STEPS)) for 0 < k < QUANTILE_STEPS."""
    for s in range(median.shape[0]):
        out[s, 0] = out[s, QUANTILE_STEPS] = median[s]  # not read: the tails are computed
        for k in range(1, QUANTILE_STEPS):
            out[s, k] = median[s] * math.exp(sigma[s] * normal_quantile(k / QUANTILE_STEPS))


@compiled(inline=True)
def lognormal(state: np.ndarray, i: int, table: np.ndarray, s: int, median: float, sigma: float) -> float:
    """A draw of median * exp(sigma * Z), Z standard normal, from row s of `lognormal_table`."""
    u = uniform(state, i)
    pos = u * QUANTILE_STEPS
    k = int(pos)
    if k < QUANTILE_TAIL or k >= QUANTILE_STEPS - QUANTILE_TAIL:
        return median * math.exp(sigma * normal_quantile(u + 0.5 / 9007199254740992.0))
    lo = table[s, k]
    return lo + (pos - k) * (table[s, k + 1] - lo)


@compiled()
def _fill(
    state: np.ndarray,
    rate_hz: np.ndarray,
    t_end: int,
    times: np.ndarray,
    dst: np.ndarray,
    off: np.ndarray,
    socket_of: np.ndarray,
    same_share: float,
    targets: np.ndarray,
    socket_off: np.ndarray,
) -> bool:
    """Poisson arrivals of every CPU in turn, back to back into `times` (CPU c's from off[c]);
    False when it is full.

    With `targets` (sorted; socket k's are targets[socket_off[k]:socket_off[k + 1]]) each arrival is
    a request and also gets a target: the sender's socket with probability same_share, never the
    sender itself, uniformly within the side chosen. Every request takes the same three draws
    whatever the topology, so a sender's request times do not depend on it.
    """
    with_targets = targets.shape[0] > 0
    k = 0
    for c in range(state.shape[0]):
        off[c] = k
        if rate_hz[c] <= 0.0:
            continue
        lo = hi = me = 0
        n_same = n_other = 0
        if with_targets:
            sk = socket_of[c]
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
            if k >= times.shape[0]:
                return False
            times[k] = int(t)
            if with_targets:
                # Both picks are computed and one is kept: a branch on a coin flip is
                # mispredicted half the time.
                pick_same = (uniform(state, c) < same_share or n_other == 0) and n_same > 0
                u = uniform(state, c)
                j_same = lo + min(int(u * n_same), n_same - 1)
                j_same += j_same >= me
                j_other = min(int(u * n_other), n_other - 1)
                j_other += (hi - lo) * (j_other >= lo)
                dst[k] = targets[j_same if pick_same else j_other]
            k += 1
            t += exponential(state, c, mean_gap)
    off[state.shape[0]] = k
    return True


def arrival_streams(
    seeds: np.ndarray,
    rate_hz: np.ndarray,
    t_end: int,
    cores: int | np.ndarray = 1,
    same_share: float = 0.0,
    targets: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Poisson arrivals in [0, t_end) for every CPU (rate_hz[c], generator seeds[c]).

    `cores` is the CPUs of a socket, or each CPU's socket (sockets as ranges of CPUs, of any size).
    Returns all CPUs' times back to back (int ns), their targets when `targets` is given (see
    `_fill`; else an empty array), and each CPU's offset.
    """
    n = len(rate_hz)
    rate_hz = np.asarray(rate_hz, dtype=np.float64)
    if not (rate_hz > 0).any():  # a source that is off (the common case for some)
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    tgt = np.empty(0, dtype=np.int64) if targets is None else np.unique(targets).astype(np.int64)
    if isinstance(cores, np.ndarray):
        socket_of = cores.astype(np.int64)
    else:
        socket_of = np.arange(n, dtype=np.int64) // cores
    n_sockets = int(socket_of[-1]) + 1 if n else 0
    socket_off = np.searchsorted(socket_of[tgt], np.arange(n_sockets + 2)).astype(np.int64)
    expected = rate_hz * t_end / 1e9
    room = int(np.where(rate_hz > 0, expected + 8.0 * np.sqrt(expected) + 32.0, 0).sum())  # mean + 8 sd each
    while True:
        times = np.empty(room, dtype=np.int64)
        dst = np.empty(room if len(tgt) else 0, dtype=np.int64)
        off = np.empty(n + 1, dtype=np.int64)
        if _fill(seeds.copy(), rate_hz, t_end, times, dst, off, socket_of, same_share, tgt, socket_off):
            break
        room *= 2
    return times[: off[-1]], dst[: off[-1]] if len(tgt) else dst, off


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
