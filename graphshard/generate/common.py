"""Helpers shared by the synthetic graph generators: chunk bounds, per-chunk seeding, format choice, ID scattering."""

from __future__ import annotations

import zlib
from math import gcd

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.formats.chunked import FORMAT_NAMES

GENERATOR_FORMATS = (*FORMAT_NAMES, "mixed")
# "mixed" cycles through the formats spec by spec (edges of one type, one feature, ...), in this order.
_MIXED_CYCLE = ("parquet", "numpy", "csv")


def check_format(fmt: str) -> None:
    """Reject a format name the generators cannot write."""
    if fmt not in GENERATOR_FORMATS:
        raise GraphshardError(f"--format: expected one of {', '.join(GENERATOR_FORMATS)}, found '{fmt}'")


def spec_format(fmt: str, index: int) -> str:
    """The file format of the `index`-th spec of a graph: `fmt` itself, or a cycle through all formats for 'mixed'."""
    return _MIXED_CYCLE[index % len(_MIXED_CYCLE)] if fmt == "mixed" else fmt


def chunk_bounds(total: int, chunks: int) -> list[int]:
    """Offsets [0, ..., total] splitting `total` rows into `chunks` near-equal chunks."""
    return [total * i // chunks for i in range(chunks + 1)]


def chunk_rng(seed: int, stream: str, chunk: int = 0) -> np.random.Generator:
    """An independent generator per (seed, stream, chunk): any chunk can be made without making the others."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(stream.encode()), chunk]))


def scatter_ids(ids: np.ndarray, n: int, seed: int, stream: str) -> np.ndarray:
    """A seeded bijection of [0, n) (ids * m + c mod n, m coprime to n) that spreads low-ID hubs over the range."""
    if n >= 1 << 32:
        raise GraphshardError(f"node count {n}: the generators support fewer than 2**32 nodes per type")
    rng = chunk_rng(seed, f"scatter:{stream}")
    m = int(rng.integers(1, max(2, min(n, 1 << 31))))
    while gcd(m, n) != 1:
        m += 1
    c = int(rng.integers(0, n))
    return (ids * m + c) % n


def positive(name: str, value: int, minimum: int = 1) -> int:
    """Validate a size option."""
    if int(value) < minimum:
        raise GraphshardError(f"--{name}: expected an integer >= {minimum}, found {value}")
    return int(value)
