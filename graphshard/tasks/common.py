"""Deprecated: graphshard.tasks.common moved to graphshard.pipeline.steps.common
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.steps.common"], globals())
