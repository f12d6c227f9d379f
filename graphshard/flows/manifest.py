"""Deprecated: graphshard.flows.manifest moved to graphshard.pipeline.manifest
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.manifest"], globals())
