"""The pipeline's and `graphshard dispatch`'s GraphBolt output (`output.graphbolt: true`, `--graphbolt`), read by
DGL 2.1's GraphBolt loaders.

Run inside the DGL venv: `bash bench/dgl_compat.sh test`. The conversion is part of the shuffle step (its cache key
holds the GraphBolt choices), so validation checks and publish swaps in the converted set.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("DGLBACKEND", "pytorch")
os.environ["DGL_DIST_DEBUG"] = "1"
dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
pytest.importorskip("prefect")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (flow helpers)

from flow_helpers import dask_address, run, write_config  # noqa: E402,F401

pytestmark = pytest.mark.dgl


def test_pipeline_graphbolt_output_loads_in_dgl(tmp_path: Path, make_graph, dask_address) -> None:
    metadata = make_graph("mag", papers=300, chunks=2)
    config = write_config(tmp_path, metadata, dask_address, num_parts=3,
                          output={"dir": str(tmp_path / "out"), "graphbolt": True, "store_eids": True,
                                  "store_inner_node": True})
    summary = run(config)
    assert summary["steps"]["shuffle"] == "Completed" and summary["steps"]["validate"] == "Completed", summary
    part_config = tmp_path / "out" / "mag.json"
    meta = json.loads(part_config.read_text())
    assert meta["node_map_dtype"] == meta["edge_map_dtype"] == "int64"
    for p in range(3):
        assert meta[f"part-{p}"]["part_graph_graphbolt"] == f"part{p}/fused_csc_sampling_graph.pt"
        g, nfeat, _, gpb, *_ = dgl.distributed.load_partition(str(part_config), p, use_graphbolt=True)
        assert isinstance(g, dgl.graphbolt.FusedCSCSamplingGraph)
        assert set(g.node_attributes) >= {"_ID", "inner_node"} and "_ID" in g.edge_attributes
        assert g.type_per_edge is not None and g.edge_type_to_id == {e: i for e, i in meta["etypes"].items()}
        assert nfeat and gpb.num_partitions() == 3
    assert run(config)["steps"]["shuffle"] == "Cached"
    rerun = run(config, overrides=["output.graphbolt=false", "output.store_eids=false",
                                   "output.store_inner_node=false"])
    assert rerun["steps"]["shuffle"] == "Completed"  # another set: the choices are in the step's key
    assert not list((tmp_path / "out").rglob("fused_csc_sampling_graph.pt"))


def test_dispatch_cli_graphbolt_loads_in_dgl(tmp_path: Path, make_graph) -> None:
    from graphshard.assign import assign
    from graphshard.assign.options import AssignOptions
    from graphshard.cli import main

    metadata = make_graph("rmat", nodes=800, edges=6000, chunks=2)
    assignment = assign(metadata, tmp_path / "asg", 2, AssignOptions(method="random"))
    assert main(["dispatch", "--in", str(metadata), "--partitions", str(assignment), "--out", str(tmp_path / "out"),
                 "--workers", "1", "--graphbolt", "--store-inner-edge"]) == 0
    part_config = next(p for p in (tmp_path / "out").glob("*.json") if not p.name.endswith(".digests.json"))
    for p in range(2):
        g, *_ = dgl.distributed.load_partition(str(part_config), p, use_graphbolt=True)
        assert isinstance(g, dgl.graphbolt.FusedCSCSamplingGraph)
        assert "inner_edge" in g.edge_attributes  # (debug mode keeps every other field too)
