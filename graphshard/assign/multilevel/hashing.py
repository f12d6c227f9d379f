"""Seeded per-round randomness that depends on (seed, level, round, node) only, never on scheduling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from graphshard.assign.multilevel.store import Level

GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def salt_of(seed: int, level: int, rnd: int) -> np.uint64:
    """One 64-bit salt per (seed, level, round)."""
    return np.uint64(np.random.SeedSequence([seed, level, rnd]).generate_state(1, dtype=np.uint64)[0])


def mix_ids(salt: np.uint64, lo: int, hi: int) -> np.ndarray:
    """A seeded, well-spread 64-bit key per node of [lo, hi) (a tie-break that does not favour low IDs)."""
    z = np.arange(lo, hi, dtype=np.uint64) * GOLDEN + salt
    z ^= z >> np.uint64(31)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(29)
    return z


def half(salt: np.uint64, lo: int, hi: int) -> np.ndarray:
    """Which nodes of [lo, hi) may move in this round: a seeded random half (two adjacent nodes of different blocks
    moving in the same round would swap labels rather than meet; with halves that happens a quarter as often)."""
    return (mix_ids(salt, lo, hi) & np.uint64(1)).astype(bool)


def active_nodes(level: Level, salt: np.uint64, lo: int, hi: int) -> np.ndarray:
    """The nodes of [lo, hi) that may move this round: a seeded half (`half`) when other blocks move at the same
    time, every node when the level is one block."""
    return half(salt, lo, hi) if len(level.bounds) > 2 else np.ones(hi - lo, dtype=bool)
