"""Deprecated: graphshard.flows.server moved to graphshard.pipeline.prefect_server
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.prefect_server"], globals())
