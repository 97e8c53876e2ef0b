"""How the engine's compiled functions are compiled.

`cache=True`: compiled once per machine, then loaded. `_nrt=False`: the kernel allocates
nothing, and without numba's reference counting every array argument costs no atomic
increment and decrement per call (the event loop got ~1.5x faster). `error_model="numpy"`:
no Python exception checks on division.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from numba import njit

F = TypeVar("F", bound=Callable[..., Any])


def compiled(*, inline: bool = False) -> Callable[[F], F]:
    """Compile with numba; `inline` folds the function into its callers (small hot helpers)."""
    options: dict[str, Any] = {"cache": True, "error_model": "numpy", "_nrt": False}
    if inline:
        options["inline"] = "always"

    def wrap(fn: F) -> F:
        return njit(**options)(fn)  # type: ignore[no-any-return]

    return wrap
