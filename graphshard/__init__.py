"""graphshard: partition chunked graphs into DistDGL-loadable partitions."""

__version__ = "0.1.0"
