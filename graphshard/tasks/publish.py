"""Deprecated: graphshard.tasks.publish moved to graphshard.pipeline.steps.publish
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.steps.publish"], globals())
