"""Deterministic synthetic chunked graphs: R-MAT, a grid mesh, planted communities, a random geometric graph,
Chung-Lu, Barabasi-Albert and a bipartite user-item graph (homogeneous), a MAG-like heterogeneous graph."""

from graphshard.generate.ba import generate_ba
from graphshard.generate.chunglu import generate_chunglu
from graphshard.generate.geometric import generate_geometric
from graphshard.generate.grid import generate_grid
from graphshard.generate.mag import generate_mag
from graphshard.generate.planted import generate_planted
from graphshard.generate.rmat import generate_rmat
from graphshard.generate.useritem import generate_useritem

GENERATORS = {"rmat": generate_rmat, "mag": generate_mag, "grid": generate_grid, "planted": generate_planted,
              "geometric": generate_geometric, "chunglu": generate_chunglu, "ba": generate_ba,
              "useritem": generate_useritem}

__all__ = ["GENERATORS", "generate_ba", "generate_chunglu", "generate_geometric", "generate_grid", "generate_mag",
           "generate_planted", "generate_rmat", "generate_useritem"]
