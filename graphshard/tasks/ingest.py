"""Deprecated: graphshard.tasks.ingest moved to graphshard.pipeline.steps.ingest
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.steps.ingest"], globals())
