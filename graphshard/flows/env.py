"""Deprecated: graphshard.flows.env moved to graphshard.pipeline.prefect_env
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.prefect_env"], globals())
