"""The validation checksums (graphshard/validate/hashing.py): the compiled kernel against a plain-Python reference of
the documented hash, for every row shape the validator meets."""

from __future__ import annotations

import numpy as np
import pytest

from graphshard.validate import hashing

MASK = 0xFFFFFFFFFFFFFFFF


def _finalize(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _reference(keys, rows, owner, num_parts: int) -> list[int]:
    """The hash as hashing.py's docstring states it, one row at a time in Python."""
    sums = [0] * num_parts
    for i, key in enumerate(keys.tolist()):
        raw = np.ascontiguousarray(rows[i]).tobytes() if rows.dtype.byteorder != ">" else \
            np.ascontiguousarray(rows[i]).astype(rows.dtype.newbyteorder("<")).tobytes()
        raw += bytes(-len(raw) % 8)
        h = _finalize((key + 0x9E3779B97F4A7C15) & MASK)
        for j in range(len(raw) // 8):
            word = int.from_bytes(raw[8 * j:8 * j + 8], "little")
            h = ((h ^ word) * (((2 * j + 1) * 0x9E3779B97F4A7C15) & MASK | 1)) & MASK
        p = 0 if owner is None else int(owner[i])
        if 0 <= p < num_parts:
            sums[p] = (sums[p] + _finalize(h)) & MASK
    return sums


@pytest.mark.parametrize("dtype,shape", [(np.float32, ()), (np.bool_, ()), (np.int64, (2,)), (np.float32, (16,)),
                                         (np.float32, (3,)), (np.int16, ()), (np.uint8, (5,)), (">i4", ()),
                                         (np.int32, (2, 3))])
def test_row_sums_match_the_documented_hash(dtype, shape):
    rng = np.random.default_rng(7)
    rows = (rng.random((300,) + shape) * 1000).astype(dtype)
    keys = rng.integers(-3, 1 << 50, 300)
    owner = rng.integers(-1, 5, 300).astype(np.int8)  # -1 and 4 (out of range for 4 parts): left out
    assert hashing.row_sums(keys, rows, owner, 4) == _reference(keys, rows, owner, 4)
    assert hashing.row_sums(keys, rows) == _reference(keys, rows, None, 1)


def test_pair_sums_equal_row_sums_of_the_stacked_rows():
    rng = np.random.default_rng(3)
    cols = [rng.integers(0, 1 << 40, 500) for _ in range(2)]
    keys, owner = rng.integers(0, 1 << 40, 500), rng.integers(0, 3, 500).astype(np.int16)
    assert hashing.pair_sums(keys, *cols, owner, 3) == hashing.row_sums(keys, np.stack(cols, axis=1), owner, 3)
    assert hashing.pair_sums(keys, *cols) == hashing.row_sums(keys, np.stack(cols, axis=1))


def test_sums_ignore_order_and_see_one_changed_word():
    rng = np.random.default_rng(5)
    rows, keys = rng.integers(0, 1 << 60, (1000, 3)), np.arange(1000)
    order = rng.permutation(1000)
    assert hashing.row_sums(keys, rows) == hashing.row_sums(keys[order], rows[order])
    changed = rows.copy()
    changed[417, 2] ^= 1
    assert hashing.row_sums(keys, changed) != hashing.row_sums(keys, rows)
    assert hashing.row_sums(keys[:0], rows[:0]) == [0]
