"""Writing a partition's files and the partition config (DGL's binary formats, reference §3-4)."""

from __future__ import annotations

from pathlib import Path

from graphshard.digests import FileDigest
from graphshard.formats.dgl_binary import save_graph, save_tensor_dict
from graphshard.formats.partition_config import PartitionConfig
from graphshard.shuffle.ids import IdSpace
from graphshard.shuffle.partition_build import build_partition
from graphshard.shuffle.plan import ShufflePlan


def write_partition(part: int, *, plan: ShufflePlan, nodes: IdSpace, edges: IdSpace, out_dir: Path
                    ) -> list[FileDigest]:
    """Build partition `part` and write `part<i>/graph.dgl`, `node_feat.dgl`, `edge_feat.dgl` (+ orig-ID files);
    returns the files' content digests, taken as they were written."""
    data = build_partition(plan, part, nodes, edges)
    part_dir = Path(out_dir) / f"part{part}"
    part_dir.mkdir(parents=True, exist_ok=True)
    written = [save_graph(part_dir / "graph.dgl", data.num_nodes, data.src, data.dst, data.ndata, data.edata,
                          formats=plan.options.graph_formats),
               save_tensor_dict(part_dir / "node_feat.dgl", data.node_feats),
               save_tensor_dict(part_dir / "edge_feat.dgl", data.edge_feats)]
    if plan.options.save_orig_nids:
        written.append(save_tensor_dict(part_dir / "orig_nids.dgl", data.orig_nids))
    if plan.options.save_orig_eids:
        written.append(save_tensor_dict(part_dir / "orig_eids.dgl", data.orig_eids))
    return written


def write_config(plan: ShufflePlan, nodes: IdSpace, edges: IdSpace, part_method: str, out_dir: Path) -> Path:
    """Write `<graph_name>.json` with the node/edge ranges; the last file of a shuffle."""
    config = PartitionConfig.from_counts(
        plan.graph.graph_name, plan.graph.node_type, plan.graph.edge_type, nodes.group_counts(),
        edges.group_counts(), part_method, plan.options.halo_hops)
    return config.save(Path(out_dir) / f"{plan.graph.graph_name}.json")
