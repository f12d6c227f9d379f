"""Deprecated: graphshard.validate.cross moved to graphshard.validate.across_partitions
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.validate.across_partitions"], globals())
