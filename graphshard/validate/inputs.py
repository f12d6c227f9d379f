"""Deprecated: graphshard.validate.inputs moved to graphshard.validate.against_input
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.validate.against_input"], globals())
