"""Helpers shared by the synthetic graph generators: per-chunk seeding and ID scattering (chunk bounds and format
choice are the chunked writer's: graphshard.formats.chunked, graphshard.formats.chunked_writer)."""

from __future__ import annotations

import zlib
from math import gcd

import numpy as np

from graphshard._deprecated import renamed
from graphshard.errors import GraphshardError


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


__getattr__ = renamed(__name__, {  # the chunk writers' helpers, which lived here until 0.1
    "chunk_bounds": "graphshard.formats.chunked:chunk_bounds",
    "check_format": "graphshard.formats.chunked_writer:check_format",
    "spec_format": "graphshard.formats.chunked_writer:spec_format",
    "positive": "graphshard.formats.chunked_writer:positive",
    "GENERATOR_FORMATS": "graphshard.formats.chunked_writer:WRITE_FORMATS",
})
