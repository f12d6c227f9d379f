"""Deprecated: graphshard.validate.scan moved to graphshard.validate.per_partition
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.validate.per_partition"], globals())
