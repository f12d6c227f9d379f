"""graphshard.partition_graph as a drop-in for dgl.distributed.partition_graph, checked by DGL 2.1 itself.

Run inside the DGL venv (`bash bench/dgl_compat.sh test`). DGL_DIST_DEBUG=1 makes `load_partition` run DGL's own
partition checks. The returned mappings are checked the same way for DGL's call and graphshard's: every inner node's
and inner edge's feature row, as DGL's `load_partition` returns it, is the caller's row at the mapped original ID.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("DGLBACKEND", "pytorch")
os.environ["DGL_DIST_DEBUG"] = "1"
dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
pytest.importorskip("distributed")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (api_checks)

from api_checks import check_mapping  # noqa: E402

import graphshard  # noqa: E402

pytestmark = pytest.mark.dgl

SCRIPT = textwrap.dedent("""
    # A user's partition script; the test swaps only the import line. No __main__ guard, as in many such scripts.
    import sys
    import numpy as np, torch, dgl
    from dgl.distributed import partition_graph
    out, method = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    n, m = 2000, 16000
    g = dgl.graph((torch.from_numpy(rng.integers(0, n, m)), torch.from_numpy(rng.integers(0, n, m))), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(rng.random((n, 8), dtype=np.float32))
    g.ndata["label"] = torch.from_numpy(rng.integers(0, 10, n))
    g.ndata["train_mask"] = torch.from_numpy(rng.random(n) < 0.2)
    g.edata["w"] = torch.from_numpy(rng.random(m, dtype=np.float32))
    orig_nids, orig_eids = partition_graph(g, "test-graph", 2, out, num_hops=1, part_method=method,
                                           balance_ntypes=g.ndata["train_mask"], balance_edges=True,
                                           return_mapping=True)
    torch.save({"orig_nids": orig_nids, "orig_eids": orig_eids, "g": g}, out + "/../mapping.pt")
""")


def _per_type(g, mapping, key_of):
    """DGL's mapping as {type: numpy} (a homogeneous graph's tensors keyed by its one type)."""
    if isinstance(mapping, dict):
        return {k: v.numpy() for k, v in mapping.items()}
    return {key_of(g): mapping.numpy()}


def check_with_dgl(config: Path, g, orig_nids, orig_eids) -> None:
    """DGL loads every partition; its features are the caller's rows at the mapped IDs; graphshard's reader agrees."""
    nids = _per_type(g, orig_nids, lambda g: g.ntypes[0])
    eids = _per_type(g, orig_eids, lambda g: g.canonical_etypes[0])
    num_parts = 0
    while (config.parent / f"part{num_parts}").is_dir():
        num_parts += 1
    for p in range(num_parts):
        _, nfeat, efeat, gpb, _, ntypes, etypes = dgl.distributed.load_partition(str(config), p)
        for nt in g.ntypes:
            rows = nids[nt][gpb.partid2nids(p, nt).numpy()]
            for name, tensor in g.nodes[nt].data.items():
                np.testing.assert_array_equal(nfeat[f"{nt}/{name}"].numpy(), tensor.numpy()[rows])
        for can in g.canonical_etypes:
            rows = eids[can][gpb.partid2eids(p, can).numpy()]
            for name, tensor in g.edges[can].data.items():
                np.testing.assert_array_equal(efeat[f"{':'.join(can)}/{name}"].numpy(), tensor.numpy()[rows])
    edges = {can: tuple(t.numpy() for t in g.edges(etype=can, order="eid")) for can in g.canonical_etypes}
    check_mapping(config, {nt: g.num_nodes(nt) for nt in g.ntypes}, edges, {}, {}, nids, eids)


@pytest.mark.parametrize("method", ["random", "metis"])
def test_script_switched_to_graphshard(tmp_path: Path, method: str) -> None:
    runs = {}
    for who, line in (("dgl", "from dgl.distributed import partition_graph"),
                      ("graphshard", "from graphshard import partition_graph")):
        (tmp_path / who).mkdir()
        script = tmp_path / who / "partition.py"
        script.write_text(SCRIPT.replace("from dgl.distributed import partition_graph", line))
        result = subprocess.run([sys.executable, str(script), str(tmp_path / who / "out"), method],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        runs[who] = torch.load(tmp_path / who / "mapping.pt")
        assert isinstance(runs[who]["orig_nids"], torch.Tensor) and runs[who]["orig_nids"].dtype == torch.int64
        assert isinstance(runs[who]["orig_eids"], torch.Tensor) and runs[who]["orig_eids"].dtype == torch.int64
        check_with_dgl(tmp_path / who / "out" / "test-graph.json", runs[who]["g"], runs[who]["orig_nids"],
                       runs[who]["orig_eids"])
    names = {who: sorted(p.name for p in (tmp_path / who / "out").iterdir()) for who in runs}
    assert names["dgl"] == ["part0", "part1", "test-graph.json"]  # graphshard adds its set digests file
    assert names["graphshard"] == ["part0", "part1", "test-graph.digests.json", "test-graph.json"]
    for who in runs:  # the same feature names in the same places
        _, nfeat, efeat, *_ = dgl.distributed.load_partition(str(tmp_path / who / "out" / "test-graph.json"), 0)
        runs[who] = (sorted(nfeat), sorted(efeat))
    assert runs["graphshard"] == runs["dgl"]


def _heterograph(seed: int = 0):
    """paper/author/field with a reverse relation (duplicate pairs) and features on several node and edge types."""
    rng = np.random.default_rng(seed)
    n = {"paper": 600, "author": 300, "field": 20}
    t = lambda a: torch.from_numpy(a)  # noqa: E731
    writes_src, writes_dst = rng.integers(0, 300, 2000), rng.integers(0, 600, 2000)
    g = dgl.heterograph({
        ("author", "writes", "paper"): (t(writes_src), t(writes_dst)),
        ("paper", "written-by", "author"): (t(writes_dst.copy()), t(writes_src.copy())),
        ("paper", "cites", "paper"): (t(rng.integers(0, 600, 3000)), t(rng.integers(0, 600, 3000))),
        ("paper", "has_topic", "field"): (t(rng.integers(0, 600, 700)), t(rng.integers(0, 20, 700))),
    }, num_nodes_dict=n)
    g.nodes["paper"].data["feat"] = t(rng.random((600, 6), dtype=np.float32))
    g.nodes["paper"].data["train_mask"] = t(rng.random(600) < 0.3)
    g.nodes["author"].data["h"] = t(rng.integers(0, 50, (300, 2)))
    g.nodes["author"].data["img"] = t(rng.random((300, 2, 3), dtype=np.float32))  # rows that are matrices
    g.edges["cites"].data["year"] = t(rng.integers(1990, 2024, 3000))
    g.edges["writes"].data["order"] = t(rng.integers(0, 5, 2000).astype(np.int32))
    return g


def test_heterograph_mapping_matches_dgl_conventions(tmp_path: Path) -> None:
    g = _heterograph()
    theirs = dgl.distributed.partition_graph(g, "mag-like", 3, str(tmp_path / "dgl"), part_method="random",
                                             return_mapping=True)
    ours = graphshard.partition_graph(g, "mag-like", 3, tmp_path / "gs", part_method="metis",
                                      balance_ntypes={"paper": g.nodes["paper"].data["train_mask"]},
                                      return_mapping=True, validate=True)
    for mine, dgls in zip(ours, theirs):  # dicts keyed by node type / canonical edge type, int64 torch tensors
        assert list(mine) == list(dgls)
        assert all(isinstance(v, torch.Tensor) and v.dtype == torch.int64 for v in mine.values())
    check_with_dgl(tmp_path / "dgl" / "mag-like.json", g, *theirs)
    check_with_dgl(tmp_path / "gs" / "mag-like.json", g, *ours)
    assert (tmp_path / "gs" / "report.html").exists()


def test_subgraph_id_fields_are_not_features_as_in_dgl(tmp_path: Path) -> None:
    """A subgraph's dgl.NID/dgl.EID data (`_ID`) become no partition feature, as in DGL: the same feature names."""
    sub = dgl.node_subgraph(_heterograph(), {"paper": torch.arange(0, 600, 2), "author": torch.arange(300),
                                             "field": torch.arange(20)})
    names = {}
    for who, fn in (("dgl", dgl.distributed.partition_graph), ("gs", graphshard.partition_graph)):
        fn(sub, "sub", 2, str(tmp_path / who), part_method="random")
        nfeat, efeat = dgl.distributed.load_partition_feats(str(tmp_path / who / "sub.json"), 0)
        names[who] = (sorted(nfeat), sorted(efeat))
    assert names["gs"] == names["dgl"] and not any("_ID" in n for n in names["gs"][0] + names["gs"][1])


def test_csc_only_graph_is_partitioned(tmp_path: Path) -> None:
    """A graph restricted to CSC (DGL's partition_graph refuses it) is read in edge ID order and maps back."""
    g = _heterograph(1)
    mapping = graphshard.partition_graph(g.formats("csc"), "csc", 2, tmp_path / "gs", part_method="random",
                                         return_mapping=True)
    check_with_dgl(tmp_path / "gs" / "csc.json", g, *mapping)


def test_pyg_graphs_partition_and_what_they_lack_is_one_line(tmp_path: Path) -> None:
    """A PyG HeteroData partitions and DGL loads it; a node type known only from an edge type, a node store PyG
    cannot count, and a Data after T.ToSparseTensor (adj_t, no edge_index) are each one line naming what to set."""
    pyg = pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data, HeteroData

    from graphshard.errors import GraphshardError

    torch.manual_seed(0)
    writes = torch.stack([torch.randint(0, 300, (900,)), torch.randint(0, 600, (900,))])
    h = HeteroData()
    h["paper"].x = torch.randn(600, 4)
    h["author"].num_nodes = 300
    h["author", "writes", "paper"].edge_index = writes
    orig_nids, _ = graphshard.partition_graph(h, "pyg", 2, tmp_path / "out", part_method="random",
                                              return_mapping=True)
    _, nfeat, _, gpb, _, _, _ = dgl.distributed.load_partition(str(tmp_path / "out" / "pyg.json"), 0)
    rows = orig_nids["paper"].numpy()[gpb.partid2nids(0, "paper").numpy()]
    np.testing.assert_array_equal(nfeat["paper/x"].numpy(), h["paper"].x.numpy()[rows])

    no_store = HeteroData()
    no_store["paper"].x = torch.randn(600, 4)
    no_store["author", "writes", "paper"].edge_index = writes
    uncounted = HeteroData()
    uncounted["paper"].x = torch.randn(600, 4)
    uncounted["author"].label = torch.randint(0, 3, (300,))
    uncounted["author", "writes", "paper"].edge_index = writes
    sparse = pyg.transforms.ToSparseTensor()(Data(x=torch.randn(50, 3), edge_index=torch.randint(0, 50, (2, 200))))
    for graph, expected in [(no_store, "data['author']: node type of an edge type, expected its node count, found "
                                       "no node store; set data['author'].num_nodes"),
                            (uncounted, "data['author'].num_nodes: expected a node count, found None"),
                            (sparse, "data.edge_index: expected the edges as edge_index, found adj_t")]:
        with pytest.raises(GraphshardError) as err:
            graphshard.partition_graph(graph, "pyg", 2, tmp_path / "bad", part_method="random")
        assert expected in str(err.value) and "\n" not in str(err.value), err.value
        assert not (tmp_path / "bad").exists()


def test_a_dict_of_torch_tensors_gets_its_mapping_as_torch_tensors(tmp_path: Path) -> None:
    """The mapping comes back in the input's library, for a dict of tensors as for a DGLGraph."""
    edges = {("user", "buys", "item"): (torch.randint(0, 30, (100,)), torch.randint(0, 20, (100,)))}
    nids, eids = graphshard.partition_graph(edges, "shop", 2, tmp_path / "out", part_method="random",
                                            num_nodes={"user": 30, "item": 20}, return_mapping=True)
    assert all(isinstance(t, torch.Tensor) for t in [*nids.values(), *eids.values()]), (nids, eids)
