"""Reading partition sets back: graph, features, book, original-ID order, on hand-built partitions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from handmade import ToyGraph, toy_hetero, toy_homo, write_partitions

from graphshard.errors import InputError
from graphshard.formats.partition_reader import (
    load_orig_ids,
    load_partition,
    load_partition_book,
    load_partition_feats,
    to_original_order,
)


@pytest.fixture(params=["hetero", "homo"])
def toy(request, tmp_path: Path) -> tuple[ToyGraph, Path]:
    g = toy_hetero(3) if request.param == "hetero" else toy_homo(2)
    return g, write_partitions(g, tmp_path / "out", formats=("coo", "csc"))


def _new_to_orig(cfg: Path, g: ToyGraph, kind: str) -> dict[str, np.ndarray]:
    """Per type, original per-type ID of each new per-type ID (orig-ID files concatenated in partition order)."""
    names = g.ntypes if kind == "node" else g.etypes
    per_part = [load_orig_ids(cfg, p, kind) for p in range(g.num_parts)]
    return {t: np.concatenate([d.get(t, np.zeros(0, np.int64)) for d in per_part]) for t in names}


def test_partitions_reproduce_the_input(toy: tuple[ToyGraph, Path]) -> None:
    g, cfg = toy
    book = load_partition_book(cfg)
    node_orig, edge_orig = _new_to_orig(cfg, g, "node"), _new_to_orig(cfg, g, "edge")
    seen_edges = {e: 0 for e in g.etypes}
    for p in range(g.num_parts):
        part = load_partition(cfg, p)
        assert part.graph_name == "toy" and part.ntypes == {t: i for i, t in enumerate(g.ntypes)}
        assert set(part.graph.formats) == {"coo", "csc"}
        inner = part.graph.ndata["inner_node"] == 1
        np.testing.assert_array_equal(part.graph.ndata["_ID"][inner], book.partid2nids(p))
        assert (book.nid2partid(part.graph.ndata["_ID"][~inner]) != p).all()
        for name in g.ntypes:
            owned = node_orig[name][book.partid2nids(p, name)]
            for feat, arr in g.node_feats.get(name, {}).items():
                expected = arr[owned].astype(np.uint8) if arr.dtype == bool else arr[owned]
                np.testing.assert_array_equal(part.node_feats[f"{name}/{feat}"], expected)
        # every owned edge, mapped back to original per-type IDs, is the input edge with its original ID
        gid = part.graph.ndata["_ID"]
        tid, typed_eid = book.map_to_per_etype(part.graph.edata["_ID"])
        _, typed_src = book.map_to_per_ntype(gid[part.graph.src])
        _, typed_dst = book.map_to_per_ntype(gid[part.graph.dst])
        for t, name in enumerate(g.etypes):
            sel = tid == t
            src_t, dst_t = name.split(":")[0], name.split(":")[2]
            orig_eid = edge_orig[name][typed_eid[sel]]
            np.testing.assert_array_equal(node_orig[src_t][typed_src[sel]], g.edges[name][0][orig_eid])
            np.testing.assert_array_equal(node_orig[dst_t][typed_dst[sel]], g.edges[name][1][orig_eid])
            for feat, arr in g.edge_feats.get(name, {}).items():
                np.testing.assert_array_equal(part.edge_feats[f"{name}/{feat}"],
                                              arr[edge_orig[name][book.partid2eids(p, name)]])
            seen_edges[name] += int(sel.sum())
    assert seen_edges == {e: len(g.edges[e][0]) for e in g.etypes}
    for name in g.ntypes:  # to_original_order is the inverse permutation of new -> original
        np.testing.assert_array_equal(to_original_order(cfg, np.arange(g.num_nodes[name]), name)[node_orig[name]],
                                      np.arange(g.num_nodes[name]))


def test_to_original_order_inverts_the_shuffle(toy: tuple[ToyGraph, Path]) -> None:
    g, cfg = toy
    name = g.ntypes[-1]
    feat = next(iter(g.node_feats[name]))
    # rows in new per-type ID order = the partitions' feature rows concatenated in partition order
    new_order = np.concatenate([load_partition_feats(cfg, p, load_edges=False)[0][f"{name}/{feat}"]
                                for p in range(g.num_parts)])
    expected = g.node_feats[name][feat]
    np.testing.assert_array_equal(to_original_order(cfg, new_order, name),
                                  expected.astype(np.uint8) if expected.dtype == bool else expected)
    etype = g.etypes[-1]
    new_eorder = np.concatenate([load_orig_ids(cfg, p, "edge")[etype] for p in range(g.num_parts)])
    np.testing.assert_array_equal(to_original_order(cfg, new_eorder, etype, kind="edge"),
                                  np.arange(len(g.edges[etype][0])))


def test_feats_can_be_loaded_separately(toy: tuple[ToyGraph, Path]) -> None:
    _, cfg = toy
    nodes, edges = load_partition_feats(cfg, 0, load_nodes=False)
    assert nodes is None and isinstance(edges, dict)
    assert load_partition(cfg, 0, load_feats=False).node_feats == {}


def test_reader_errors_name_the_file(toy: tuple[ToyGraph, Path]) -> None:
    g, cfg = toy
    with pytest.raises(InputError, match="num_parts.*partition id"):
        load_partition(cfg, g.num_parts)
    (cfg.parent / "part0" / "orig_nids.dgl").unlink()
    with pytest.raises(InputError, match="part0/orig_nids.dgl.*--save-orig-nids"):
        to_original_order(cfg, np.zeros(g.num_nodes[g.ntypes[0]]), g.ntypes[0])
    with pytest.raises(ValueError, match="expected .* rows"):
        to_original_order(cfg, np.zeros(1000), g.ntypes[0])
    (cfg.parent / "part1" / "node_feat.dgl").unlink()
    with pytest.raises(InputError, match="part1/node_feat.dgl"):
        load_partition(cfg, 1)


def test_orig_ids_that_are_not_a_permutation(toy: tuple[ToyGraph, Path]) -> None:
    from graphshard.formats.dgl_binary import load_tensor_dict, save_tensor_dict

    g, cfg = toy
    name = g.ntypes[-1]
    path = cfg.parent / "part0" / "orig_nids.dgl"
    orig = load_tensor_dict(path)
    if len(orig[name]) < 2:
        pytest.skip("partition 0 owns fewer than two nodes of this type")
    orig[name][1] = orig[name][0]
    save_tensor_dict(path, orig)
    with pytest.raises(InputError, match="permutation"):
        to_original_order(cfg, np.zeros(g.num_nodes[name]), name)
