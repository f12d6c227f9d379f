"""splitmix64 (Steele, Lea and Flood 2014): the constants and the finalizer every seeded hash in graphshard uses.

A key k is mixed as finalize(k * GOLDEN + salt) (the multilevel partitioner's tie breaks, numba in its kernels) or
finalize(k + GOLDEN) (validation's row checksums). The finalizer is a bijection of 64-bit words that spreads every
input bit over the output. Here in numpy, in place (no temporaries per step); numba code uses the constants.
"""

from __future__ import annotations

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: the generator's increment
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)
SHIFTS = (30, 27, 31)


def finalize(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place on z (which must be a fresh uint64 array); returns z."""
    tmp = np.empty_like(z)
    for shift, mult in zip(SHIFTS, (M1, M2, None)):
        np.right_shift(z, np.uint64(shift), out=tmp)
        z ^= tmp
        if mult is not None:
            z *= mult
    return z
