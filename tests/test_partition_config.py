"""The partition config JSON: building from counts, deterministic save, load, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphshard.errors import InputError
from graphshard.formats.partition_config import PartitionConfig

NTYPES = ["author", "paper"]
ETYPES = ["author:writes:paper", "paper:cites:paper"]
# (num_parts=3, num_types): partition 1 has no authors.
NODE_COUNTS = np.array([[2, 3], [0, 4], [1, 1]])
EDGE_COUNTS = np.array([[5, 1], [2, 0], [0, 3]])


def hetero_config() -> PartitionConfig:
    return PartitionConfig.from_counts("toy", NTYPES, ETYPES, NODE_COUNTS, EDGE_COUNTS, "random", 1)


def test_ranges_are_partition_major_then_type() -> None:
    cfg = hetero_config()
    assert cfg.node_map == {"author": [(0, 2), (5, 5), (9, 10)], "paper": [(2, 5), (5, 9), (10, 11)]}
    assert cfg.edge_map == {"author:writes:paper": [(0, 5), (6, 8), (8, 8)],
                            "paper:cites:paper": [(5, 6), (8, 8), (8, 11)]}
    assert (cfg.num_nodes, cfg.num_edges, cfg.num_parts) == (11, 11, 3)
    assert cfg.node_ranges().shape == (2, 3, 2)
    assert cfg.part_paths("/o", 2)["part_graph"] == Path("/o/part2/graph.dgl")


def test_save_is_dgl_layout_and_deterministic(tmp_path: Path) -> None:
    cfg = hetero_config()
    a, b = cfg.save(tmp_path / "a.json"), hetero_config().save(tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()
    data = json.loads(a.read_text())
    assert list(data) == ["graph_name", "num_nodes", "num_edges", "part_method", "num_parts", "halo_hops",
                          "node_map", "edge_map", "ntypes", "etypes", "part-0", "part-1", "part-2"]
    assert data["part-1"] == {"node_feats": "part1/node_feat.dgl", "edge_feats": "part1/edge_feat.dgl",
                              "part_graph": "part1/graph.dgl"}
    assert data["node_map"]["author"] == [[0, 2], [5, 5], [9, 10]]
    assert PartitionConfig.load(a) == cfg


def test_load_accepts_extra_keys_dgl_may_write(tmp_path: Path) -> None:
    data = hetero_config().to_json_dict()
    data["num_trainers"] = 1
    (tmp_path / "c.json").write_text(json.dumps(data))
    assert PartitionConfig.load(tmp_path / "c.json").graph_name == "toy"


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.pop("part-2"), "num_parts"),
    (lambda d: d["node_map"]["paper"].pop(), "paper"),
    (lambda d: d.pop("halo_hops"), "halo_hops"),
    (lambda d: d["part-1"].pop("part_graph"), "part-1.part_graph"),
    (lambda d: (d["etypes"].update({"paper:cites:venue": 2}),
                d["edge_map"].update({"paper:cites:venue": [[0, 0]] * 3})),
     "edge type 'paper:cites:venue'"),
    (lambda d: d["etypes"].update({"paper:cites:venue": 2}), "edge_map: keys"),
    (lambda d: d["node_map"]["author"].__setitem__(0, [3, 1]), "start > end"),
])
def test_bad_config_names_file_and_field(tmp_path: Path, edit, field: str) -> None:
    data = hetero_config().to_json_dict()
    edit(data)
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="bad.json") as err:
        PartitionConfig.load(tmp_path / "bad.json")
    assert field in str(err.value)


def test_unreadable_config(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(InputError, match="x.json.*valid JSON"):
        PartitionConfig.load(tmp_path / "x.json")
    with pytest.raises(InputError, match="missing.json"):
        PartitionConfig.load(tmp_path / "missing.json")
