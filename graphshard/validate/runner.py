"""Deprecated: graphshard.validate.runner moved to graphshard.validate.step
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.validate.step"], globals())
