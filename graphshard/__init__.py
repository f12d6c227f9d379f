"""graphshard: partition chunked graphs into DistDGL-loadable partitions."""

__version__ = "0.1.1"

_LAZY = {"partition_graph": "graphshard.inmemory", "chunk_graph": "graphshard.inmemory"}


def __getattr__(name: str):
    """`graphshard.partition_graph` / `graphshard.chunk_graph`, imported on first use: `import graphshard` stays
    cheap."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'graphshard' has no attribute {name!r}")


__all__ = ["__version__", "partition_graph", "chunk_graph"]
