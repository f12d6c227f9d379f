"""ParMETIS over MPI (PT-Scotch's ParMETIS interface by default) on 2 and 4 ranks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from graphshard.assign import REPORT_FILE, TRAINER_DIR, assign
from graphshard.assign.options import AssignOptions
from graphshard.errors import GraphshardError
from graphshard.formats.assignment import read_parts
from graphshard.formats.chunked import load_metadata

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun is absent")]


def run(meta: Path, out: Path, k: int, **opts) -> dict:
    assign(meta, out, k, AssignOptions(method="parmetis", **opts))
    return json.loads((out / REPORT_FILE).read_text())


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("graph", ["rmat_small", "mag_small"])
def test_parmetis_valid_deterministic_and_cut_reported(graph, ranks, request, tmp_path):
    meta = request.getfixturevalue(graph)
    g = load_metadata(meta)
    report = run(meta, tmp_path / "a", 4, mpi_ranks=ranks, seed=3)
    run(meta, tmp_path / "b", 4, mpi_ranks=ranks, seed=3)
    parts = {}
    for nt in g.node_type:
        assert (tmp_path / "a" / f"{nt}.txt").read_bytes() == (tmp_path / "b" / f"{nt}.txt").read_bytes()
        parts[nt] = read_parts(tmp_path / "a", nt, g.num_nodes(nt), 4)
    hom = np.concatenate([parts[nt] for nt in g.node_type])
    assert len(np.unique(hom)) == 4
    assert report["partitioner"]["ranks"] == ranks and report["partitioner"]["idx_bits"] == 64
    assert len(report["partitioner"]["rank_peak_rss_bytes"]) == ranks
    cut = report["edge_cut"]
    assert 0 < cut["count"] and cut["fraction"] < 0.7  # a real partition, far better than random's 75%
    assert report["imbalance"]["nodes"] <= 1.1


def test_parmetis_one_part_trainers_and_small_type(mag_small, tmp_path):
    one = run(mag_small, tmp_path / "one", 1, mpi_ranks=2)
    assert one["edge_cut"]["count"] == 0
    report = run(mag_small, tmp_path / "t", 8, mpi_ranks=2, num_trainers_per_machine=2)
    g = load_metadata(mag_small)
    assert g.num_nodes("institution") < 16
    for nt in g.node_type:
        trainers = read_parts(tmp_path / "t" / TRAINER_DIR, nt, g.num_nodes(nt), 16)
        np.testing.assert_array_equal(trainers // 2, read_parts(tmp_path / "t", nt, g.num_nodes(nt), 8))
    assert report["trainers"]["trainers_per_machine"] == 2


def test_parmetis_balance_edges_is_one_constraint(rmat_small, tmp_path):
    report = run(rmat_small, tmp_path / "a", 4, mpi_ranks=2, balance_edges=True)
    assert report["partitioner"]["constraints"] == 1
    assert set(report["imbalance"]) == {"nodes", "in_degree"}


def test_pt_scotch_refuses_several_constraints(mag_small, tmp_path):
    with pytest.raises(GraphshardError, match="balances one constraint only"):
        run(mag_small, tmp_path / "a", 4, mpi_ranks=2, balance_ntypes=["ntype"])
    assert not (tmp_path / "a").exists()
    assert list(tmp_path.iterdir()) == []


def test_parmetis_reads_a_graph_on_a_store(rmat_small, s3_env, tmp_path):
    """The ranks took the metadata URL as a path (`s3:/...` under the working folder) after the whole ingest; they
    read it from the store, with the environment's credentials, and give the local graph's assignment."""
    from graphshard.storage import Storage, location

    bucket = s3_env.new_bucket()
    for path in sorted(p for p in rmat_small.parent.rglob("*") if p.is_file()):
        Storage().upload(path, location(f"{bucket}/g").join(path.relative_to(rmat_small.parent).as_posix()))
    run(f"{bucket}/g/metadata.json", tmp_path / "remote", 4, mpi_ranks=2, seed=1)
    run(rmat_small, tmp_path / "local", 4, mpi_ranks=2, seed=1)
    assert (tmp_path / "remote" / "_N.txt").read_bytes() == (tmp_path / "local" / "_N.txt").read_bytes()
