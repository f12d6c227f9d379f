"""Deprecated: graphshard.tasks moved to graphshard.pipeline.steps (this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.steps"], globals())
