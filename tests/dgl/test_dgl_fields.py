"""graphshard.partition_graph writes what DGL 2.1's partition_graph writes: every file, field, dtype and shape.

The same graph is partitioned by DGL and by graphshard, then every partition file is described the same way (names,
dtypes, shapes with their row count named: `N`/`E` = the partition's nodes/edges, `inner:<type>` = its inner nodes
or edges of that type) and the descriptions must be equal; with one partition the shapes are compared as numbers.
graphshard's one extra file, the set's digests file `<graph>.digests.json` (DGL's loaders ignore it), must list
every partition file.
Also: GraphBolt output (`use_graphbolt=True` and its keyword arguments) loaded by DGL's GraphBolt loaders, and the
options DGL's own tests do not cover (trainers per machine, balance_ntypes, balance_edges, objtype='vol').
Run inside the DGL venv: `bash bench/dgl_compat.sh test`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("DGLBACKEND", "pytorch")
os.environ["DGL_DIST_DEBUG"] = "1"
dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
pytest.importorskip("distributed")

import graphshard  # noqa: E402
from graphshard.errors import GraphshardError  # noqa: E402
from graphshard.formats.set_digests import digests_name  # noqa: E402

pytestmark = pytest.mark.dgl
GB_FILE = "fused_csc_sampling_graph.pt"


@pytest.fixture(scope="module")
def client():
    from graphshard.cluster import ClusterSpec, dask_client

    with dask_client(ClusterSpec(subprocess=True)) as c:
        yield c


def _homo(seed: int = 0):
    rng = np.random.default_rng(seed)
    n, m = 600, 5000
    g = dgl.graph((torch.from_numpy(rng.integers(0, n, m)), torch.from_numpy(rng.integers(0, n, m))), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(rng.random((n, 5), dtype=np.float32))
    g.ndata["label"] = torch.from_numpy(rng.integers(0, 7, n))
    g.ndata["train_mask"] = torch.from_numpy(rng.random(n) < 0.3)
    g.edata["w"] = torch.from_numpy(rng.random(m, dtype=np.float32))
    return g


def _hetero(seed: int = 0):
    rng = np.random.default_rng(seed)
    t = lambda a: torch.from_numpy(a)  # noqa: E731
    g = dgl.heterograph({
        ("author", "writes", "paper"): (t(rng.integers(0, 200, 1500)), t(rng.integers(0, 400, 1500))),
        ("paper", "cites", "paper"): (t(rng.integers(0, 400, 2500)), t(rng.integers(0, 400, 2500))),
        ("paper", "has_topic", "field"): (t(rng.integers(0, 400, 500)), t(rng.integers(0, 15, 500))),
    }, num_nodes_dict={"paper": 400, "author": 200, "field": 15})
    g.nodes["paper"].data["feat"] = t(rng.random((400, 4), dtype=np.float32))
    g.nodes["paper"].data["train_mask"] = t(rng.random(400) < 0.3)
    g.nodes["author"].data["h"] = t(rng.integers(0, 9, (200, 2)).astype(np.int32))
    g.edges["cites"].data["year"] = t(rng.integers(1990, 2024, 2500))
    return g


GRAPHS = {"homo": _homo, "hetero": _hetero}


def _shape(shape: tuple, rows: dict[str, int]) -> tuple:
    """The shape with its row count named when it equals one of `rows` (first match)."""
    if not shape:
        return shape
    name = next((k for k, v in rows.items() if v == shape[0]), shape[0])
    return (name, *shape[1:])


def _fields(tensors: dict, rows: dict[str, int], exact: bool) -> dict:
    return {k: (str(v.dtype), tuple(v.shape) if exact else _shape(tuple(v.shape), rows)) for k, v in tensors.items()}


def _inner_rows(gpb, part: int) -> dict[str, int]:
    rows = {f"inner:{nt}": len(gpb.partid2nids(part, nt)) for nt in gpb.ntypes}
    rows.update({f"inner:{':'.join(et)}": len(gpb.partid2eids(part, et)) for et in gpb.canonical_etypes})
    return rows


def _graphbolt(path: Path, rows: dict, exact: bool) -> dict:
    """GraphBolt's sampling graph: its arrays' dtypes and shapes, its attributes and type maps."""
    g = torch.load(path)
    arrays = {"csc_indptr": g.csc_indptr, "indices": g.indices}
    if g.type_per_edge is not None:
        arrays["type_per_edge"] = g.type_per_edge
    return {"arrays": _fields(arrays, {"N+1": rows["N"] + 1, **rows}, exact),
            "node_attributes": _fields(g.node_attributes or {}, rows, exact),
            "edge_attributes": _fields(g.edge_attributes or {}, rows, exact),
            "node_type_offset": g.node_type_offset is not None,
            "node_type_to_id": g.node_type_to_id, "edge_type_to_id": g.edge_type_to_id}


def describe(config: Path) -> dict:
    """Every partition file of a set as names, dtypes and shapes, and the config's keys and value types."""
    cfg = json.loads(config.read_text())
    out = {"files": sorted(str(p.relative_to(config.parent)) for p in config.parent.rglob("*")
                           if p.is_file() and p.name != digests_name(config.name)),
           "config": {k: type(v).__name__ for k, v in cfg.items()},
           "parts": {k: sorted(v) for k, v in cfg.items() if k.startswith("part-")},
           "types": (cfg["ntypes"], cfg["etypes"], sorted(cfg["node_map"]), sorted(cfg["edge_map"]))}
    exact = cfg["num_parts"] == 1
    for p in range(cfg["num_parts"]):
        g, nfeat, efeat, gpb, *_ = dgl.distributed.load_partition(str(config), p)
        rows = {"N": g.num_nodes(), "E": g.num_edges(), **_inner_rows(gpb, p)}
        out[f"part{p}"] = {"ndata": _fields(g.ndata, rows, exact), "edata": _fields(g.edata, rows, exact),
                           "formats": sorted(g.formats()["created"]),
                           "node_feat.dgl": _fields(nfeat, rows, exact), "edge_feat.dgl": _fields(efeat, rows, exact)}
        if "part_graph_graphbolt" in cfg[f"part-{p}"]:
            out[f"part{p}"][GB_FILE] = _graphbolt(config.parent / cfg[f"part-{p}"]["part_graph_graphbolt"], rows, exact)
    return out


def _mapping(mapping) -> object:
    """The returned (orig_nids, orig_eids) as types, dtypes and shapes."""
    def one(x):
        if isinstance(x, dict):
            return {k: one(v) for k, v in x.items()}
        return (type(x).__name__, str(x.dtype), tuple(x.shape))
    return [one(x) for x in mapping]


def both(tmp_path: Path, client, kind: str, num_parts: int, **kwargs) -> tuple[dict, dict, tuple, tuple]:
    """Partition the same graph with DGL and with graphshard; (DGL's description, ours, DGL's mapping, ours)."""
    described, mappings = [], []
    for who, fn in (("dgl", dgl.distributed.partition_graph), ("gs", graphshard.partition_graph)):
        extra = {"client": client} if who == "gs" else {}
        mapping = fn(GRAPHS[kind](), "g", num_parts, str(tmp_path / who), return_mapping=True, **kwargs, **extra)
        described.append(describe(tmp_path / who / "g.json"))
        mappings.append(mapping)
    # graphshard's one addition: the digests file (DGL's loaders ignore it) lists every partition file, GraphBolt's too
    listed = json.loads((tmp_path / "gs" / digests_name("g.json")).read_text())["files"]
    assert sorted(listed) == [f for f in described[1]["files"] if f.startswith("part")]
    return described[0], described[1], mappings[0], mappings[1]


@pytest.mark.parametrize("kind, num_parts, method, formats", [
    ("homo", 1, "metis", None), ("homo", 3, "metis", None), ("homo", 2, "random", ["csc", "coo"]),
    ("hetero", 1, "random", None), ("hetero", 3, "metis", None), ("hetero", 2, "random", ["csr"]),
])
def test_every_field_as_dgl_writes_it(tmp_path: Path, client, kind: str, num_parts: int, method: str,
                                      formats) -> None:
    theirs, ours, their_map, our_map = both(tmp_path, client, kind, num_parts, part_method=method,
                                            graph_formats=formats)
    assert ours == theirs
    assert _mapping(our_map) == _mapping(their_map)


@pytest.mark.parametrize("kind, num_parts, method", [("homo", 3, "metis"), ("hetero", 2, "random"),
                                                     ("homo", 1, "random"), ("hetero", 1, "metis")])
@pytest.mark.parametrize("store", [False, True])
def test_graphbolt_as_dgl_writes_it(tmp_path: Path, client, kind: str, num_parts: int, method: str,
                                    store: bool) -> None:
    kwargs = {"store_eids": store, "store_inner_node": store, "store_inner_edge": store}
    theirs, ours, *_ = both(tmp_path, client, kind, num_parts, part_method=method, use_graphbolt=True, **kwargs)
    assert ours == theirs
    assert all(GB_FILE in ours[f"part{p}"] for p in range(num_parts))
    config = str(tmp_path / "gs" / "g.json")
    for p in range(num_parts):  # DGL 2.1's GraphBolt loader (debug mode: its own partition checks)
        g, *_ = dgl.distributed.load_partition(config, p, use_graphbolt=True)
        assert isinstance(g, dgl.graphbolt.FusedCSCSamplingGraph)
        local, *_ = dgl.distributed.load_partition(config, p, load_feats=False)
        assert (g.total_num_nodes, g.total_num_edges) == (local.num_nodes(), local.num_edges())


def test_graphbolt_set_samples_in_dgl(tmp_path: Path, client) -> None:
    """A GraphBolt set partitions and samples: DGL's loader, then GraphBolt's neighbour sampler on a partition."""
    g = _homo()
    graphshard.partition_graph(g, "g", 2, tmp_path / "gs", use_graphbolt=True, store_eids=True, client=client,
                               validate=True)  # graphshard's checks pass on the converted set
    assert json.loads((tmp_path / "gs" / "report.json").read_text())["ok"]
    part, *_ = dgl.distributed.load_partition(str(tmp_path / "gs" / "g.json"), 1, use_graphbolt=True)
    seeds = torch.arange(min(32, part.total_num_nodes), dtype=part.indices.dtype)
    sub = part.sample_neighbors(seeds, torch.LongTensor([4]))
    fanout = torch.diff(sub.sampled_csc.indptr)
    assert len(fanout) == len(seeds) and int(fanout.max()) <= 4 and int(fanout.sum()) > 0
    assert "_ID" in part.edge_attributes  # store_eids


def _check_trainer_ids(config: Path, trainers: int) -> None:
    """DGL's meaning of `trainer_id`: a node's trainer is on its partition's machine (trainer // trainers == part),
    every trainer has nodes, and an edge's trainer is its destination's."""
    cfg = json.loads(config.read_text())
    node_trainer = np.full(cfg["num_nodes"], -1)
    edge_trainer, edge_dst = np.full(cfg["num_edges"], -1), np.full(cfg["num_edges"], -1)
    for p in range(cfg["num_parts"]):
        g, nfeat, efeat, *_ = dgl.distributed.load_partition(str(config), p)
        for nt, ranges in cfg["node_map"].items():  # a type's inner nodes are its range, rows in that order
            tid = nfeat[f"{nt}/trainer_id"].numpy()
            assert tid.dtype == np.int64 and np.all(tid // trainers == p), f"part {p} {nt}: trainer off its machine"
            node_trainer[slice(*ranges[p])] = tid
        for et, ranges in cfg["edge_map"].items():
            edge_trainer[slice(*ranges[p])] = efeat[f"{et}/trainer_id"].numpy()
        inner = g.edata["inner_edge"].bool()
        edge_dst[g.edata["_ID"][inner].numpy()] = g.ndata["_ID"][g.edges()[1][inner]].numpy()
    assert np.all(node_trainer >= 0) and np.all(edge_dst >= 0)
    assert set(node_trainer.tolist()) == set(range(cfg["num_parts"] * trainers))
    np.testing.assert_array_equal(edge_trainer, node_trainer[edge_dst])


@pytest.mark.parametrize("kind", ["homo", "hetero"])
@pytest.mark.parametrize("options", [
    {"num_trainers_per_machine": 2},
    {"balance_edges": True, "objtype": "vol"},
    {"balance_ntypes": "train_mask", "balance_edges": True, "num_trainers_per_machine": 3},
])
def test_options_dgl_tests_lack(tmp_path: Path, client, kind: str, options: dict) -> None:
    options = dict(options)
    if options.get("balance_ntypes") == "train_mask":
        g = GRAPHS[kind]()
        options["balance_ntypes"] = g.ndata["train_mask"] if kind == "homo" else \
            {"paper": g.nodes["paper"].data["train_mask"].long()}
    theirs, ours, their_map, our_map = both(tmp_path, client, kind, 2, part_method="metis", **options)
    assert ours == theirs
    assert _mapping(our_map) == _mapping(their_map)
    trainers = options.get("num_trainers_per_machine", 1)
    if trainers > 1:
        for who in ("dgl", "gs"):
            _check_trainer_ids(tmp_path / who / "g.json", trainers)


@pytest.mark.parametrize("kind", ["homo", "hetero"])
def test_one_partition_splits_among_trainers_whatever_the_method(tmp_path: Path, client, kind: str) -> None:
    """With one partition DGL splits the graph among the trainers with METIS even for part_method='random'."""
    theirs, ours, their_map, our_map = both(tmp_path, client, kind, 1, part_method="random",
                                            num_trainers_per_machine=2)
    assert ours == theirs
    assert _mapping(our_map) == _mapping(their_map)
    for who in ("dgl", "gs"):
        _check_trainer_ids(tmp_path / who / "g.json", 2)


def test_keyword_arguments_dgl_takes(tmp_path: Path, client) -> None:
    """DGL passes **kwargs to its GraphBolt converter: graphshard names one it does not take, in one line."""
    with pytest.raises(GraphshardError, match="unexpected keyword argument 'store_everything'"):
        graphshard.partition_graph(_homo(), "g", 2, tmp_path / "gs", use_graphbolt=True, store_everything=True,
                                   client=client)
    assert not (tmp_path / "gs").exists()
    with pytest.warns(UserWarning, match="store_eids: used only with use_graphbolt=True"):
        graphshard.partition_graph(_homo(), "g", 2, tmp_path / "gs", store_eids=True, client=client)
    assert not list((tmp_path / "gs").rglob(GB_FILE))
