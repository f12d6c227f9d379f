"""Writing a partition's files and the partition config (DGL's binary formats, reference §3-4)."""

from __future__ import annotations

from pathlib import Path

from graphshard.digests import FileDigest
from graphshard.formats.dgl_binary import save_graph, save_tensor_dict
from graphshard.formats.partition_config import PartitionConfig
from graphshard.shuffle.ids import IdSpace
from graphshard.shuffle.partition_build import build_partition
from graphshard.shuffle.plan import ShufflePlan
from graphshard.storage import Location, location
from graphshard.storage.overlap import each

FILES_AT_ONCE = 2  # a partition's files written at the same time to a store


def write_partition(part: int, *, plan: ShufflePlan, nodes: IdSpace, edges: IdSpace, out_dir: Path | Location
                    ) -> list[FileDigest]:
    """Build partition `part` and write `part<i>/graph.dgl`, `node_feat.dgl`, `edge_feat.dgl` (+ orig-ID files)
    under `out_dir` (a folder or a URL prefix: the worker writes to the store itself, through the graph's storage);
    returns the files' content digests, taken as they were written.

    On a store, graph.dgl and the other files are written at the same time (`FILES_AT_ONCE`): while the store
    assembles one file's uploaded parts (S3 completing a multipart upload of a 230 MB object took 1.4 s on the local
    server), the next file's parts go up. The parts in flight stay bounded per process (`storage.uploads`)."""
    data = build_partition(plan, part, nodes, edges)
    part_dir, storage = location(out_dir).join(f"part{part}"), plan.graph.storage
    files = [lambda: save_graph(part_dir.join("graph.dgl"), data.num_nodes, data.src, data.dst, data.ndata,
                                data.edata, formats=plan.options.graph_formats, storage=storage)]
    tables = [("node_feat", data.node_feats), ("edge_feat", data.edge_feats)]
    tables += [("orig_nids", data.orig_nids)] if plan.options.save_orig_nids else []
    tables += [("orig_eids", data.orig_eids)] if plan.options.save_orig_eids else []
    files += [lambda name=name, tensors=tensors: save_tensor_dict(part_dir.join(f"{name}.dgl"), tensors, storage)
              for name, tensors in tables]
    return each(lambda write: write(), files, not part_dir.is_local, FILES_AT_ONCE)


def write_config(plan: ShufflePlan, nodes: IdSpace, edges: IdSpace, part_method: str, out_dir: Path | Location
                 ) -> Path | Location:
    """Write `<graph_name>.json` with the node/edge ranges (one PUT on a store); the last file of a shuffle."""
    config = PartitionConfig.from_counts(
        plan.graph.graph_name, plan.graph.node_type, plan.graph.edge_type, nodes.group_counts(),
        edges.group_counts(), part_method, plan.options.halo_hops)
    return config.save(location(out_dir).join(f"{plan.graph.graph_name}.json"), plan.graph.storage)
