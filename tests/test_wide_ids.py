"""Past 2^31: IDs, offsets and counts beyond int32 without a huge graph.

(1) The new-ID arithmetic with type offsets that push homogeneous IDs past 2^31 while the nodes actually handled
are few (only the count matrices are large). (2) The shuffle's narrow/wide switch (`shuffle.plan.NARROW_LIMIT`)
lowered so that a small graph takes the int64 paths (ID map, buckets, local-ID table, out-edge ranks): the
partition files are byte-identical to the int32 run's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphshard import assign as assign_pkg
from graphshard.formats.partition_config import PartitionConfig
from graphshard.shuffle import DispatchOptions, dispatch
from graphshard.shuffle import exchange
from graphshard.shuffle.ids import IdSpace, ids_in_block
from graphshard.shuffle.plan import NARROW_LIMIT, id_dtype_for

BIG = 3_000_000_000  # nodes of the first type: the second type's IDs in partition 1 lie past 2^31


def test_homogeneous_ids_past_2_31_with_few_real_nodes():
    # type 0: three blocks of a billion nodes split over 2 partitions; type 1: one block of 10 nodes
    counts = [np.array([[600_000_000, 400_000_000]] * 3, dtype=np.int64), np.array([[4, 6]], dtype=np.int64)]
    space = IdSpace.of(counts)
    assert space.total == BIG + 10 and id_dtype_for(space.total) is np.int64
    parts = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 0], dtype=np.int32)
    new = ids_in_block(parts, space.block_bases(1)[0])
    assert new.dtype == np.int64
    # partition-major: partition 0 holds 1.8e9 type-0 nodes then type 1's four; partition 1 starts after them
    p0_type1 = 1_800_000_000
    p1_type1 = 1_800_000_000 + 4 + 1_200_000_000
    assert new[parts == 0].tolist() == list(range(p0_type1, p0_type1 + 4))
    assert new[parts == 1].tolist() == list(range(p1_type1, p1_type1 + 6))
    assert new[parts == 1].min() > 2**31 and new.max() > np.iinfo(np.uint32).max // 2 + 1
    assert space.part_of(new).tolist() == parts.tolist() and space.type_of(new).tolist() == [1] * 10
    assert space.ranges(1) == [[p0_type1, p0_type1 + 4], [p1_type1, p1_type1 + 6]]
    third = ids_in_block(np.array([1, 1, 0], np.int32), space.block_bases(0)[2])
    assert third.tolist() == [2_600_000_004, 2_600_000_005, 1_200_000_000]  # bases past 2^31, offsets in int64
    idmap = np.empty(10, dtype=id_dtype_for(space.total))
    idmap[:] = new
    assert np.array_equal(idmap, new)  # an int32 map would wrap these
    config = PartitionConfig.from_counts("g", ["a", "b"], ["a:r:b"], space.group_counts(),
                                         np.array([[BIG], [5]], dtype=np.int64), "random", 1)
    data = json.loads(config.model_dump_json())
    assert data["num_nodes"] == BIG + 10 and data["node_map"]["b"] == space.ranges(1)


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("halo_hops", [1, 2])
def test_forced_wide_paths_write_the_same_partitions(tmp_path, rmat_small, monkeypatch, halo_hops):
    assignment = assign_pkg.assign(rmat_small, tmp_path / "a", 3, assign_pkg.AssignOptions(method="random"))
    options = DispatchOptions(halo_hops=halo_hops, save_orig_nids=True, save_orig_eids=True,
                              graph_formats=["coo", "csc"], node_block_rows=700)
    seen: list[np.dtype] = []
    real = exchange.write_bucket

    def recording(path, arrays):
        if "edges" in path.parts or "out_edges" in path.parts:
            seen.append(arrays[0].dtype)
        real(path, arrays)

    monkeypatch.setattr(exchange, "write_bucket", recording)
    dispatch(rmat_small, assignment, tmp_path / "narrow", options, None)
    assert set(seen) == {np.dtype(np.int32)} and NARROW_LIMIT == 2**31 - 1
    seen.clear()
    monkeypatch.setattr("graphshard.shuffle.plan.NARROW_LIMIT", 16)  # every ID space of this graph is "large"
    dispatch(rmat_small, assignment, tmp_path / "wide", options, None)
    assert set(seen) == {np.dtype(np.int64)}
    narrow, wide = _files(tmp_path / "narrow"), _files(tmp_path / "wide")
    assert narrow.keys() == wide.keys() and len(narrow) > 5
    assert all(narrow[k] == wide[k] for k in narrow)


def test_parmetis_refuses_mpi_counts_and_idx_past_2_31():
    """Alltoallv's counts and displacements are C ints: a rank sending 2^31 keys in all (each message smaller) is
    refused in one line instead of posting negative displacements; a 32-bit idx_t likewise."""
    from graphshard.assign.parmetis import idx_problem, message_problem

    half = 2**30
    assert message_problem(np.array([half, half - 1]), np.array([5, 5])) is None
    assert "displacements past 2^31 - 1" in message_problem(np.array([half, half]), np.array([5, 5]))
    assert "one MPI message receives" in message_problem(np.array([1, 1]), np.array([2**31, 0]))
    assert idx_problem(np.int64, 3_000_000_000, 2**33) is None
    assert "32-bit idx_t" in idx_problem(np.int32, 1000, 2**31)
    assert idx_problem(np.int32, 2**31 - 1, 10) is None
