"""Deprecated: graphshard.dasktasks moved to graphshard.daskrun (this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.daskrun"], globals())
