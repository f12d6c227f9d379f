"""Deprecated: graphshard.flows.ondemand moved to graphshard.pipeline.ondemand
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.ondemand"], globals())
