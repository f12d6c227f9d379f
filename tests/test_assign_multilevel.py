"""The `multilevel` assignment method: quality against METIS, every balance constraint, determinism (in-process and
on Dask alike), a worker lost mid-run, heterographs with an edgeless node type, k = 1 and refused options."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.options import BLOCK_MULTIPLE, AssignOptions, multilevel_blocks
from graphshard.errors import GraphshardError
from graphshard.formats.chunked_writer import ChunkedGraphWriter

# small levels and several blocks, so that the small test graphs go through coarsening and cross-block rounds
SMALL = {"multilevel_coarse_nodes": 300, "multilevel_block_edges": 8000}


def run(md: Path, out: Path, k: int, client=None, **opts) -> dict:
    options = AssignOptions(**{"method": "multilevel", **SMALL, **opts})
    assign(md, out, k, options, client=client)
    return json.loads((out / REPORT_FILE).read_text())


def parts_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.txt"))}


@pytest.mark.parametrize("kind,kwargs,coarse", [
    ("rmat", {"nodes": 3000, "edges": 30000, "chunks": 3}, 300),
    ("grid", {"nodes": 10000, "chunks": 3}, 1000),
])
def test_cut_within_1_25x_of_metis(make_graph, tmp_path, kind, kwargs, coarse):
    md = make_graph(kind, **kwargs)
    ml = run(md, tmp_path / "ml", 4, multilevel_coarse_nodes=coarse, multilevel_block_edges=5000)
    assign(md, tmp_path / "metis", 4, AssignOptions(method="metis"))
    metis = json.loads((tmp_path / "metis" / REPORT_FILE).read_text())
    levels = ml["partitioner"]["levels"]
    assert len(levels) >= 3 and levels[0]["blocks"] >= 3, levels  # it did coarsen, over several blocks
    assert all(lv["blocks"] == 1 or lv["blocks"] % BLOCK_MULTIPLE == 0 for lv in levels), levels
    assert ml["partitioner"]["coarsest_by"] in ("kaminpar", "metis")  # the smaller cut of the two at the coarsest
    # the 10k-node grid coarsened 16x: 257 on average over seeds 0-9 vs METIS's 227 (1.13x; a coarsest level of 500
    # nodes, which every LP round of a level takes down to ~130, 32 a part, gave 1.24x; R-MAT here cuts less than
    # METIS); tests/test_multilevel_families.py holds every family to METIS's cut
    assert ml["edge_cut"]["count"] <= 1.25 * metis["edge_cut"]["count"]
    assert ml["imbalance"]["nodes"] <= 1.03


def test_block_counts_fill_2_or_4_threads():
    """One block stays one; more are rounded up to a multiple of 4 (never larger than `block_edges`), a coarse level
    never has more than its finer level."""
    assert [multilevel_blocks(e, 4_000_000) for e in (1, 4_000_000, 4_000_001, 12_000_001, 20_000_000, 100_000_000)] \
        == [1, 1, 4, 4, 8, 28]
    assert multilevel_blocks(9_000_000, 4_000_000, most=3) == 3 and multilevel_blocks(0, 10) == 1


@pytest.mark.parametrize("balance_ntypes,balance_edges", [
    (["ntype", "paper/train_mask"], False),
    ([], True),
    (["paper/train_mask"], True),  # DistDGL's setting: 3 classes, a count and an in-degree column each
])
def test_every_balance_constraint_honoured(make_graph, tmp_path, balance_ntypes, balance_edges):
    md = make_graph("mag", papers=3000, chunks=2)
    report = run(md, tmp_path / "ml", 4, balance_ntypes=balance_ntypes, balance_edges=balance_edges, ufactor=50)
    constraints = {k: v for k, v in report["imbalance"].items() if k != "nodes" or not balance_edges}
    assert len(constraints) == report["partitioner"]["constraints"] + (0 if balance_edges else 1)
    assert max(constraints.values()) <= 1.05, report["imbalance"]


def test_node_types_and_in_degrees_balanced_at_least_as_metis(make_graph, tmp_path):
    """`balance_ntypes: [ntype]` with `balance_edges`: eight columns on MAG (a count and an in-degree column per
    type, as DGL makes them), where METIS leaves every column near 1.22 at k=4; multilevel no worse in any."""
    md = make_graph("mag", papers=3000, chunks=2)
    opts = {"balance_ntypes": ["ntype"], "balance_edges": True, "ufactor": 50}
    metis = run(md, tmp_path / "metis", 4, method="metis", **opts)["imbalance"]
    ml = run(md, tmp_path / "ml", 4, **opts)["imbalance"]
    assert len(ml) == 9 and max(ml.values()) <= max(metis.values()), (ml, metis)


def test_deterministic_in_process_and_on_dask(rmat_small, tmp_path, dask_cluster_client):
    run(rmat_small, tmp_path / "a", 4)
    run(rmat_small, tmp_path / "b", 4)
    run(rmat_small, tmp_path / "c", 4, client=dask_cluster_client)
    first = parts_bytes(tmp_path / "a")
    assert first and first == parts_bytes(tmp_path / "b") == parts_bytes(tmp_path / "c")
    other_seed = run(rmat_small, tmp_path / "d", 4, seed=1)
    assert other_seed["edge_cut"]["count"] > 0 and parts_bytes(tmp_path / "d") != first


def _killer(marker_dir: str) -> WorkerPlugin:
    """Kills its worker once (over the cluster) when a refinement task starts."""

    class KillDuringRefine(WorkerPlugin):
        name = "kill-during-refine"

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and "ml-refine-L0" in str(key):
                try:
                    os.close(os.open(os.path.join(marker_dir, "killed"), os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    return
                os._exit(1)

    return KillDuringRefine()


def test_lost_worker_gives_the_same_assignment(rmat_small, tmp_path):
    run(rmat_small, tmp_path / "ref", 4)
    markers = tmp_path / "markers"
    markers.mkdir()
    with dask.config.set({"distributed.scheduler.allowed-failures": 2}), \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", processes=True) as cluster, \
            Client(cluster) as client:
        client.register_plugin(_killer(str(markers)))
        run(rmat_small, tmp_path / "ml", 4, client=client)
    assert (markers / "killed").exists()
    assert parts_bytes(tmp_path / "ml") == parts_bytes(tmp_path / "ref")


def hetero_with_edgeless_type(folder: Path) -> Path:
    """user -follows-> user edges (R-MAT-like skew) and a node type `tag` without any edge."""
    rng = np.random.default_rng(3)
    with ChunkedGraphWriter(folder, "hetero", ["user", "tag"], ["user:follows:user"]) as writer:
        for _ in range(2):
            src = (rng.pareto(1.5, 4000) * 50).astype(np.int64) % 1500
            writer.add_edges("user:follows:user", src, rng.integers(0, 1500, 4000), "numpy")
        writer.set_node_chunks("user", [750, 750])
        writer.set_node_chunks("tag", [400, 400])
        return writer.finish()


def test_heterograph_with_an_edgeless_type(tmp_path):
    md = hetero_with_edgeless_type(tmp_path / "g")
    report = run(md, tmp_path / "ml", 3, balance_ntypes=["ntype"], multilevel_coarse_nodes=100)
    assert len(report["partitioner"]["levels"]) >= 2
    tags = report["nodes_per_part"]["tag"]
    assert sum(tags) == 800 and max(tags) <= 1.03 * 800 / 3
    assert max(report["imbalance"].values()) <= 1.03
    lines = (tmp_path / "ml" / "tag.txt").read_text().split()
    assert len(lines) == 800 and set(lines) <= {"0", "1", "2"}


def test_one_part(rmat_small, tmp_path):
    report = run(rmat_small, tmp_path / "ml", 1)
    assert report["edge_cut"]["count"] == 0
    assert set((tmp_path / "ml" / "_N.txt").read_text().split()) == {"0"}


def test_refused(make_graph, tmp_path):
    md = make_graph("rmat", nodes=50, edges=200, chunks=1)
    with pytest.raises(GraphshardError, match=r"num_parts: expected an integer in \[1, 50\]"):
        run(md, tmp_path / "a", 51)
    with pytest.raises(GraphshardError, match="exceed the graph's 50 nodes"):
        run(md, tmp_path / "b", 20, num_trainers_per_machine=3)
    with pytest.raises(GraphshardError, match="objtype: method 'multilevel' cannot honour it"):
        run(md, tmp_path / "c", 2, objtype="vol")
    assert not any(tmp_path.iterdir())
