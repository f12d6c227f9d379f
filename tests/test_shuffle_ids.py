"""The new-ID arithmetic of graphshard.shuffle.ids against a direct definition (a stable sort of the whole graph)."""

from __future__ import annotations

import numpy as np
import pytest

from graphshard.shuffle.ids import Grouping, IdSpace, block_offsets, ids_in_block


def test_grouping_is_stable_and_ranks():
    keys = np.array([2, 0, 2, 1, 0, 2], dtype=np.int32)
    g = Grouping.of(keys, 4)
    assert g.order.tolist() == [1, 4, 3, 0, 2, 5]
    assert g.counts.tolist() == [2, 1, 3, 0]
    assert g.ranks().tolist() == [0, 0, 1, 0, 1, 2]
    assert [c.tolist() for c in g.cut(keys[g.order])] == [[0, 0], [1], [2, 2, 2], []]
    assert g.keys_sorted().tolist() == [0, 0, 1, 2, 2, 2]


@pytest.mark.parametrize("num_parts,block_rows", [(1, 7), (3, 5), (5, 1000), (40000, 50)])
def test_block_ids_equal_a_global_stable_sort(num_parts, block_rows):
    """Two node types cut into blocks give the same IDs as sorting all nodes by (partition, type, original ID)."""
    rng = np.random.default_rng(num_parts)
    parts = [rng.integers(0, min(num_parts, 4), n).astype(np.int32) for n in (97, 0)] + \
            [np.full(13, num_parts - 1, np.int32)]
    blocks = [block_offsets(len(p), block_rows) for p in parts]
    space = IdSpace.of([np.stack([np.bincount(p[lo:hi], minlength=num_parts) for lo, hi in zip(b[:-1], b[1:])])
                        for p, b in zip(parts, blocks)])
    got = [np.concatenate([ids_in_block(p[lo:hi], space.block_bases(t)[i])
                           for i, (lo, hi) in enumerate(zip(b[:-1], b[1:]))])
           for t, (p, b) in enumerate(zip(parts, blocks))]
    keys = np.concatenate([p.astype(np.int64) * len(parts) + t for t, p in enumerate(parts)])
    want = np.empty(len(keys), np.int64)
    want[np.argsort(keys, kind="stable")] = np.arange(len(keys))
    assert np.array_equal(np.concatenate(got), want)
    all_new = np.concatenate(got)
    all_types = np.concatenate([np.full(len(p), t) for t, p in enumerate(parts)])
    all_parts = np.concatenate(parts)
    assert np.array_equal(space.type_of(all_new), all_types)  # zero-width groups are skipped
    assert np.array_equal(space.part_of(all_new), all_parts)  # so are empty partitions
    for t, p in enumerate(parts):
        for q, (lo, hi) in enumerate(space.ranges(t)):
            assert hi - lo == np.sum(p == q)
