"""Seeded per-round randomness that depends on (seed, level, round, node) only, never on scheduling."""

from __future__ import annotations

import numpy as np

from graphshard.splitmix import GOLDEN, M1, finalize


def salt_of(seed: int, level: int, rnd: int) -> np.uint64:
    """One 64-bit salt per (seed, level, round)."""
    return np.uint64(np.random.SeedSequence([seed, level, rnd]).generate_state(1, dtype=np.uint64)[0])


def mix_ids(salt: np.uint64, lo: int, hi: int) -> np.ndarray:
    """A seeded, well-spread 64-bit key per node of [lo, hi) (a tie-break that does not favour low IDs):
    splitmix64's first half-round (its constants; shifts 31 and 29), enough for a tie break (results stay as they
    were)."""
    z = np.arange(lo, hi, dtype=np.uint64) * GOLDEN + salt
    z ^= z >> np.uint64(31)
    z *= M1
    z ^= z >> np.uint64(29)
    return z


def half(salt: np.uint64, lo: int, hi: int) -> np.ndarray:
    """Which nodes of [lo, hi) may move in this round: a seeded random half (two adjacent nodes of different blocks
    moving in the same round would swap labels rather than meet; with halves that happens a quarter as often)."""
    return (mix_ids(salt, lo, hi) & np.uint64(1)).astype(bool)


def pair_key(a: np.ndarray, b: np.ndarray, salt: np.uint64) -> np.ndarray:
    """A seeded, well-spread 64-bit key per pair (a[i], b[i]) of uint64 ids: finalize(a * GOLDEN + b + salt)."""
    return finalize(a * GOLDEN + b + salt)
