"""The seeds of a repeated run: repeat 0 is the config's own seed, the others derive from it.

Repeat i (1 <= i < repeats) takes `SeedSequence(seed).spawn(repeats - 1)[i - 1]`'s first 64-bit
word of state, `generate_state(1, np.uint64)[0]`, shifted right by one bit so that it fits
`SimConfig.seed` (0..2**63 - 1). A child's spawn key is its index alone, so the seeds of a run with
fewer repeats are a prefix of those of the same config with more: adding repeats extends a run,
and two configs with the same seed and repeats run the same seed list (a paired comparison).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from engine import metrics

MIN_REPEATS = 1
MAX_REPEATS = 50
SEED_MAX = 2**63 - 1


def repeat_seeds(seed: int, repeats: int) -> list[int]:
    """The seed of each repeat, repeat 0 first (it is `seed` itself)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise ValueError(f"seed: must be an integer 0..2**63-1, got {seed!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int):
        raise ValueError(f"repeats: must be an integer {MIN_REPEATS}..{MAX_REPEATS}, got {repeats!r}")
    if not MIN_REPEATS <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats: must be {MIN_REPEATS}..{MAX_REPEATS}, got {repeats}")
    children = np.random.SeedSequence(seed).spawn(repeats - 1)
    return [seed] + [int(child.generate_state(1, np.uint64)[0] >> np.uint64(1)) for child in children]


def summary_figures(result: Mapping[str, Any]) -> dict[str, float]:
    """What a repeat keeps of its result (as a dict, the JSON parsed): by metric key, the
    registry's fixed metrics and each state's, those the result has."""
    found = [*metrics.FIXED, *(m for s in result.get("states", []) for m in metrics.state_metrics(s["name"]))]
    return {m.key: v for m in found if (v := m.value(result)) is not None}
