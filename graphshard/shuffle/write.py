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


def write_partition(part: int, *, plan: ShufflePlan, nodes: IdSpace, edges: IdSpace, out_dir: Path | Location
                    ) -> list[FileDigest]:
    """Build partition `part` and write `part<i>/graph.dgl`, `node_feat.dgl`, `edge_feat.dgl` (+ orig-ID files)
    under `out_dir` (a folder or a URL prefix: the worker writes to the store itself, through the graph's storage);
    returns the files' content digests, taken as they were written."""
    data = build_partition(plan, part, nodes, edges)
    part_dir, storage = location(out_dir).join(f"part{part}"), plan.graph.storage
    written = [save_graph(part_dir.join("graph.dgl"), data.num_nodes, data.src, data.dst, data.ndata, data.edata,
                          formats=plan.options.graph_formats, storage=storage),
               save_tensor_dict(part_dir.join("node_feat.dgl"), data.node_feats, storage),
               save_tensor_dict(part_dir.join("edge_feat.dgl"), data.edge_feats, storage)]
    if plan.options.save_orig_nids:
        written.append(save_tensor_dict(part_dir.join("orig_nids.dgl"), data.orig_nids, storage))
    if plan.options.save_orig_eids:
        written.append(save_tensor_dict(part_dir.join("orig_eids.dgl"), data.orig_eids, storage))
    return written


def write_config(plan: ShufflePlan, nodes: IdSpace, edges: IdSpace, part_method: str, out_dir: Path | Location
                 ) -> Path | Location:
    """Write `<graph_name>.json` with the node/edge ranges (one PUT on a store); the last file of a shuffle."""
    config = PartitionConfig.from_counts(
        plan.graph.graph_name, plan.graph.node_type, plan.graph.edge_type, nodes.group_counts(),
        edges.group_counts(), part_method, plan.options.halo_hops)
    return config.save(location(out_dir).join(f"{plan.graph.graph_name}.json"), plan.graph.storage)
