"""PartitionBook against a brute-force table built from the ranges, with DGL's meanings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphshard.errors import InputError
from graphshard.formats.partition_book import PartitionBook
from graphshard.formats.partition_config import PartitionConfig

NTYPES = ["author", "paper", "venue"]
ETYPES = ["author:writes:paper", "paper:cites:paper", "paper:in:venue"]
# 4 partitions; zero-width groups on purpose (no author in part 1, no venue in parts 0 and 3, part 2 has no edges).
NODE_COUNTS = np.array([[2, 3, 0], [0, 4, 1], [1, 1, 2], [3, 2, 0]])
EDGE_COUNTS = np.array([[5, 1, 2], [2, 0, 1], [0, 0, 0], [1, 3, 2]])


@pytest.fixture
def book() -> PartitionBook:
    return PartitionBook(PartitionConfig.from_counts("g", NTYPES, ETYPES, NODE_COUNTS, EDGE_COUNTS, "random", 1))


def brute_force(counts: np.ndarray) -> dict[str, np.ndarray]:
    """One row per homogeneous ID, in ID order: partition, type, per-type ID, local ID, per-type local ID."""
    rows = []
    typed_next = np.zeros(counts.shape[1], dtype=np.int64)
    for p in range(counts.shape[0]):
        local = 0
        for t in range(counts.shape[1]):
            for i in range(counts[p, t]):
                rows.append((p, t, typed_next[t], local, i))
                typed_next[t] += 1
                local += 1
    arr = np.array(rows, dtype=np.int64)
    return {"part": arr[:, 0], "type": arr[:, 1], "typed": arr[:, 2], "local": arr[:, 3], "typed_local": arr[:, 4]}


@pytest.mark.parametrize("kind", ["node", "edge"])
def test_book_matches_brute_force(book: PartitionBook, kind: str) -> None:
    counts, names = (NODE_COUNTS, NTYPES) if kind == "node" else (EDGE_COUNTS, ETYPES)
    ref = brute_force(counts)
    homo = np.arange(len(ref["part"]))
    to_part = book.nid2partid if kind == "node" else book.eid2partid
    to_ids = book.partid2nids if kind == "node" else book.partid2eids
    to_local = book.nid2localnid if kind == "node" else book.eid2localeid
    per_type = book.map_to_per_ntype if kind == "node" else book.map_to_per_etype
    to_homo = book.map_to_homo_nid if kind == "node" else book.map_to_homo_eid

    np.testing.assert_array_equal(to_part(homo), ref["part"])
    tid, typed = per_type(homo)
    np.testing.assert_array_equal(tid, ref["type"])
    np.testing.assert_array_equal(typed, ref["typed"])
    for t, name in enumerate(names):
        mine = ref["type"] == t
        np.testing.assert_array_equal(to_homo(ref["typed"][mine], name), homo[mine])
        np.testing.assert_array_equal(to_part(ref["typed"][mine], name), ref["part"][mine])
    for p in range(counts.shape[0]):
        in_p = ref["part"] == p
        np.testing.assert_array_equal(to_ids(p), homo[in_p])
        np.testing.assert_array_equal(to_local(homo[in_p], p), ref["local"][in_p])
        for t, name in enumerate(names):
            sel = in_p & (ref["type"] == t)
            np.testing.assert_array_equal(to_ids(p, name), ref["typed"][sel])
            np.testing.assert_array_equal(to_local(ref["typed"][sel], p, name), ref["typed_local"][sel])


def test_metadata_and_counts(book: PartitionBook) -> None:
    assert book.num_partitions() == 4
    assert book.metadata() == [{"machine_id": p, "num_nodes": int(NODE_COUNTS[p].sum()),
                                "num_edges": int(EDGE_COUNTS[p].sum())} for p in range(4)]
    assert book.ntypes == NTYPES and book.etypes == ETYPES


def test_canonical_tuple_etype_is_accepted(book: PartitionBook) -> None:
    np.testing.assert_array_equal(book.map_to_homo_eid([0, 1], ("paper", "cites", "paper")),
                                  book.map_to_homo_eid([0, 1], "paper:cites:paper"))


def test_bad_lookups(book: PartitionBook) -> None:
    with pytest.raises(ValueError, match="out of range"):
        book.nid2partid([book.config.num_nodes])
    with pytest.raises(ValueError, match="not owned by partition 0"):
        book.nid2localnid([5], 0)
    with pytest.raises(KeyError, match="unknown type 'topic'"):
        book.map_to_homo_nid([0], "topic")


def test_shifted_boundary_is_refused(tmp_path: Path, book: PartitionBook) -> None:
    data = book.config.to_json_dict()
    data["node_map"]["paper"][1] = [6, 9]  # should start at 5
    (tmp_path / "g.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"g.json: field 'node_map\['paper'\]\[1\]': expected start 5.*found 6"):
        PartitionBook.load(tmp_path / "g.json")


def test_wrong_total_is_refused(tmp_path: Path, book: PartitionBook) -> None:
    data = book.config.to_json_dict()
    data["num_edges"] += 1
    (tmp_path / "g.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="edge_map.*covering 0..18"):
        PartitionBook.load(tmp_path / "g.json")
