"""Repeat seeds (engine/repeats.py)."""

from __future__ import annotations

import numpy as np
import pytest

from engine import SimConfig
from engine.repeats import MAX_REPEATS, repeat_seeds


def _word_from_spawn_key(seed: int, index: int) -> int:
    """An independent derivation of repeat `index + 1`'s seed: spawn()'s i-th child is the
    SeedSequence with spawn key (i,), and a uint64 word is two uint32 words, low word first."""
    low, high = np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(2, np.uint32)
    return (int(low) | int(high) << 32) >> 1


def test_repeat_zero_is_the_config_seed_and_the_others_the_spawned_words() -> None:
    seeds = repeat_seeds(12345, 6)
    assert seeds[0] == 12345
    assert seeds[1:] == [_word_from_spawn_key(12345, i) for i in range(5)]


def test_pinned_values() -> None:
    # Pinned so that a change of the derivation (or of numpy's SeedSequence) shows: stored runs
    # name these seeds.
    assert repeat_seeds(1, 4) == [1, 4215923173971654960, 2021340933837429789, 637987770806161565]
    assert repeat_seeds(0, 3) == [0, 4334430513956379144, 2440950710608614359]


def test_one_repeat_is_the_seed_alone() -> None:
    assert repeat_seeds(7, 1) == [7]


def test_fewer_repeats_are_a_prefix_of_more() -> None:
    assert repeat_seeds(99, 50)[:10] == repeat_seeds(99, 10)


def test_seeds_are_valid_config_seeds_and_distinct() -> None:
    seeds = repeat_seeds(2**63 - 1, MAX_REPEATS)
    assert len(set(seeds)) == MAX_REPEATS
    for s in seeds:
        assert SimConfig(seed=s).seed == s


@pytest.mark.parametrize("repeats", [0, -1, 51, 1.0, True, "3"])
def test_repeats_outside_1_to_50_are_refused(repeats: object) -> None:
    with pytest.raises(ValueError, match="^repeats: must be"):
        repeat_seeds(1, repeats)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [-1, 2**63, 1.5, None])
def test_bad_seed_is_refused(seed: object) -> None:
    with pytest.raises(ValueError, match="^seed: must be"):
        repeat_seeds(seed, 2)  # type: ignore[arg-type]
