"""The planted-community, geometric, Chung-Lu, Barabasi-Albert and user-item generators: shape, structure,
determinism by seed, chunking, CLI."""

from __future__ import annotations

import numpy as np
import pytest

from graphshard.cli import main
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import load_metadata
from graphshard.formats.readers import read_edge_chunk, read_rows
from graphshard.generate import GENERATORS
from graphshard.generate.ba import ba_edges
from graphshard.generate.common import scatter_ids
from graphshard.generate.geometric import radius_for, sorted_points
from graphshard.generate.planted import community_bounds
from graphshard.generate.useritem import GENRES_PER_USER, USER_SHARE

FAMILIES = ["planted", "geometric", "chunglu", "ba", "useritem"]


def _edges(meta):
    g = load_metadata(meta)
    parts = [read_edge_chunk(g, g.edge_type[0], i) for i in range(len(g.edges[g.edge_type[0]].data))]
    return g, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _unscatter(ids, n, seed, stream):
    inverse = np.empty(n, dtype=np.int64)
    inverse[scatter_ids(np.arange(n, dtype=np.int64), n, seed, stream)] = np.arange(n)
    return inverse[ids]


@pytest.mark.parametrize("kind", FAMILIES)
def test_shape_chunks_and_features(tmp_path, kind):
    meta = GENERATORS[kind](tmp_path / kind, nodes=3000, edges=15000, chunks=3, seed=1)
    g, src, dst = _edges(meta)
    assert g.node_type == ["_N"] and g.num_nodes_per_type == [3000]
    assert len(g.edges[g.edge_type[0]].data) == 3 and len(g.num_nodes_per_chunk[0]) == 3
    assert g.num_edges_per_type == [len(src)]
    assert src.min() >= 0 and dst.min() >= 0 and max(src.max(), dst.max()) < 3000
    assert not np.any(src == dst)
    if kind != "geometric":  # the geometric graph's count is the expected one, not exact
        assert len(src) == (ba_edges(3000, 5) if kind == "ba" else 15000)
    assert 0.8 * 15000 < len(src) < 1.05 * 15000
    assert read_rows(g, g.node_data["_N"]["feat"], 0, 3000).shape == (3000, 16)
    assert read_rows(g, g.node_data["_N"]["train_mask"], 0, 3000).dtype == np.bool_


@pytest.mark.parametrize("kind", FAMILIES)
def test_same_seed_same_bytes_other_seed_other_graph(tmp_path, kind):
    a, b, c = (GENERATORS[kind](tmp_path / name, nodes=2000, edges=8000, chunks=2, seed=seed, fmt="mixed")
               for name, seed in (("a", 4), ("b", 4), ("c", 5)))
    files = sorted(p.relative_to(a.parent) for p in a.parent.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b.parent) for p in b.parent.rglob("*") if p.is_file())
    for rel in files:
        assert (a.parent / rel).read_bytes() == (b.parent / rel).read_bytes(), rel
    assert not np.array_equal(_edges(a)[1], _edges(c)[1])


def test_planted_edges_mostly_inside_communities(tmp_path):
    meta = GENERATORS["planted"](tmp_path / "p", nodes=5000, edges=40000, chunks=4, seed=3, communities=10,
                                 mixing=0.25)
    _, src, dst = _edges(meta)
    bounds = community_bounds(5000, 10, 3)
    comm = [np.searchsorted(bounds, _unscatter(x, 5000, 3, "planted"), side="right") - 1 for x in (src, dst)]
    inside = float(np.mean(comm[0] == comm[1]))
    assert 0.72 < inside < 0.80  # 75% drawn inside, plus the few uniform draws that land inside
    sizes = np.diff(bounds)
    assert sizes.min() >= 2 and sizes.sum() == 5000 and sizes.max() > 1.3 * sizes.min()


def test_geometric_edges_are_the_short_pairs(tmp_path):
    meta = GENERATORS["geometric"](tmp_path / "g", nodes=4000, edges=12000, chunks=3, seed=2)
    _, src, dst = _edges(meta)
    radius = radius_for(4000, 12000)
    xy, _ = sorted_points(4000, 2, int(1 / radius))
    a, b = xy[_unscatter(src, 4000, 2, "geometric")], xy[_unscatter(dst, 4000, 2, "geometric")]
    assert np.all(np.hypot(*(a - b).T) < radius)
    close = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1)) < radius  # every pair, brute force
    assert len(src) == (int(close.sum()) - 4000) // 2
    assert len(set(zip(src.tolist(), dst.tolist())) | set(zip(dst.tolist(), src.tolist()))) == 2 * len(src)


def test_geometric_edge_set_does_not_depend_on_chunks(tmp_path):
    one = _edges(GENERATORS["geometric"](tmp_path / "one", nodes=3000, chunks=1, seed=6))
    four = _edges(GENERATORS["geometric"](tmp_path / "four", nodes=3000, chunks=4, seed=6))
    assert sorted(zip(one[1].tolist(), one[2].tolist())) == sorted(zip(four[1].tolist(), four[2].tolist()))
    assert len(four[0].edges[four[0].edge_type[0]].data) == 4


def test_chunglu_is_power_law_without_communities(tmp_path):
    """Hubs carry many edge ends, yet METIS finds no sparse cut (unlike the planted graph of the same size)."""
    import pymetis

    from graphshard.assign.graph_build import build_csr

    cuts = {}
    for kind in ("chunglu", "planted"):
        meta = GENERATORS[kind](tmp_path / kind, nodes=4000, edges=30000, chunks=2, seed=0)
        _, src, dst = _edges(meta)
        if kind == "chunglu":
            deg = np.bincount(np.concatenate([src, dst]), minlength=4000)
            assert np.sort(deg)[::-1][:40].sum() > 0.1 * deg.sum() and deg.max() > 30 * deg.mean()
        hom = build_csr(load_metadata(meta))
        _, parts = pymetis.part_graph(4, adjacency=pymetis.CSRAdjacency(hom.indptr, hom.indices))
        parts = np.asarray(parts)
        cuts[kind] = float(np.mean(parts[src] != parts[dst]))
    assert cuts["chunglu"] > 0.5 and cuts["planted"] < 0.35


def test_ba_degrees_follow_preferential_attachment(tmp_path):
    """Every node has at least m edges, and the share of degree >= d follows BA's m(m+1) / (d(d+1)) (exponent 3)."""
    meta = GENERATORS["ba"](tmp_path / "ba", nodes=100_000, edges=500_000, chunks=3, seed=2)
    _, src, dst = _edges(meta)
    deg = np.bincount(np.concatenate([src, dst]), minlength=100_000)
    assert deg.min() == 5 and len(src) == ba_edges(100_000, 5)
    for d in (10, 20, 50):
        assert abs(np.mean(deg >= d) / (30 / (d * (d + 1))) - 1) < 0.2, d
    assert deg.max() > 500  # hubs: an Erdos-Renyi graph of this size and degree has none above ~30
    newer = _unscatter(src, 100_000, 2, "ba")[15:] > _unscatter(dst, 100_000, 2, "ba")[15:]  # after the clique
    assert newer.all()  # each edge joins its node to an earlier one


@pytest.mark.parametrize("mixing", [0.2, 0.6])
def test_useritem_is_bipartite_with_picks_in_the_users_genres(tmp_path, mixing):
    """Users pick items only; a share 1 - mixing of picks falls in one of the user's genres (plus the picks anywhere
    that land there by chance); the most active user and the most popular item are hubs."""
    nodes, genres = 40_000, 20
    meta = GENERATORS["useritem"](tmp_path / "u", nodes=nodes, edges=200_000, chunks=3, seed=4, communities=genres,
                                  mixing=mixing)
    _, src, dst = _edges(meta)
    users = int(nodes * USER_SHARE)
    user, item = _unscatter(src, nodes, 4, "useritem"), _unscatter(dst, nodes, 4, "useritem") - users
    assert user.max() < users and item.min() >= 0
    favourites = scatter_ids(np.arange(users * GENRES_PER_USER), users * GENRES_PER_USER, 4,
                             "useritem:genres").reshape(users, GENRES_PER_USER) % genres
    inside = np.mean((favourites[user] == (item % genres)[:, None]).any(axis=1))
    chance = mixing * GENRES_PER_USER / genres  # at most: a user's two genres may coincide
    assert 1 - mixing < inside < 1 - mixing + chance + 0.01, inside
    for ends in (user, item):
        deg = np.bincount(ends)
        assert deg.max() > 50 * deg.mean()


def test_cli_families_and_bad_options(tmp_path, capsys):
    assert main(["generate", "planted", "--out", str(tmp_path / "p"), "--nodes", "2000", "--edges", "6000",
                 "--communities", "4", "--mixing", "0.1", "--chunks", "2"]) == 0
    assert load_metadata(tmp_path / "p").num_edges_per_type == [6000]
    assert main(["generate", "geometric", "--out", str(tmp_path / "g"), "--nodes", "2000"]) == 0
    assert 5000 < load_metadata(tmp_path / "g").total_edges < 6300  # default 3 edges per node, fewer at the border
    assert main(["generate", "chunglu", "--out", str(tmp_path / "c"), "--nodes", "500", "--edges", "900"]) == 0
    assert main(["generate", "ba", "--out", str(tmp_path / "b"), "--nodes", "500", "--edges", "1500"]) == 0
    assert main(["generate", "useritem", "--out", str(tmp_path / "u"), "--nodes", "800", "--edges", "3000",
                 "--communities", "5", "--mixing", "0.6"]) == 0
    assert load_metadata(tmp_path / "u").total_edges == 3000
    assert load_metadata(tmp_path / "b").total_edges == ba_edges(500, 3)
    capsys.readouterr()
    assert main(["generate", "ba", "--out", str(tmp_path / "x"), "--nodes", "4", "--edges", "40"]) == 2
    assert "--nodes" in capsys.readouterr().err and not (tmp_path / "x").exists()
    capsys.readouterr()
    assert main(["generate", "planted", "--out", str(tmp_path / "x"), "--nodes", "10", "--communities", "6"]) == 2
    assert "--communities" in capsys.readouterr().err
    assert main(["generate", "useritem", "--out", str(tmp_path / "x"), "--nodes", "100", "--communities", "26"]) == 2
    assert "25 items" in capsys.readouterr().err
    assert main(["generate", "planted", "--out", str(tmp_path / "x"), "--mixing", "1.5"]) == 2
    assert "--mixing" in capsys.readouterr().err and not (tmp_path / "x").exists()
    with pytest.raises(GraphshardError, match="--edges"):
        GENERATORS["chunglu"](tmp_path / "y", nodes=100, edges=2, chunks=4)
