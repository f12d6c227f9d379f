"""Deterministic synthetic chunked graphs: R-MAT (homogeneous) and a MAG-like heterogeneous graph."""

from graphshard.generate.mag import generate_mag
from graphshard.generate.rmat import generate_rmat

GENERATORS = {"rmat": generate_rmat, "mag": generate_mag}

__all__ = ["GENERATORS", "generate_mag", "generate_rmat"]
