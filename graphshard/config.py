"""Deprecated: graphshard.config moved to graphshard.pipeline.config + graphshard.pipeline.preflight
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.config", "graphshard.pipeline.preflight"], globals())
