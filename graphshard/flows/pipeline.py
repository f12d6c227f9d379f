"""Deprecated: graphshard.flows.pipeline moved to graphshard.pipeline.flow (this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.pipeline.flow"], globals())

from graphshard.pipeline.flow import partition, run_pipeline  # noqa: E402,F401 - graphshard/flows/pipeline.py:partition
