"""Deterministic synthetic chunked graphs: R-MAT and a grid mesh (homogeneous), a MAG-like heterogeneous graph."""

from graphshard.generate.grid import generate_grid
from graphshard.generate.mag import generate_mag
from graphshard.generate.rmat import generate_rmat

GENERATORS = {"rmat": generate_rmat, "mag": generate_mag, "grid": generate_grid}

__all__ = ["GENERATORS", "generate_grid", "generate_mag", "generate_rmat"]
