"""Deprecated: graphshard.validate.lazy moved to graphshard.formats.dgl_columns + graphshard.validate.piecewise
(this thin module goes in graphshard 0.2)."""

from graphshard._deprecated import moved_module

moved_module(__name__, ["graphshard.formats.dgl_columns", "graphshard.validate.piecewise"], globals(),
             {"index_graph": "graphshard.formats.dgl_columns:graph_columns",
              "index_tensor_dict": "graphshard.formats.dgl_columns:tensor_dict_columns"})
