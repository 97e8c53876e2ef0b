"""How the engine's compiled functions are compiled and cached.

`cache=True`: compiled once per machine, then loaded. `_nrt=False`: the kernel allocates
nothing, and without numba's reference counting every array argument costs no atomic
increment and decrement per call (the event loop got ~1.5x faster). `error_model="numpy"`:
no Python exception checks on division.

numba decides whether a cached function is stale from its own source file only, not from the
files of the functions it calls: an edit to governors/menu.py alone would leave the event loop
cached with the old governors. So the cache lives in a folder named after a digest of every
compiled module's source (under NUMBA_CACHE_DIR when it is set, else engine/__pycache__).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from numba import config as _numba_config
from numba import njit

F = TypeVar("F", bound=Callable[..., Any])
numba_config: Any = _numba_config  # its settings are set at run time, from the environment

COMPILED_MODULES = (
    "jit.py", "streams.py", "governors/common.py", "governors/menu.py", "governors/teo.py",
    "governors/ladder.py", "governors/haltpoll.py", "governors/cpuidle.py", "kernel/layout.py",
    "kernel/queue.py", "kernel/events.py", "kernel/cores.py", "kernel/calls.py", "kernel/loop.py",
    "summary.py", "load.py", "drawn_timers.py",
)


def _cache_dir() -> str:
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in COMPILED_MODULES:
        digest.update((here / name).read_bytes())
    base = Path(numba_config.CACHE_DIR) if numba_config.CACHE_DIR else here / "__pycache__"
    return str(base / f"numba-{digest.hexdigest()[:16]}")


CACHE_DIR = _cache_dir()


def compiled(*, inline: bool = False) -> Callable[[F], F]:
    """Compile with numba; `inline` folds the function into its callers (hot helpers).

    The folding is LLVM's (alwaysinline), not numba's: numba's own inlining types the callee
    again at every call site, and the first compilation took 73 s instead of 27 s for the same code.
    A call that is not folded passes every array as its 7-9 words, and a NamedTuple of arrays
    as all of theirs: a governor call cost more than the governor.
    """
    options: dict[str, Any] = {"cache": True, "error_model": "numpy", "_nrt": False}
    if inline:
        options["forceinline"] = True

    def wrap(fn: F) -> F:
        # numba picks the cache folder when the function is decorated, from its global config.
        saved = numba_config.CACHE_DIR
        numba_config.CACHE_DIR = CACHE_DIR
        try:
            return njit(**options)(fn)  # type: ignore[no-any-return]
        finally:
            numba_config.CACHE_DIR = saved

    return wrap


def cache_is_warm() -> bool:
    """Whether the event loop (`engine.kernel.loop.run_until`) is in the on-disk cache: if not, the
    next run in a fresh process compiles it first (~20 s on a 2-core machine)."""
    return any(Path(CACHE_DIR).glob("**/loop.run_until-*.nbc"))
