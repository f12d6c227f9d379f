"""Deterministic synthetic chunked graphs: R-MAT, a grid mesh, planted communities, a random geometric graph and
Chung-Lu (homogeneous), a MAG-like heterogeneous graph."""

from graphshard.generate.chunglu import generate_chunglu
from graphshard.generate.geometric import generate_geometric
from graphshard.generate.grid import generate_grid
from graphshard.generate.mag import generate_mag
from graphshard.generate.planted import generate_planted
from graphshard.generate.rmat import generate_rmat

GENERATORS = {"rmat": generate_rmat, "mag": generate_mag, "grid": generate_grid, "planted": generate_planted,
              "geometric": generate_geometric, "chunglu": generate_chunglu}

__all__ = ["GENERATORS", "generate_chunglu", "generate_geometric", "generate_grid", "generate_mag",
           "generate_planted", "generate_rmat"]
