"""Deprecated: graphshard.flows.progress moved to graphshard.pipeline.progress
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.progress"], globals())
