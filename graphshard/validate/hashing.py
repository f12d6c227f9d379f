"""Order-independent 64-bit checksums of keyed rows: sum over rows of hash(key, row words) mod 2**64.

Two sides that hold the same multiset of (original ID, row) pairs, in any order and split over any files, get the
same sum. A row's hash starts from splitmix64's finalizer of its key, folds in each 8-byte word of the row with one
xor and one multiply by an odd constant per word position (a bijection of the running hash, so changing any one word
always changes the row's hash), and ends with the finalizer again; one changed row therefore always changes the sum,
and several changed rows cancel out with probability about 2**-64. In-place numpy passes: no per-word temporaries.
"""

from __future__ import annotations

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place on z (which must be a fresh uint64 array)."""
    tmp = np.empty_like(z)
    for shift, mult in ((30, _M1), (27, _M2), (31, None)):
        np.right_shift(z, np.uint64(shift), out=tmp)
        z ^= tmp
        if mult is not None:
            z *= mult
    return z


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


def _word_mult(j: int) -> np.uint64:
    """A distinct odd constant per word position (so that swapping two words changes the hash)."""
    return np.uint64(((2 * j + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF | 1)


def column_hashes(keys: np.ndarray, columns: list[np.ndarray]) -> np.ndarray:
    """One uint64 per row from its key and its 8-byte words given column by column (int64/uint64 1-d arrays)."""
    h = np.asarray(keys, dtype=np.int64).view(np.uint64) + _GOLDEN
    _mix(h)
    for j, col in enumerate(columns):
        h ^= np.asarray(col).view(np.uint64)
        h *= _word_mult(j)
    return _mix(h)


def row_hashes(keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One uint64 per row, depending on its key (original ID) and every byte of the row."""
    words = row_words(rows)
    return column_hashes(keys, [words[:, j] for j in range(words.shape[1])])


def hash_sum(keys: np.ndarray, rows: np.ndarray) -> int:
    """Sum of `row_hashes` modulo 2**64, as a Python int."""
    return int(row_hashes(keys, rows).sum(dtype=np.uint64)) if len(keys) else 0


def sums_by_owner(h: np.ndarray, owner: np.ndarray, num_parts: int) -> list[int]:
    """Per partition p, the sum of the hashes h where owner == p (owner -1 or out of range: left out)."""
    small = owner if owner.dtype.itemsize <= 2 else owner.astype(np.int16 if num_parts < 2**15 else np.int64)
    # A dot product with the 0/1 mask: unsigned integer arithmetic wraps, so it is the sum mod 2**64 (and faster
    # than a masked reduction).
    return [int(np.dot(h, (small == p).astype(np.uint64))) for p in range(num_parts)]


def hash_sums_by_owner(keys: np.ndarray, rows: np.ndarray, owner: np.ndarray, num_parts: int) -> list[int]:
    """Per partition, the hash sum of the rows it owns (rows with owner -1 are left out)."""
    return sums_by_owner(row_hashes(keys, rows), owner, num_parts)


def add(a: int, b: int) -> int:
    """Sum of two checksums modulo 2**64."""
    return (a + b) & 0xFFFFFFFFFFFFFFFF
