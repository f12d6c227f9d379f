"""Deprecated: graphshard.fsutil moved to graphshard.atomic + graphshard.formats.jsonfile
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.atomic", "graphshard.formats.jsonfile"], globals(),
             {'publish': 'graphshard.atomic:move_into_place'})
