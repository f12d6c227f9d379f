"""A bipartite user-item graph (clicks, ratings, purchases): each edge is a user's pick of an item. Users' activity
and items' popularity follow Chung-Lu's power law; items fall into `genres`, each user favours GENRES_PER_USER of
them, and a share `mixing` of picks ignores the user's genres. With a large `mixing` the genres barely show: a
power-law graph without communities, as Barabasi-Albert's, but bipartite. Users and items share one node type
(users first, IDs scattered over both), as the quality comparisons read homogeneous graphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.formats.chunked import chunk_bounds
from graphshard.formats.chunked_writer import positive
from graphshard.generate.chunglu import degree_cdf, draw_ranks
from graphshard.generate.common import chunk_rng, scatter_ids
from graphshard.generate.homogeneous import check_sizes, write_homogeneous

USER_SHARE = 0.75  # users' share of the nodes; the rest are items
GENRES_PER_USER = 2
MIXING = 0.2  # default share of picks outside the user's genres


def useritem_chunk(chunk: int, *, seed: int, count: int, nodes: int, users: int, genres: int, mixing: float,
                   cdfs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Edge chunk `chunk`: `count` (user, item) picks. Item j is of genre j % genres and the (j // genres)-th most
    popular of it, so one popularity order serves picks inside a genre and anywhere. IDs scattered."""
    user_cdf, item_cdf, genre_cdf = cdfs
    rng = chunk_rng(seed, "useritem:edges", chunk)
    user = draw_ranks(user_cdf, rng, count)
    favourite = user * GENRES_PER_USER + rng.integers(0, GENRES_PER_USER, count)
    genre = scatter_ids(favourite, users * GENRES_PER_USER, seed, "useritem:genres") % genres
    inside = genre + draw_ranks(genre_cdf, rng, count) * genres
    item = np.where(rng.random(count) >= mixing, inside, draw_ranks(item_cdf, rng, count))
    return scatter_ids(user, nodes, seed, "useritem"), scatter_ids(users + item, nodes, seed, "useritem")


def generate_useritem(out_dir: str | Path, nodes: int = 1 << 14, edges: int = 1 << 18, chunks: int = 4,
                      fmt: str = "numpy", seed: int = 0, overwrite: bool = False, feat_dim: int = 16,
                      communities: int | None = None, mixing: float = MIXING, graph_name: str = "useritem") -> Path:
    """Write a user-item graph with `communities` genres (default nodes // 5000, at least 2) and a share `mixing` of
    picks outside a user's genres; returns the metadata.json path."""
    nodes, edges, chunks, feat_dim = check_sizes(nodes, edges, chunks, feat_dim, fmt)
    users = int(nodes * USER_SHARE)
    items = nodes - users
    genres = positive("communities", communities if communities is not None else max(2, nodes // 5000))
    if genres > items or users == 0:
        raise GraphshardError(f"--communities: {nodes} nodes hold {items} items, expected at most that many genres "
                              f"and at least one user; found {genres} genres")
    if not 0.0 <= mixing <= 1.0:
        raise GraphshardError(f"--mixing: expected a share of picks in [0, 1], found {mixing}")
    cdfs = (degree_cdf(users), degree_cdf(items), degree_cdf(items // genres))
    edge_bounds = chunk_bounds(edges, chunks)

    def chunk_of(i: int) -> tuple[np.ndarray, np.ndarray]:
        return useritem_chunk(i, seed=seed, count=edge_bounds[i + 1] - edge_bounds[i], nodes=nodes, users=users,
                              genres=genres, mixing=mixing, cdfs=cdfs)

    return write_homogeneous(out_dir, graph_name, nodes, chunks, chunk_of, fmt, seed, overwrite, feat_dim)
