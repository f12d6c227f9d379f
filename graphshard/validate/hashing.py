"""Order-independent 64-bit checksums of keyed rows: sum over rows of mix(key, row bytes) mod 2**64.

Two sides that hold the same multiset of (original ID, row) pairs, in any order and split over any files, get the
same sum; one changed row changes the sum unless two 64-bit hashes collide (probability about 2**-64 per row).
The mixing function is splitmix64's finalizer, applied per 8-byte word of the row, vectorized with numpy.
"""

from __future__ import annotations

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z = z * _M1
    z = z ^ (z >> np.uint64(27))
    z = z * _M2
    return z ^ (z >> np.uint64(31))


def canonical(rows: np.ndarray) -> np.ndarray:
    """Rows as DGL stores them: bool becomes uint8 (the only conversion the writer may make)."""
    rows = np.asarray(rows)
    return rows.view(np.uint8) if rows.dtype == np.bool_ else rows


def row_words(rows: np.ndarray) -> np.ndarray:
    """Each row's little-endian bytes as (n, w) uint64 words, zero-padded to a multiple of 8 bytes."""
    rows = np.ascontiguousarray(canonical(rows), dtype=canonical(rows).dtype.newbyteorder("<"))
    n, per_row = rows.shape[0], int(np.prod(rows.shape[1:], dtype=np.int64))
    raw = rows.reshape(n, per_row).view(np.uint8)
    pad = (-raw.shape[1]) % 8
    if pad:
        raw = np.concatenate([raw, np.zeros((n, pad), dtype=np.uint8)], axis=1)
    return np.ascontiguousarray(raw).view(np.uint64).reshape(n, raw.shape[1] // 8)


def row_hashes(keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One uint64 per row, depending on its key (original ID) and every byte of the row."""
    h = _mix(np.asarray(keys, dtype=np.int64).view(np.uint64) + _GOLDEN)
    words = row_words(rows)
    for j in range(words.shape[1]):
        h = _mix(h ^ (words[:, j] + _salt(j)))
    return h


def _salt(j: int) -> np.uint64:
    """A distinct constant per word position (so that swapping two words changes the hash)."""
    return np.uint64((j + 1) * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF)


def hash_sum(keys: np.ndarray, rows: np.ndarray) -> int:
    """Sum of `row_hashes` modulo 2**64, as a Python int."""
    return int(row_hashes(keys, rows).sum(dtype=np.uint64)) if len(keys) else 0


def hash_sums_by_owner(keys: np.ndarray, rows: np.ndarray, owner: np.ndarray, num_parts: int) -> list[int]:
    """Per partition, the hash sum of the rows it owns (rows with owner -1 are left out)."""
    h = row_hashes(keys, rows)
    return [int(h[owner == p].sum(dtype=np.uint64)) for p in range(num_parts)]


def add(a: int, b: int) -> int:
    """Sum of two checksums modulo 2**64."""
    return (a + b) & 0xFFFFFFFFFFFFFFFF
