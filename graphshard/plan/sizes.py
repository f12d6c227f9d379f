"""What a plan needs to know about the input graph, from metadata.json and the chunk files' headers only.

Counts come from the metadata; the bytes of a feature row (shape x dtype) from the first file's header
(`formats.readers`' header functions: npy header, parquet footer, csv first block), file sizes from `stat`. Nothing
reads the data, so a plan of a 100B-edge graph costs what the precheck costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from graphshard.errors import GraphshardError
from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec
from graphshard.formats.readers import reader_for
from graphshard.precheck import HEADER_READS, feature_specs
from graphshard.storage.overlap import each


@dataclass(frozen=True)
class GraphSizes:
    """The input graph in numbers: nodes and edges, the largest chunk, feature bytes per node/edge, input bytes."""

    nodes: int
    edges: int
    node_types: int
    edge_types: int
    nodes_per_type: tuple[int, ...]
    edge_chunks: int
    largest_chunk: int  # edges of the largest edge chunk
    node_feat_bytes: float  # feature bytes per node (all node features, averaged over the types' node counts)
    edge_feat_bytes: float  # feature bytes per edge
    features: int  # node and edge features (one shuffle task indexes each)
    feature_files: int
    largest_file: int  # bytes of the largest input file (what one ingest task reads)
    input_bytes: int
    edge_feature_files: int = 0  # of feature_files (validation checks them against the input with edge IDs only)

    @classmethod
    def of(cls, graph: ChunkedGraph) -> "GraphSizes":
        edge_files = [(graph.edges[et], c) for et in graph.edge_type for c in range(len(graph.edges[et].data))]
        feats = [spec for _, spec, _ in feature_specs(graph)]
        node_specs = [(s, graph.num_nodes(t)) for t, fs in graph.node_data.items() for s in fs.values()]
        edge_specs = [(s, graph.num_edges(t)) for t, fs in graph.edge_data.items() for s in fs.values()]
        row_bytes = each(lambda s: _row_bytes(graph, s[0]), node_specs + edge_specs, not graph.base.is_local,
                         HEADER_READS)  # on a store all headers at once: a round trip each
        weighted = [b * n for b, (_, n) in zip(row_bytes, node_specs + edge_specs)]
        node_bytes, edge_bytes = sum(weighted[:len(node_specs)]), sum(weighted[len(node_specs):])
        sizes = [_size(graph, spec, c) for spec, c in edge_files]
        sizes += [_size(graph, spec, c) for spec in feats for c in range(len(spec.data))]
        chunks = [n for per_type in graph.num_edges_per_chunk for n in per_type]
        return cls(
            nodes=graph.total_nodes, edges=graph.total_edges, node_types=len(graph.node_type),
            edge_types=len(graph.edge_type), nodes_per_type=tuple(graph.num_nodes(nt) for nt in graph.node_type),
            edge_chunks=len(chunks), largest_chunk=max(chunks, default=0),
            node_feat_bytes=node_bytes / max(graph.total_nodes, 1),
            edge_feat_bytes=edge_bytes / max(graph.total_edges, 1), features=len(feats),
            feature_files=sum(len(spec.data) for spec in feats), largest_file=max(sizes, default=0),
            input_bytes=sum(sizes), edge_feature_files=sum(len(spec.data) for f, spec, _ in feature_specs(graph)
                                                           if f.startswith("edge_data")))

    @classmethod
    def synthetic(cls, nodes: int, edges: int, chunk_edges: int, node_feat_bytes: float = 0.0,
                  edge_feat_bytes: float = 0.0) -> "GraphSizes":
        """A one-type graph of the given size (numpy int64 chunks): the plan of a graph that does not exist yet."""
        chunks = max(1, math.ceil(edges / chunk_edges))
        largest = max(16 * min(chunk_edges, edges), int(node_feat_bytes * nodes / chunks))  # features chunked alike
        return cls(nodes, edges, 1, 1, (nodes,), chunks, min(chunk_edges, edges), node_feat_bytes, edge_feat_bytes,
                   0, 0, largest, int(16 * edges + node_feat_bytes * nodes + edge_feat_bytes * edges))


def _row_bytes(graph: ChunkedGraph, spec: ChunkFileSpec) -> int:
    """Bytes of one row of a feature (its first file's header: row shape x dtype size)."""
    if not spec.data:
        return 0
    head = reader_for(spec.format).header(graph.file(spec.data[0]), spec.format)
    return math.prod(head.row_shape) * head.dtype.itemsize


def _size(graph: ChunkedGraph, spec: ChunkFileSpec, chunk: int) -> int:
    """A chunk file's size (an object's: one HEAD request); 0 when missing (the checks report that)."""
    try:
        return graph.file(spec.data[chunk]).size()
    except (OSError, GraphshardError):
        return 0
