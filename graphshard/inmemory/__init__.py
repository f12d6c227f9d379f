"""In-memory graphs (DGL, PyG, scipy, dicts) into graphshard: `partition_graph` (DGL's drop-in) and `chunk_graph`."""

from graphshard.inmemory.chunks import chunk_graph
from graphshard.inmemory.partition import part_methods, partition_graph

__all__ = ["chunk_graph", "partition_graph", "part_methods"]
